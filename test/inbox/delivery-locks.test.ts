import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commitsOf } from '../../src/platform/db/group-commit.js';
import { createDelivery, type ComposedMessage } from '../../src/inbox/mailstore/delivery.service.js';
import { createFolderProjection } from '../../src/inbox/mailstore/folders.js';
import { usageMetric } from '../../src/inbox/usage/usage-counts.js';
import { sumBefore } from '../../src/inbox/usage/usage.repository.js';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { organization, unique } from './fixtures.js';

/**
 * What a delivery holds locked while it runs (mailstore/delivery.service.ts): a folder's UID is
 * taken from its counter row, which PostgreSQL keeps locked until the commit, and every other
 * delivery to that folder waits for it; the usage counts' rows are shared less (shards) but locked
 * the same way. So they come last but for the send count, after everything else of the unit of
 * work; on SQLite, with one writer, only the order shows.
 */
describe.each(dialects)('%s: a delivery takes its folder UIDs last', (dialect) => {
  let server: InboxTestServer;

  beforeAll(async () => {
    server = await startInboxServer({ dialect });
  });
  afterAll(async () => {
    await server?.close();
  });

  /** The UIDs of an inbox's folder, in order. */
  const uids = async (inboxId: string, folder: 'INBOX' | 'Sent') =>
    (
      await server.service.database.db
        .selectFrom('folder_messages')
        .select('uid')
        .where('inbox_id', '=', inboxId)
        .where('folder', '=', folder)
        .orderBy('uid')
        .execute()
    ).map((u) => Number(u.uid));

  function message(subject: string): ComposedMessage {
    const now = new Date().toISOString();
    const raw = Buffer.from(`From: a@example.org\r\nSubject: ${subject}\r\n\r\nHello.\r\n`);
    return {
      messageId: `<${unique('m')}@example.org>`,
      timestamp: now,
      from: 'a@example.org',
      replyTo: [],
      to: [],
      cc: [],
      subject,
      preview: 'Hello.',
      text: 'Hello.',
      html: null,
      inReplyTo: null,
      references: [],
      headers: {},
      attachments: [],
      size: raw.length,
      createdAt: now,
      updatedAt: now,
      raw,
      attachmentContents: [],
    };
  }

  it("the events and the search index are written before the usage counts and the inbox's UID; the counter is free until then", async () => {
    const { inboxes, organizationId } = await organization(server, [unique('locks')]);
    const inboxId = inboxes[0] as string;
    const db = server.service.database.db;
    const { clock, ids, events } = server.service.runtime.services;
    const seen: { folderRows: number; eventRows: number; counted: number; counterFree?: boolean }[] = [];
    const delivery = createDelivery({
      commits: commitsOf(db),
      clock,
      ids,
      events,
      sendLimitPerDay: 1000,
      folders: createFolderProjection(),
      // A store hook runs in the unit of work after the copies and their events were written.
      storeHooks: [
        async () => async (trx, stored) => {
          const pk = stored[0]?.message.pk as number;
          const folderRows = await trx
            .selectFrom('folder_messages')
            .select('uid')
            .where('message_pk', '=', pk)
            .execute();
          const eventRows = await trx
            .selectFrom('events')
            .select('event_id')
            .where('inbox_id', '=', inboxId)
            .where('event_type', '=', 'message.received')
            .execute();
          const metric = usageMetric('message_count');
          const usage = await sumBefore(trx, { organizationId, inboxId }, [metric], Number.MAX_SAFE_INTEGER);
          const entry: (typeof seen)[number] = {
            folderRows: folderRows.length,
            eventRows: eventRows.length,
            counted: usage.get(metric) ?? 0,
          };
          if (dialect === 'postgres')
            // Another connection may lock the inbox's counter row at once: this delivery holds no lock on it yet.
            entry.counterFree = await db
              .transaction()
              .execute(async (other) => {
                await sql`select uid_next from folder_counters where inbox_id = ${inboxId} and folder = 'INBOX' for update nowait`.execute(
                  other,
                );
                return true;
              })
              .catch((err: { code?: string }) => (err.code === '55P03' ? false : Promise.reject(err)));
          seen.push(entry);
        },
      ],
    });

    for (const subject of ['first', 'second']) {
      const prepared = await delivery.prepare(message(subject));
      const result = await delivery.commit(prepared, (trx) =>
        delivery.deliver(trx, { prepared, recipients: [{ address: inboxId, inboxIds: [inboxId] }] }),
      );
      expect(result.stored).toBe(1);
    }

    expect(seen.map((s) => s.folderRows)).toEqual([0, 0]);
    expect(seen.map((s) => s.eventRows)).toEqual([1, 2]);
    // The usage counts come after the hooks too: each delivery sees only the ones before it.
    expect(seen.map((s) => s.counted)).toEqual([0, 1]);
    // The second delivery: the counter row exists (the first made it) and is not locked by this one.
    if (dialect === 'postgres') expect(seen[1]?.counterFree).toBe(true);
    // Taken all the same, in order.
    expect(await uids(inboxId, 'INBOX')).toEqual([1, 2]);
  });

  it("a send refused by the day's limit after its UIDs were taken gives them back: the next delivery has no gap", async () => {
    const { inboxes, organizationId } = await organization(server, [unique('from'), unique('to')]);
    const [from, to] = inboxes as [string, string];
    const db = server.service.database.db;
    const { clock, ids, events } = server.service.runtime.services;
    const deliveryWith = (sendLimitPerDay: number) =>
      createDelivery({
        commits: commitsOf(db),
        clock,
        ids,
        events,
        sendLimitPerDay,
        folders: createFolderProjection(),
      });
    const send = async (sendLimitPerDay: number, subject: string) => {
      const delivery = deliveryWith(sendLimitPerDay);
      const prepared = await delivery.prepare(message(subject));
      return delivery.commit(prepared, (trx) =>
        delivery.deliver(trx, {
          prepared,
          recipients: [{ address: to, inboxIds: [to] }],
          sender: { organizationId, inboxId: from, labels: [], bcc: [], external: [] },
        }),
      );
    };
    const metric = usageMetric('message_count');
    const counted = async () =>
      (await sumBefore(db, { organizationId }, [metric], Number.MAX_SAFE_INTEGER)).get(metric) ?? 0;

    expect((await send(1000, 'one')).stored).toBe(2);
    // Over the limit (the send count is the last statement, after the UIDs): nothing of it stays.
    await expect(send(1, 'two')).rejects.toMatchObject({ code: 'SEND_LIMIT_EXCEEDED' });
    expect(await uids(from, 'Sent')).toEqual([1]);
    expect(await uids(to, 'INBOX')).toEqual([1]);
    expect(await counted()).toBe(2);
    expect((await send(1000, 'three')).stored).toBe(2);
    expect(await uids(from, 'Sent')).toEqual([1, 2]);
    expect(await uids(to, 'INBOX')).toEqual([1, 2]);
    expect(await counted()).toBe(4);
  });
});
