import { insertCompiledOnce, runCompiledOnce } from '../../platform/db/compiled-once.js';
import { nextTurn } from '../../platform/turns.js';
import type { Db } from '../database.js';

/**
 * Large stored bytes in pieces (migration 0012, docs/decisions/0023-big-sends-in-pieces.md): a
 * message's source or an attachment's bytes of CHUNK_BYTES or more are stored as rows of at most
 * CHUNK_BYTES in `message_chunks`, one statement per piece with a turn of the event loop before
 * each, instead of in one value that SQLite writes (and pg serializes) in one synchronous step.
 * `messages.raw` is then NULL and `attachments.content` empty.
 */
export const CHUNK_BYTES = 256 * 1024;

/** The `part` of a message's source; an attachment's pieces carry its attachment id. */
export const SOURCE_PART = 'source';

/** Whether `bytes` are stored in pieces rather than in their own column. */
export const storedInPieces = (bytes: Buffer): boolean => bytes.length >= CHUNK_BYTES;

/** Pieces read per statement (and per turn of the event loop). */
const PIECES_PER_READ = 4;

/** Stores `bytes` as the pieces of `part` of message `messagePk` (inside the caller's unit of work). */
export async function insertPieces(trx: Db, messagePk: number, part: string, bytes: Buffer): Promise<void> {
  for (let seq = 0; seq * CHUNK_BYTES < bytes.length; seq++) {
    await nextTurn();
    const row = { message_pk: messagePk, part, seq, bytes: bytes.subarray(seq * CHUNK_BYTES, (seq + 1) * CHUNK_BYTES) };
    await insertCompiledOnce(trx, 'message_chunks.insert', [row], () => trx.insertInto('message_chunks').values(row));
  }
}

/** The bytes of `part` of message `messagePk` put together from its pieces, or undefined when it has none. */
export async function readPieces(db: Db, messagePk: number, part: string): Promise<Buffer | undefined> {
  const pieces: Buffer[] = [];
  for (let from = 0; ; from += PIECES_PER_READ) {
    if (from) await nextTurn();
    const rows = await runCompiledOnce(db, 'message_chunks.read', [messagePk, part, from, PIECES_PER_READ], () =>
      db.selectFrom('message_chunks').select('bytes').where('message_pk', '=', messagePk).where('part', '=', part).where('seq', '>=', from).orderBy('seq').limit(PIECES_PER_READ),
    );
    for (const r of rows) pieces.push(r.bytes);
    if (rows.length < PIECES_PER_READ) break;
  }
  return pieces.length ? Buffer.concat(pieces) : undefined;
}
