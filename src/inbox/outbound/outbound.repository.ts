import type { Db } from '../schema/database.js';
import { sourceOf } from '../mailstore/message.repository.js';

/** A sent message as outbound mail needs it: its ids, its sender inbox and, to send it, its source. */
export interface OutboundMessage {
  readonly pk: number;
  readonly organizationId: string;
  readonly inboxId: string;
  readonly podId: string;
  /** The sending inbox's domain: the DKIM signing domain. */
  readonly domain: string;
  readonly threadId: string;
  readonly messageId: string;
  /** `addr` or `Name <addr>`. */
  readonly from: string;
  /** Every to, cc and bcc entry (`addr` or `Name <addr>`). */
  readonly recipients: readonly string[];
  readonly labels: readonly string[];
}

const COLUMNS = [
  'm.id',
  'm.organization_id',
  'm.inbox_id',
  'm.thread_id',
  'm.message_id',
  'm.from_address',
  'm.to_addresses',
  'm.cc_addresses',
  'm.bcc_addresses',
  'm.labels',
  'i.pod_id',
  'i.domain',
] as const;

interface Row {
  id: number;
  organization_id: string;
  inbox_id: string;
  thread_id: string;
  message_id: string;
  from_address: string;
  to_addresses: string;
  cc_addresses: string | null;
  bcc_addresses: string | null;
  labels: string;
  pod_id: string;
  domain: string;
}

const list = (text: string | null): string[] => (text === null ? [] : (JSON.parse(text) as string[]));

function outboundMessageFromRow(row: Row): OutboundMessage {
  return {
    pk: Number(row.id),
    organizationId: row.organization_id,
    inboxId: row.inbox_id,
    podId: row.pod_id,
    domain: row.domain,
    threadId: row.thread_id,
    messageId: row.message_id,
    from: row.from_address,
    recipients: [...list(row.to_addresses), ...list(row.cc_addresses), ...list(row.bcc_addresses)],
    labels: list(row.labels),
  };
}

/** The message behind an outbound job, with its stored source (null if it was never kept). */
export async function findOutboundMessage(
  db: Db,
  pk: number,
): Promise<{ message: OutboundMessage; raw: Buffer | null } | undefined> {
  const row = await db
    .selectFrom('messages as m')
    .innerJoin('inboxes as i', 'i.inbox_id', 'm.inbox_id')
    .select([...COLUMNS, 'm.raw', 'm.source_blob'])
    .where('m.id', '=', pk)
    .executeTakeFirst();
  if (!row) return undefined;
  return { message: outboundMessageFromRow(row), raw: (await sourceOf(db, row)) ?? null };
}

/** The pod of an inbox, undefined when the inbox is gone. */
export async function findInboxPod(db: Db, inboxId: string): Promise<string | undefined> {
  const row = await db.selectFrom('inboxes').select('pod_id').where('inbox_id', '=', inboxId).executeTakeFirst();
  return row?.pod_id;
}

/**
 * The copies of a message (by Message-ID) held by some inboxes, without sources: a delivery
 * status notification names the message, and the sender's copy is among them. Uses the unique
 * (inbox_id, message_id) index.
 */
export async function findMessageCopies(
  db: Db,
  inboxIds: readonly string[],
  messageId: string,
): Promise<OutboundMessage[]> {
  if (!inboxIds.length) return [];
  const rows = await db
    .selectFrom('messages as m')
    .innerJoin('inboxes as i', 'i.inbox_id', 'm.inbox_id')
    .select(COLUMNS)
    .where('m.inbox_id', 'in', [...inboxIds])
    .where('m.message_id', '=', messageId)
    .execute();
  return rows.map(outboundMessageFromRow);
}
