import { sql } from 'kysely';
import type { Clock } from '../../platform/clock.js';
import { insertCompiledOnce, runCompiledOnce } from '../../platform/db/compiled-once.js';
import type { GroupCommit } from '../../platform/db/group-commit.js';
import { dialectOf } from '../../platform/db/dialect.js';
import type { Dialect } from '../../platform/db/types.js';
import { nextTurn } from '../../platform/turns.js';
import type { Db, InboxDatabase } from '../schema/database.js';

/**
 * Large stored bytes (docs/decisions/0027-large-bytes-stored-once-ahead-of-the-delivery.md): a
 * message's source, an attachment's bytes or a text or HTML body (decision 0053) of CHUNK_BYTES or
 * more are a blob, stored as rows of at most CHUNK_BYTES in `blob_chunks`, which every copy of the
 * message names (`messages.source_blob`, `attachments.content_blob`, `messages.text_blob`,
 * `messages.html_blob`) instead of holding the bytes (`messages.raw` NULL, `attachments.content`
 * empty, the body column NULL). A blob is written before the delivery's
 * unit of work, in small transactions of its own (`storeBlob`), so that no commit, and no fsync,
 * carries megabytes. The delivery claims it; one that no copy claims is released after the
 * delivery (`releaseBlobs`), and `createBlobSweeper` removes what a crash left unclaimed and what
 * deletes left unreferenced.
 */
export const CHUNK_BYTES = 256 * 1024;

/** Whether `bytes` are stored as a blob rather than in their own column. */
export const storedAsBlob = (bytes: Buffer): boolean => bytes.length >= CHUNK_BYTES;

/**
 * Whether a text or HTML body is stored as a blob (its UTF-8 of CHUNK_BYTES or more) rather than
 * in each copy's row: a copy's row then holds no body, and no delivery's commit writes megabytes
 * of bodies, once per copy (docs/decisions/0053-large-bodies-stored-once.md). Measured only when
 * the length allows it: a UTF-16 unit is at most three bytes of UTF-8.
 */
export const bodyStoredAsBlob = (body: string | null | undefined): body is string =>
  body != null && body.length * 3 >= CHUNK_BYTES && Buffer.byteLength(body) >= CHUNK_BYTES;

/** A blob's state: written and not yet named by a copy, named by copies, or being deleted. */
export const BLOB_UNCLAIMED = 0;
export const BLOB_CLAIMED = 1;
export const BLOB_DOOMED = -1;

/**
 * Pieces written per transaction, and so per commit: on SQLite one (256 KiB), on PostgreSQL four
 * (1 MiB). SQLite's COMMIT writes the unit's pages to the WAL on the event loop, synchronously:
 * with four pieces a unit held every other request for 15–110 ms on a busy machine, about four
 * times what one piece costs. PostgreSQL's commit runs in its server (the event loop only sends
 * each piece, one statement each either way), and each commit waits for its WAL's flush: fewer
 * and larger units there (docs/decisions/0050-big-sends-in-short-steps.md).
 */
const piecesPerWrite = (dialect: Dialect): number => (dialect === 'sqlite' ? 1 : 4);
/** Pieces read per statement (and per turn of the event loop). */
const PIECES_PER_READ = 4;
/** Pieces deleted per transaction. */
const PIECES_PER_DELETE = 16;
/** Blobs a sweep takes on at most (it runs again a minute later). */
const SWEEP_BATCH = 50;

/**
 * How long a blob nobody claimed is kept: longer than any delivery takes between writing it and
 * its commit, so that only a process that died in between leaves one this old.
 */
export const UNCLAIMED_GRACE_MS = 60 * 60 * 1000;

/** The blobs of one message's large bytes, written ahead of its delivery (null: in its column). */
export interface MessageBlobs {
  readonly source: number | null;
  /** By the position of the attachment in the message. */
  readonly attachments: readonly (number | null)[];
  /** The large text and HTML bodies (`bodyStoredAsBlob`); absent or null: in the copies' rows. */
  readonly text?: number | null;
  readonly html?: number | null;
}

/** Ids of the blobs in `blobs`. */
export const blobIdsOf = (blobs: MessageBlobs | undefined): number[] =>
  blobs
    ? [blobs.source, ...blobs.attachments, blobs.text ?? null, blobs.html ?? null].filter(
        (id): id is number => id !== null,
      )
    : [];

/**
 * Where `storeBlobPieces` put bytes: a new unclaimed blob of `size` bytes, or (bytes read from pieces
 * that came to fewer than CHUNK_BYTES) nowhere: they go into their own column.
 */
export type StoredBytes =
  | { readonly blob: number; readonly size: number }
  | { readonly blob: null; readonly bytes: Buffer; readonly size: number };

