/**
 * A shutdown's steps, run one after another. A step that is still running after `warnAfterMs` is
 * named (once), so a shutdown that hangs says what it waits for instead of saying nothing.
 */
export async function closeInOrder(
  steps: readonly (readonly [name: string, close: () => unknown])[],
  slow: (step: string, waitedMs: number) => void,
  warnAfterMs = 5_000,
): Promise<void> {
  for (const [name, close] of steps) {
    const timer = setTimeout(() => slow(name, warnAfterMs), warnAfterMs);
    timer.unref();
    try {
      await close();
    } finally {
      clearTimeout(timer);
    }
  }
}
