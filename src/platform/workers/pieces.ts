import { MessageChannel, type MessagePort, type Transferable } from 'node:worker_threads';
import type { WorkerPool } from './pool.js';

/**
 * Bytes a task produces, handed over in pieces as it goes rather than as one value at its end
 * (docs/decisions/0030-large-sources-composed-into-blobs.md): the task writes to a MessagePort,
 * every piece moved (not copied) and exactly `pieceBytes` long but the last, and it runs at most
 * PIECES_WINDOW pieces ahead of the caller, who asks for the next only when it has dealt with the
 * last. So neither thread holds more than a window of the bytes, besides what the caller itself
 * keeps of them, however many the task writes.
 */

/** Pieces a task may have sent that the caller has not yet dealt with (asked for the next after). */
export const PIECES_WINDOW = 4;

/** What a piece task gets besides its own input. */
export interface PiecesChannel {
  readonly port: MessagePort;
  readonly pieceBytes: number;
}

/** A piece, or the end of them. */
type PieceMessage = { piece: Uint8Array } | { end: true };

/** The caller stopped taking pieces (it failed, or needed no more): the task ends without finishing. */
export class PiecesAbandonedError extends Error {
  override name = 'PiecesAbandonedError';
}

/**
 * Runs `task` on `pool` with `input` and a channel (`input.pieces`), and yields what the task
 * sends on it. The task starts when the first piece is asked for; `transfer` (ArrayBuffers of
 * `input`) are moved to it then, not copied. Leaving the loop early (break, or an error of the caller) closes the channel, and
 * the task stops at its next piece. An error of the task, or of its thread, is thrown from the loop.
 *
 * The pool's threads are busy while the caller takes the pieces: whatever the caller awaits between
 * two pieces must never need a task of the same pool, or both wait for each other. For the same
 * reason a caller either runs the loop to its end or leaves it (`break`, `return()`); one that
 * stops asking without leaving holds the thread.
 */
export async function* piecesOf(
  pool: WorkerPool,
  task: string,
  input: object,
  pieceBytes: number,
  transfer: readonly Transferable[] = [],
): AsyncGenerator<Buffer, void, undefined> {
  const { port1, port2 } = new MessageChannel();
  const arrived: PieceMessage[] = [];
  let failure: { error: unknown } | undefined;
  let wake: (() => void) | undefined;
  const poke = () => {
    wake?.();
    wake = undefined;
  };
  port1.on('message', (message: PieceMessage) => {
    arrived.push(message);
    poke();
  });
  const done = pool.run<number>(task, { ...input, pieces: { port: port2, pieceBytes } }, [port2, ...transfer]).then(
    () => poke(),
    (error: unknown) => {
      failure = { error };
      poke();
    },
  );
  try {
    for (;;) {
      const message = arrived.shift();
      if (message === undefined) {
        if (failure) throw failure.error;
        await new Promise<void>((resolve) => (wake = resolve));
        continue;
      }
      if ('end' in message) break;
      const { piece } = message;
      yield Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
      // Taken: the task may send one more.
      port1.postMessage(1);
    }
    await done;
    if (failure) throw failure.error;
  } finally {
    port1.close();
  }
}

/**
 * The task's side of `piecesOf`: sends the bytes of `source` in pieces of `channel.pieceBytes`
 * (the last may be shorter), at most PIECES_WINDOW ahead of the caller, and then the end. Returns
 * how many bytes it sent. Throws PiecesAbandonedError when the caller closes the channel first.
 */
export async function sendPieces(channel: PiecesChannel, source: AsyncIterable<Buffer | Uint8Array>): Promise<number> {
  const { port, pieceBytes } = channel;
  let credit = PIECES_WINDOW;
  let closed = false;
  let wake: (() => void) | undefined;
  const poke = () => {
    wake?.();
    wake = undefined;
  };
  port.on('message', () => {
    credit++;
    poke();
  });
  port.on('close', () => {
    closed = true;
    poke();
  });
  let piece = Buffer.allocUnsafeSlow(pieceBytes);
  let filled = 0;
  let total = 0;
  const send = async (length: number) => {
    while (credit === 0 && !closed) await new Promise<void>((resolve) => (wake = resolve));
    if (closed) throw new PiecesAbandonedError('the caller stopped taking pieces');
    credit--;
    // A piece of its own ArrayBuffer (never the shared pool's), so that moving it moves nothing else.
    const own = length === piece.length ? piece : Buffer.allocUnsafeSlow(length);
    if (own !== piece) piece.copy(own, 0, 0, length);
    port.postMessage({ piece: own } satisfies PieceMessage, [own.buffer as ArrayBuffer]);
    total += length;
  };
  // The caller closes the channel when it has the end: closing it here could drop the end on its way.
  for await (const chunk of source) {
    for (let at = 0; at < chunk.length;) {
      const n = Math.min(chunk.length - at, pieceBytes - filled);
      piece.set(chunk.subarray(at, at + n), filled);
      filled += n;
      at += n;
      if (filled === pieceBytes) {
        await send(filled);
        piece = Buffer.allocUnsafeSlow(pieceBytes);
        filled = 0;
      }
    }
    if (closed) throw new PiecesAbandonedError('the caller stopped taking pieces');
  }
  if (filled) await send(filled);
  port.postMessage({ end: true } satisfies PieceMessage);
  return total;
}