/** Writes `bytes` (at least CHUNK_BYTES: `storedAsBlob`) as a new unclaimed blob (`storeBlobPieces`); returns its id. */
export async function storeBlob(commits: GroupCommit<InboxDatabase>, clock: Clock, bytes: Buffer): Promise<number> {
  const stored = await storeBlobPieces(commits, clock, slices(bytes));
  if (stored.blob === null) throw new Error('storeBlob: fewer bytes than a blob holds');
  return stored.blob;
}

/**
 * Writes the bytes of `source` as a new unclaimed blob: `piecesPerWrite` pieces per unit of work
 * of `commits`, a turn of the event loop apart. `source` yields the pieces as they are made (or
 * sliced from whole bytes), each CHUNK_BYTES long but the last. Pieces are taken between units,
 * never inside one, and a unit is written only once the piece after it is known, so that the last
 * unit also records the size. Pieces that end before CHUNK_BYTES are returned as bytes, and
 * nothing is written.
 */
export async function storeBlobPieces(
  commits: GroupCommit<InboxDatabase>,
  clock: Clock,
  source: AsyncIterable<Buffer>,
): Promise<StoredBytes> {
  const created = clock.now().toISOString();
  const pieces = source[Symbol.asyncIterator]();
  let id: number | undefined;
  let size = 0;
  try {
    let next = await pieces.next();
    if (next.done) throw new Error('storeBlob: no bytes');
    if (next.value.length < CHUNK_BYTES) {
      const bytes = next.value;
      if (!(await pieces.next()).done) throw new Error('storeBlob: a piece shorter than CHUNK_BYTES before the last');
      return { blob: null, bytes, size: bytes.length };
    }
    // The first unit holds one piece; it learns the dialect, which sizes the units after it.
    let perWrite = 1;
    for (let seq = 0; !next.done;) {
      const unit: Buffer[] = [];
      while (!next.done && unit.length < perWrite) {
        const short = next.value.length < CHUNK_BYTES;
        unit.push(next.value);
        size += next.value.length;
        next = await pieces.next();
        if (short && !next.done) throw new Error('storeBlob: a piece shorter than CHUNK_BYTES before the last');
      }
      const last = next.done === true;
      await nextTurn();
      const first = seq;
      let dialect: Dialect | undefined;
      id = await commits.run(async (trx) => {
        dialect = dialectOf(trx);
        const row = { state: BLOB_UNCLAIMED, size: last ? size : 0, created_at: created };
        const blob =
          id ??
          Number(
            (
              await insertCompiledOnce(trx, 'blobs.insert', [row], () =>
                trx.insertInto('blobs').values(row).returning('id'),
              )
            )[0]?.id,
          );
        for (const [i, bytes] of unit.entries()) {
          const piece = { blob_id: blob, seq: first + i, bytes };
          await insertCompiledOnce(trx, 'blob_chunks.insert', [piece], () =>
            trx.insertInto('blob_chunks').values(piece),
          );
        }
        if (last && id !== undefined)
          await runCompiledOnce(trx, 'blobs.set_size', [size, blob], () =>
            trx.updateTable('blobs').set({ size }).where('id', '=', blob),
          );
        return blob;
      });
      seq += unit.length;
      if (dialect) perWrite = piecesPerWrite(dialect);
    }
  } catch (error) {
    // Pieces not taken (a unit failed): their maker stops first, so that it does not wait through the release.
    await pieces.return?.();
    // What was written of it goes now, not after UNCLAIMED_GRACE_MS (should the release fail too: the sweep's).
    if (id !== undefined) await releaseBlobs(commits, [id]).catch(() => undefined);
    throw error;
  }
  await pieces.return?.();
  return { blob: id as number, size };
}

/** `bytes` in pieces of CHUNK_BYTES (views, not copies). */
async function* slices(bytes: Buffer): AsyncGenerator<Buffer> {
  for (let at = 0; at < bytes.length; at += CHUNK_BYTES) yield bytes.subarray(at, at + CHUNK_BYTES);
}

/** Thrown when a blob written ahead of a delivery is gone by its commit (swept after UNCLAIMED_GRACE_MS). */
export class BlobGoneError extends Error {
  constructor(ids: readonly number[]) {
    super(`blobs ${ids.join(', ')} were swept before the delivery that wrote them committed`);
  }
}

/** Marks the blobs of a delivery as named by its copies (inside its unit of work). */
export async function claimBlobs(trx: Db, ids: readonly number[]): Promise<void> {
  if (!ids.length) return;
  const result = await trx
    .updateTable('blobs')
    .set({ state: BLOB_CLAIMED })
    .where('id', 'in', ids)
    .where('state', '=', BLOB_UNCLAIMED)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) !== new Set(ids).size) throw new BlobGoneError(ids);
}

