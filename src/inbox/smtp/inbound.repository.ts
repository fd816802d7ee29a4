import type { Db } from '../schema/database.js';

/** The inboxes among `inboxIds` that already turned the report `messageId` into bounces. */
export async function findDeliveryReports(
  db: Db,
  inboxIds: readonly string[],
  messageId: string,
): Promise<Set<string>> {
  if (!inboxIds.length) return new Set();
  const rows = await db
    .selectFrom('delivery_reports')
    .select('inbox_id')
    .where('inbox_id', 'in', [...inboxIds])
    .where('message_id', '=', messageId)
    .execute();
  return new Set(rows.map((r) => r.inbox_id));
}

export async function insertDeliveryReports(
  db: Db,
  inboxIds: readonly string[],
  messageId: string,
  createdAt: string,
): Promise<void> {
  if (!inboxIds.length) return;
  await db
    .insertInto('delivery_reports')
    .values(inboxIds.map((inboxId) => ({ inbox_id: inboxId, message_id: messageId, created_at: createdAt })))
    .execute();
}
