import type { Kysely } from 'kysely';
import { dialectOf } from '../../platform/db/dialect.js';

// The Drafts folder of mail clients (IMAP, docs/decisions/0045-imap-server.md, "Drafts"): each
// draft's UID there, taken from the folder's counter (`folder_counters`, folder `Drafts`) when the
// draft is stored and again at every change of it (a changed draft is a new message to IMAP, whose
// messages never change). Unique per inbox. Drafts stored before get UIDs in the order they were
// stored. Self-contained, as 0016 is: no application module is imported.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function up(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) === 'postgres' || db.isTransaction) await create(db);
  else await db.transaction().execute(create);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see up()
async function create(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('drafts').addColumn('imap_uid', 'bigint').execute();
  const drafts = (await db.selectFrom('drafts').select(['id', 'inbox_id']).orderBy('id').execute()) as {
    id: number | string;
    inbox_id: string;
  }[];
  const next = new Map<string, number>();
  for (const d of drafts) {
    const uid = next.get(d.inbox_id) ?? 1;
    next.set(d.inbox_id, uid + 1);
    await db.updateTable('drafts').set({ imap_uid: uid }).where('id', '=', d.id).execute();
  }
  for (const [inboxId, uidNext] of next)
    await db.insertInto('folder_counters').values({ inbox_id: inboxId, folder: 'Drafts', uid_next: uidNext }).execute();
  await db.schema.createIndex('drafts_imap_uid').on('drafts').columns(['inbox_id', 'imap_uid']).unique().execute();
}