/** A blob swept while it was read (its message was deleted meanwhile): its pieces stop short. */
export class BlobReadCutError extends Error {
  constructor(id: number) {
    super(`blob ${id} was deleted while it was read`);
  }
}

/**
 * The bytes of blob `id` put together from its pieces, or undefined when it is not claimed or its
 * pieces do not add up to its size (swept while this read ran: the message is gone too).
 */
export async function readBlob(db: Db, id: number): Promise<Buffer | undefined> {
  const blob = await openBlob(db, id);
  if (!blob) return undefined;
  const pieces: Buffer[] = [];
  try {
    // Both drivers hand back a Buffer of its own: the concatenation below is the one copy.
    for await (const piece of blob.pieces) pieces.push(piece);
  } catch (err) {
    if (err instanceof BlobReadCutError) return undefined;
    throw err;
  }
  return Buffer.concat(pieces, blob.size);
}

/** A body kept in a blob (decision 0053), or null when the blob is gone (its message was deleted meanwhile). */
async function bodyFromBlob(db: Db, id: number | string): Promise<string | null> {
  return (await readBlob(db, Number(id)))?.toString('utf8') ?? null;
}

/** A stored message's bodies, from its row's columns, or from the blobs it names when they are large (decision 0053). */
export async function storedBodies(
  db: Db,
  row: {
    text_body: string | null;
    html_body: string | null;
    text_blob: number | string | null;
    html_blob: number | string | null;
  },
): Promise<{ text: string | null; html: string | null }> {
  return {
    text: row.text_blob === null ? row.text_body : await bodyFromBlob(db, row.text_blob),
    html: row.html_blob === null ? row.html_body : await bodyFromBlob(db, row.html_blob),
  };
}

/**
 * A claimed blob's size and its bytes piece by piece (IMAP streams a large source to a client
 * this way, never holding all of it; `readBlob` gathers them): a few pieces per read, each read
 * on a later turn of the event loop, after the caller took the previous ones. Undefined when the
 * blob is not (or no longer) there; the pieces end early, with BlobReadCutError, when it was
 * swept meanwhile.
 */
export async function openBlob(
  db: Db,
  id: number,
): Promise<{ size: number; pieces: AsyncGenerator<Buffer> } | undefined> {
  const blob = await runCompiledOnce(db, 'blobs.size', [id, BLOB_CLAIMED], () =>
    db.selectFrom('blobs').select('size').where('id', '=', id).where('state', '=', BLOB_CLAIMED),
  );
  if (!blob[0]) return undefined;
  const size = Number(blob[0].size);
  async function* pieces(): AsyncGenerator<Buffer> {
    let length = 0;
    for (let from = 0; ; from += PIECES_PER_READ) {
      if (from) await nextTurn();
      const rows = await runCompiledOnce(db, 'blob_chunks.read', [id, from, PIECES_PER_READ], () =>
        db
          .selectFrom('blob_chunks')
          .select('bytes')
          .where('blob_id', '=', id)
          .where('seq', '>=', from)
          .orderBy('seq')
          .limit(PIECES_PER_READ),
      );
      for (const r of rows) {
        length += r.bytes.length;
        yield r.bytes;
      }
      if (rows.length < PIECES_PER_READ) break;
    }
    if (length !== size) throw new BlobReadCutError(id);
  }
  return { size, pieces: pieces() };
}

/**
 * Deletes the blobs among `ids` that `doom` marks for deletion in its unit of work (returning
 * their ids): their pieces PIECES_PER_DELETE per unit, then the blob rows. A doomed blob is never
 * claimed, and a sweep finishes one whose deletion a process left halfway.
 */
async function deleteBlobs(commits: GroupCommit<InboxDatabase>, doom: (trx: Db) => Promise<number[]>): Promise<number> {
  const doomed = await commits.run(doom);
  for (const id of doomed) {
    for (;;) {
      await nextTurn();
      const left = await commits.run(async (trx) => {
        const seqs = (
          await trx
            .selectFrom('blob_chunks')
            .select('seq')
            .where('blob_id', '=', id)
            .orderBy('seq')
            .limit(PIECES_PER_DELETE)
            .execute()
        ).map((r) => r.seq);
        if (seqs.length)
          await trx.deleteFrom('blob_chunks').where('blob_id', '=', id).where('seq', 'in', seqs).execute();
        else await trx.deleteFrom('blobs').where('id', '=', id).execute();
        return seqs.length;
      });
      if (!left) break;
    }
  }
  return doomed.length;
}

