import { NOTIFY_PAYLOAD_LIMIT } from '../../platform/db/database.js';

/**
 * The signal that the folders of some inboxes changed (mailstore/folders.ts `FoldersChanged`):
 * given in the writer's transaction with `Database.notifyIn`, the mechanism of the real-time feed
 * (realtime/event-feed.ts), on a topic of its own because label changes and deletions write no
 * feed events (decision 0033 keeps label events off the WebSocket) and IDLE must hear them too.
 */
export const FOLDERS_TOPIC = 'inbox_folders';

/** Inbox ids packed into payloads of at most NOTIFY_PAYLOAD_LIMIT bytes each. */
export function packInboxIds(inboxIds: readonly string[]): string[] {
  const out: string[] = [];
  let batch: string[] = [];
  let bytes = 2;
  for (const id of inboxIds) {
    const size = Buffer.byteLength(JSON.stringify(id)) + 1;
    if (bytes + size > NOTIFY_PAYLOAD_LIMIT && batch.length) {
      out.push(JSON.stringify(batch));
      batch = [];
      bytes = 2;
    }
    batch.push(id);
    bytes += size;
  }
  if (batch.length) out.push(JSON.stringify(batch));
  return out;
}

/** The inbox ids of a signal; none for one that cannot be read. */
export function unpackInboxIds(payload: string): string[] {
  try {
    const ids = JSON.parse(payload) as unknown;
    return Array.isArray(ids) ? ids.filter((i): i is string => typeof i === 'string') : [];
  } catch {
    return [];
  }
}
