/**
 * Resolves on a later turn of the event loop, after the I/O callbacks waiting now (setImmediate):
 * long work awaits it between steps so that other requests are answered meanwhile.
 */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