/** Deletes the blobs among `ids` that no copy claimed: those of a delivery that failed, or stored no copy. */
export async function releaseBlobs(commits: GroupCommit<InboxDatabase>, ids: readonly number[]): Promise<number> {
  if (!ids.length) return 0;
  return deleteBlobs(commits, async (trx) => {
    const rows = await trx
      .updateTable('blobs')
      .set({ state: BLOB_DOOMED })
      .where('id', 'in', ids)
      .where('state', '=', BLOB_UNCLAIMED)
      .returning('id')
      .execute();
    return rows.map((r) => Number(r.id));
  });
}

/** Claimed blobs a sweep looks at for copies that still name them; the next sweep goes on after them. */
const SCAN_PER_SWEEP = 1000;

/** How long after its creation a blob whose deletion was begun counts as left halfway (a release takes seconds). */
const DOOMED_GRACE_MS = 10 * 60 * 1000;

/**
 * The sweep of blobs that nothing needs: claimed ones no copy names any more (their messages,
 * threads, inboxes or organizations were deleted), unclaimed ones older than UNCLAIMED_GRACE_MS,
 * and ones whose deletion a process left halfway. Each `sweep` deletes up to SWEEP_BATCH of each
 * kind and returns how many; it looks at SCAN_PER_SWEEP claimed blobs, going round all of them
 * over successive sweeps, so that its cost does not grow with the number of stored messages.
 */
export function createBlobSweeper(commits: GroupCommit<InboxDatabase>, clock: Clock) {
  let after = 0;
  return {
    async sweep(): Promise<number> {
      const now = clock.now().getTime();
      let next = 0;
      const swept = await deleteBlobs(commits, async (trx) => {
        const window = (
          await trx
            .selectFrom('blobs')
            .select('id')
            .where('state', '=', BLOB_CLAIMED)
            .where('id', '>', after)
            .orderBy('id')
            .limit(SCAN_PER_SWEEP)
            .execute()
        ).map((r) => Number(r.id));
        next = window.length < SCAN_PER_SWEEP ? 0 : (window.at(-1) as number);
        const unreferenced = () =>
          trx
            .selectFrom('blobs')
            .select('id')
            .where(({ not, exists, selectFrom }) =>
              not(
                exists(
                  selectFrom('messages').select(sql.lit(1).as('one')).whereRef('messages.source_blob', '=', 'blobs.id'),
                ),
              ),
            )
            .where(({ not, exists, selectFrom }) =>
              not(
                exists(
                  selectFrom('messages').select(sql.lit(1).as('one')).whereRef('messages.text_blob', '=', 'blobs.id'),
                ),
              ),
            )
            .where(({ not, exists, selectFrom }) =>
              not(
                exists(
                  selectFrom('messages').select(sql.lit(1).as('one')).whereRef('messages.html_blob', '=', 'blobs.id'),
                ),
              ),
            )
            .where(({ not, exists, selectFrom }) =>
              not(
                exists(
                  selectFrom('attachments')
                    .select(sql.lit(1).as('one'))
                    .whereRef('attachments.content_blob', '=', 'blobs.id'),
                ),
              ),
            );
        const found: [number, { id: number | string | bigint }[]][] = [
          [
            BLOB_CLAIMED,
            window.length ? await unreferenced().where('id', 'in', window).limit(SWEEP_BATCH).execute() : [],
          ],
          // No copy names an unclaimed blob: the claim and the copies commit together.
          [
            BLOB_UNCLAIMED,
            await trx
              .selectFrom('blobs')
              .select('id')
              .where('state', '=', BLOB_UNCLAIMED)
              .where('created_at', '<', new Date(now - UNCLAIMED_GRACE_MS).toISOString())
              .limit(SWEEP_BATCH)
              .execute(),
          ],
          [
            BLOB_DOOMED,
            await trx
              .selectFrom('blobs')
              .select('id')
              .where('state', '=', BLOB_DOOMED)
              .where('created_at', '<', new Date(now - DOOMED_GRACE_MS).toISOString())
              .limit(SWEEP_BATCH)
              .execute(),
          ],
        ];
        // Doomed in the transaction that found them unneeded, and only if still in the state they
        // were found in: on PostgreSQL a delivery may have claimed an old unclaimed one meanwhile
        // (a claimed blob gets no new copies, so one found unreferenced stays so).
        const ids: number[] = [];
        for (const [state, rows] of found) {
          if (!rows.length) continue;
          const doomed = await trx
            .updateTable('blobs')
            .set({ state: BLOB_DOOMED })
            .where(
              'id',
              'in',
              rows.map((r) => Number(r.id)),
            )
            .where('state', '=', state)
            .returning('id')
            .execute();
          ids.push(...doomed.map((r) => Number(r.id)));
        }
        return ids;
      });
      after = next;
      return swept;
    },
  };
}
