import type { Kysely } from 'kysely';
import { dialectOf } from '../../platform/db/dialect.js';

// Large stored bytes in pieces (docs/decisions/0023-big-sends-in-pieces.md): a message's source
// and an attachment's bytes from CHUNK_BYTES on are kept here, in pieces of at most that size,
// instead of in `messages.raw` and `attachments.content` (which then hold NULL and an empty
// value). Writing 20 MB in one statement held the event loop for hundreds of milliseconds;
// pieces are written one statement each, with a turn of the event loop between them.
// `part` is 'source' or the attachment's id; `seq` counts from 0.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function up(db: Kysely<any>): Promise<void> {
  const blob = dialectOf(db) === 'postgres' ? 'bytea' : 'blob';
  await db.schema
    .createTable('message_chunks')
    .addColumn('message_pk', 'bigint', (c) => c.notNull().references('messages.id').onDelete('cascade'))
    .addColumn('part', 'varchar(64)', (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('bytes', blob, (c) => c.notNull())
    .addPrimaryKeyConstraint('message_chunks_pk', ['message_pk', 'part', 'seq'])
    .execute();
}
