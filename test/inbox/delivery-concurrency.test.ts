import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { call, enc, organization, unique } from './fixtures.js';

/**
 * Sends that cross: inbox A answers B while B answers A, so each transaction locks a thread of
 * both inboxes. On PostgreSQL two such transactions that lock the same two threads in opposite
 * orders deadlock unless every multi-row lock is taken in one fixed order (and a deadlock or
 * serialization failure that still happens is retried).
 */
describe.each(dialects)('%s: concurrent deliveries crossing two inboxes', (dialect) => {
  let server: InboxTestServer;

  beforeAll(async () => {
    // The default pool (10) as in production: enough transactions at once to interleave.
    server = await startInboxServer({
      dialect,
      env: { INBOX_DATABASE_POOL_SIZE: '10', INBOX_RATE_LIMIT_PER_MINUTE: '100000', INBOX_ROLES: 'api' },
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  // 200 requests at once: room for a loaded 2-core machine (no time is asserted).
  it(
    'answers 200 concurrent valid replies, reply-alls and forwards between two inboxes of one organization without an error',
    { timeout: 120_000 },
    async () => {
      const org = await organization(server, [unique('ca'), unique('cb')]);
      const [a, b] = org.inboxes as [string, string];
      // A few conversations both inboxes hold: A wrote to B, and B wrote to A.
      const seeds: { inbox: string; messageId: string }[] = [];
      for (let i = 0; i < 1; i++) {
        const fromA = await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(a)}/messages/send`, {
          to: b,
          subject: `From A ${i}`,
          text: 'a',
        });
        const fromB = await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(b)}/messages/send`, {
          to: a,
          subject: `From B ${i}`,
          text: 'b',
        });
        expect([fromA.status, fromB.status]).toEqual([200, 200]);
        // Each inbox answers from its own copy of every conversation.
        seeds.push(
          { inbox: a, messageId: fromA.body.message_id },
          { inbox: b, messageId: fromA.body.message_id },
          { inbox: a, messageId: fromB.body.message_id },
          { inbox: b, messageId: fromB.body.message_id },
        );
      }
      const requests = Array.from({ length: 200 }, (_, i) => {
        const seed = seeds[i % seeds.length] as (typeof seeds)[number];
        const other = seed.inbox === a ? b : a;
        const base = `/v0/inboxes/${enc(seed.inbox)}/messages/${enc(seed.messageId)}`;
        if (i % 3 === 0) return call(server.url, org.key, 'POST', `${base}/forward`, { to: other, text: `fwd ${i}` });
        return call(server.url, org.key, 'POST', `${base}/reply`, {
          text: `re ${i}`,
          ...(i % 3 === 1 ? { reply_all: true } : { to: other }),
        });
      });
      const replies = await Promise.all(requests);
      const failed = replies.filter((r) => r.status !== 200).map((r) => ({ status: r.status, body: r.body }));
      expect(failed).toEqual([]);
      // Every answer is stored: the sender's copy and the other inbox's copy (200 each, plus the seeds).
      const all = async (inbox: string) => {
        let n = 0;
        let pageToken: string | undefined;
        do {
          const page = await org.client.inboxes.messages.list(inbox, {
            limit: 100,
            ...(pageToken ? { pageToken } : {}),
          });
          n += page.count;
          pageToken = page.nextPageToken;
        } while (pageToken);
        return n;
      };
      expect((await all(a)) + (await all(b))).toBe(2 * 2 + 2 * 200);
    },
  );
});
