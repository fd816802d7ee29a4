import { AgentMail, AgentMailError } from 'agentmail';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { deliver, storedMessageId } from '../support/smtp-client.js';
import { call, enc, eventsOf, expectError, isoTimestamp, organization, secretOf, unique } from './fixtures.js';
import { simpleMessage, smtpPort } from './smtp-inbound.helpers.js';

type Org = Awaited<ReturnType<typeof organization>>;

/** The SDK error of a call that must fail. */
async function failure(promise: Promise<unknown>): Promise<AgentMailError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AgentMailError);
  return err as AgentMailError;
}

/** Allow and block lists through agentmail 0.5.27: the three levels, and their enforcement on the API and SMTP paths. */
describe.each(dialects)('%s: allow and block lists', (dialect) => {
  let server: InboxTestServer;
  let org: Org;
  let other: Org;
  let podId: string;

  beforeAll(async () => {
    server = await startInboxServer({ dialect });
    org = await organization(server, [unique('lists'), unique('lists')]);
    other = await organization(server, [unique('other')]);
    podId = (await org.client.inboxes.get(org.inboxes[0] as string)).podId;
  });
  afterAll(async () => {
    await server.close();
  });

  describe('organization lists', () => {
    it('creates, gets, lists by entry ascending with pages, and deletes entries; the wire shape is exact', async () => {
      const made = await org.client.lists.create('receive', 'block', {
        entry: '  Spammer@Example.COM ',
        reason: 'unsolicited',
      });
      expect(made).toEqual({
        entry: 'spammer@example.com',
        organizationId: org.organizationId,
        reason: 'unsolicited',
        direction: 'receive',
        listType: 'block',
        entryType: 'email',
        createdAt: expect.any(Date),
        readOnly: false,
      });
      const domain = await org.client.lists.create('receive', 'block', { entry: 'Bad.Example' });
      expect(domain).toEqual({
        entry: 'bad.example',
        organizationId: org.organizationId,
        direction: 'receive',
        listType: 'block',
        entryType: 'domain',
        createdAt: expect.any(Date),
        readOnly: false,
      });

      const raw = await call(server.url, org.key, 'GET', `/v0/lists/receive/block/${enc('SPAMMER@example.com')}`);
      expect(raw.status).toBe(200);
      expect(raw.body).toEqual({
        entry: 'spammer@example.com',
        organization_id: org.organizationId,
        reason: 'unsolicited',
        direction: 'receive',
        list_type: 'block',
        entry_type: 'email',
        created_at: isoTimestamp,
        read_only: false,
      });

      const first = await org.client.lists.list('receive', 'block', { limit: 1 });
      expect(first).toEqual({
        count: 1,
        limit: 1,
        nextPageToken: expect.any(String),
        entries: [expect.objectContaining({ entry: 'bad.example' })],
      });
      const second = await org.client.lists.list('receive', 'block', {
        limit: 1,
        pageToken: first.nextPageToken as string,
      });
      expect(second).toEqual({
        count: 1,
        limit: 1,
        entries: [expect.objectContaining({ entry: 'spammer@example.com' })],
      });
      // Other lists are other lists.
      expect((await org.client.lists.list('send', 'block')).entries).toEqual([]);
      expect((await other.client.lists.list('receive', 'block')).entries).toEqual([]);

      await org.client.lists.delete('receive', 'block', 'spammer@example.com');
      await org.client.lists.delete('receive', 'block', 'bad.example');
      expect((await org.client.lists.list('receive', 'block')).entries).toEqual([]);
    });

    it('answers errors in the spec format: bad direction, type, entry, duplicate, missing entry, foreign page token', async () => {
      expectError(
        await call(server.url, org.key, 'GET', '/v0/lists/sideways/block'),
        400,
        'validation_error',
        'INVALID_DIRECTION',
        'direction',
      );
      expectError(
        await call(server.url, org.key, 'POST', '/v0/lists/send/maybe', { entry: 'a@b.example' }),
        400,
        'validation_error',
        'INVALID_LIST_TYPE',
        'type',
      );
      for (const entry of ['', 'not an address', 'a@', '@@x', 'under_score.example', `${'a'.repeat(70)}.example`]) {
        expectError(
          await call(server.url, org.key, 'POST', '/v0/lists/send/block', { entry }),
          400,
          'validation_error',
          entry === '' ? 'INVALID_VALUE' : 'INVALID_LIST_ENTRY',
          'entry',
        );
      }
      expectError(
        await call(server.url, org.key, 'POST', '/v0/lists/send/block', {}),
        400,
        'validation_error',
        'REQUIRED',
      );
      const err = await failure(org.client.lists.create('send', 'block', { entry: 'x@@' }));
      expect(err).toBeInstanceOf(AgentMail.ValidationError);
      expect(err.statusCode).toBe(400);

      await org.client.lists.create('send', 'block', { entry: 'dup.example' });
      expectError(
        await call(server.url, org.key, 'POST', '/v0/lists/send/block', { entry: 'DUP.example' }),
        409,
        'conflict',
        'LIST_ENTRY_EXISTS',
      );
      // The same entry in the allow list is another entry.
      await org.client.lists.create('send', 'allow', { entry: 'dup.example' });
      await org.client.lists.delete('send', 'allow', 'dup.example');
      await org.client.lists.delete('send', 'block', 'dup.example');

      const missing = await failure(org.client.lists.get('send', 'block', 'nobody@example.com'));
      expect(missing).toBeInstanceOf(AgentMail.NotFoundError);
      expectError(
        await call(server.url, org.key, 'DELETE', `/v0/lists/send/block/${enc('nobody@example.com')}`),
        404,
        'not_found',
        'LIST_ENTRY_NOT_FOUND',
      );
      expectError(
        await call(server.url, org.key, 'GET', '/v0/lists/send/block/%40%40'),
        404,
        'not_found',
        'LIST_ENTRY_NOT_FOUND',
      );
      expectError(
        await call(server.url, org.key, 'GET', '/v0/lists/send/block?page_token=garbage'),
        400,
        'validation_error',
        'INVALID_PAGE_TOKEN',
        'page_token',
      );
      expectError(
        await call(server.url, org.key, 'GET', '/v0/lists/send/block?limit=0'),
        400,
        'validation_error',
        'INVALID_VALUE',
      );
      expectError(
        await call(server.url, undefined, 'GET', '/v0/lists/send/block'),
        401,
        'authentication_error',
        'MISSING_API_KEY',
      );
    });
  });

  describe('pod and inbox lists', () => {
    it('keeps pod and inbox entries apart from the organization, with pod_id and inbox_id', async () => {
      const inbox = org.inboxes[0] as string;
      const podEntry = await org.client.pods.lists.create(podId, 'send', 'allow', { entry: 'partner.example' });
      expect(podEntry).toEqual({
        entry: 'partner.example',
        organizationId: org.organizationId,
        podId,
        direction: 'send',
        listType: 'allow',
        entryType: 'domain',
        createdAt: expect.any(Date),
        readOnly: false,
      });
      const inboxEntry = await org.client.inboxes.lists.create(inbox, 'receive', 'block', {
        entry: 'Noisy@Example.com',
        reason: 'loud',
      });
      expect(inboxEntry).toEqual({
        entry: 'noisy@example.com',
        organizationId: org.organizationId,
        podId,
        inboxId: inbox,
        reason: 'loud',
        direction: 'receive',
        listType: 'block',
        entryType: 'email',
        createdAt: expect.any(Date),
        readOnly: false,
      });

      expect(await org.client.pods.lists.get(podId, 'send', 'allow', 'partner.example')).toEqual(podEntry);
      expect(await org.client.inboxes.lists.get(inbox, 'receive', 'block', 'noisy@example.com')).toEqual(inboxEntry);
      expect(await org.client.pods.lists.list(podId, 'send', 'allow')).toEqual({
        count: 1,
        limit: 50,
        entries: [podEntry],
      });
      expect(await org.client.inboxes.lists.list(inbox, 'receive', 'block')).toEqual({
        count: 1,
        limit: 50,
        entries: [inboxEntry],
      });
      expect((await org.client.lists.list('send', 'allow')).entries).toEqual([]);
      expect((await org.client.inboxes.lists.list(org.inboxes[1] as string, 'receive', 'block')).entries).toEqual([]);
      const rawInbox = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(inbox)}/lists/receive/block`);
      expect(Object.keys(rawInbox.body.entries[0]).sort()).toEqual([
        'created_at',
        'direction',
        'entry',
        'entry_type',
        'inbox_id',
        'list_type',
        'organization_id',
        'pod_id',
        'read_only',
        'reason',
      ]);

      // Another organization sees neither the pod nor the inbox: 404, never data.
      expectError(
        await call(server.url, other.key, 'GET', `/v0/pods/${enc(podId)}/lists/send/allow`),
        404,
        'not_found',
        'LIST_NOT_FOUND',
      );
      expectError(
        await call(server.url, other.key, 'POST', `/v0/pods/${enc(podId)}/lists/send/allow`, { entry: 'x.example' }),
        404,
        'not_found',
        'LIST_NOT_FOUND',
      );
      expectError(
        await call(server.url, other.key, 'GET', `/v0/inboxes/${enc(inbox)}/lists/receive/block`),
        404,
        'not_found',
        'INBOX_NOT_FOUND',
      );
      expectError(
        await call(
          server.url,
          other.key,
          'DELETE',
          `/v0/inboxes/${enc(inbox)}/lists/receive/block/${enc('noisy@example.com')}`,
        ),
        404,
        'not_found',
        'INBOX_NOT_FOUND',
      );
      expectError(
        await call(server.url, org.key, 'GET', '/v0/pods/pod_missing/lists/send/allow'),
        404,
        'not_found',
        'LIST_NOT_FOUND',
      );
      expectError(
        await call(server.url, org.key, 'GET', `/v0/inboxes/${enc('missing@inbox.test')}/lists/send/allow`),
        404,
        'not_found',
        'INBOX_NOT_FOUND',
      );

      await org.client.pods.lists.delete(podId, 'send', 'allow', 'partner.example');
      await org.client.inboxes.lists.delete(inbox, 'receive', 'block', 'noisy@example.com');
      expect((await org.client.pods.lists.list(podId, 'send', 'allow')).entries).toEqual([]);
    });
  });

  describe('enforcement', () => {
    it('refuses a send to a blocked recipient with a 400 naming the recipient and the rule, and stores and emits nothing', async () => {
      const sender = await org.client.inboxes.create({ username: unique('sender') });
      // Local domains (the test relays nothing): the list is the same for every address.
      await org.client.lists.create('send', 'block', { entry: 'agents.test', reason: 'no' });
      try {
        const before = (await eventsOf(server, { inboxId: sender.inboxId })).length;
        const res = await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(sender.inboxId)}/messages/send`, {
          to: [org.inboxes[0] as string],
          cc: ['Boss <boss@AGENTS.test>'],
          text: 'hi',
        });
        expectError(res, 400, 'validation_error', 'RECIPIENT_BLOCKED');
        expect(res.body.error.details).toEqual({
          code: 'RECIPIENT_BLOCKED',
          recipient: 'boss@AGENTS.test',
          level: 'organization',
          direction: 'send',
          list_type: 'block',
          entry: 'agents.test',
        });
        expect(res.body.error.message).toContain('boss@AGENTS.test');
        expect(res.body.error.message).toContain("organization's send block list");
        const sdk = await failure(
          org.client.inboxes.messages.send(sender.inboxId, { to: 'x@agents.test', text: 'hi' }),
        );
        expect(sdk.statusCode).toBe(400);
        expect((await org.client.inboxes.messages.list(sender.inboxId)).messages).toEqual([]);
        expect((await eventsOf(server, { inboxId: sender.inboxId })).length).toBe(before);
        expect((await org.client.inboxes.messages.list(org.inboxes[0] as string)).messages).toEqual([]);
      } finally {
        await org.client.lists.delete('send', 'block', 'agents.test');
      }
    });

    it('lets an inbox send only to its allow list, and a block at a wider level wins over a narrower allow', async () => {
      const sender = await org.client.inboxes.create({ username: unique('allowed') });
      const friend = org.inboxes[1] as string;
      await org.client.inboxes.lists.create(sender.inboxId, 'send', 'allow', { entry: friend });
      const refused = await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(sender.inboxId)}/messages/send`, {
        to: [org.inboxes[0] as string],
        text: 'hi',
      });
      expectError(refused, 400, 'validation_error', 'RECIPIENT_BLOCKED');
      expect(refused.body.error.details).toEqual({
        code: 'RECIPIENT_BLOCKED',
        recipient: org.inboxes[0],
        level: 'inbox',
        direction: 'send',
        list_type: 'allow',
      });
      const sent = await org.client.inboxes.messages.send(sender.inboxId, { to: friend, text: 'hi friend' });
      expect(sent.messageId).toMatch(/^<.+>$/);

      await org.client.pods.lists.create(podId, 'send', 'block', { entry: friend });
      try {
        const blocked = await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(sender.inboxId)}/messages/send`, {
          to: [friend],
          text: 'again',
        });
        expect(blocked.body.error.details).toMatchObject({ level: 'pod', list_type: 'block', entry: friend });
      } finally {
        await org.client.pods.lists.delete(podId, 'send', 'block', friend);
      }
    });

    it('stores mail from a blocked sender labelled blocked, hidden unless include_blocked, with no message.received (API path)', async () => {
      const from = await other.client.inboxes.create({ username: unique('pest') });
      const to = await org.client.inboxes.create({ username: unique('quiet') });
      await org.client.inboxes.lists.create(to.inboxId, 'receive', 'block', { entry: from.inboxId });
      const sent = await other.client.inboxes.messages.send(from.inboxId, {
        to: to.inboxId,
        subject: 'buy now',
        text: 'spam',
      });
      // The sender is not told: its send succeeds and reports a delivery.
      expect((await eventsOf(server, { inboxId: from.inboxId, type: 'message.delivered' })).length).toBe(1);

      expect((await org.client.inboxes.messages.list(to.inboxId)).messages).toEqual([]);
      const shown = await org.client.inboxes.messages.list(to.inboxId, { includeBlocked: true });
      expect(shown.messages.map((m) => ({ id: m.messageId, labels: [...m.labels].sort() }))).toEqual([
        { id: sent.messageId, labels: ['blocked', 'received'] },
      ]);
      expect((await org.client.inboxes.threads.list(to.inboxId)).threads).toEqual([]);
      expect(await eventsOf(server, { inboxId: to.inboxId, type: 'message.received' })).toEqual([]);

      // Lifting the block lets the next message through, announced.
      await org.client.inboxes.lists.delete(to.inboxId, 'receive', 'block', from.inboxId);
      await other.client.inboxes.messages.send(from.inboxId, { to: to.inboxId, subject: 'hello', text: 'real' });
      const received = await eventsOf(server, { inboxId: to.inboxId, type: 'message.received' });
      expect(received.map((e) => e.message.subject)).toEqual(['hello']);
    });

    it('screens SMTP mail by the receive lists of every level: blocked copies are stored labelled blocked, allowed ones announced', async () => {
      const port = smtpPort(server);
      const gated = await org.client.inboxes.create({ username: unique('gated') });
      const open = org.inboxes[1] as string;
      await org.client.inboxes.lists.create(gated.inboxId, 'receive', 'allow', { entry: 'friends.example' });
      await org.client.lists.create('receive', 'block', { entry: 'evil.example' });
      try {
        const cold = await deliver(port, {
          from: 'a@stranger.example',
          to: [gated.inboxId, open],
          message: simpleMessage({
            from: 'A <a@stranger.example>',
            to: gated.inboxId,
            messageId: `<cold.${unique('m')}@stranger.example>`,
          }),
        });
        const coldId = storedMessageId(cold.data);
        const friend = await deliver(port, {
          from: 'b@friends.example',
          to: [gated.inboxId],
          message: simpleMessage({
            from: 'b@mail.friends.example',
            to: gated.inboxId,
            messageId: `<warm.${unique('m')}@friends.example>`,
          }),
        });
        const friendId = storedMessageId(friend.data);
        const evil = await deliver(port, {
          from: 'c@evil.example',
          to: [open],
          message: simpleMessage({ from: 'c@evil.example', to: open, messageId: `<evil.${unique('m')}@evil.example>` }),
        });
        const evilId = storedMessageId(evil.data);

        const gatedAll = await org.client.inboxes.messages.list(gated.inboxId, { includeBlocked: true });
        expect(Object.fromEntries(gatedAll.messages.map((m) => [m.messageId, [...m.labels].sort()]))).toEqual({
          [coldId]: ['blocked', 'received'],
          [friendId]: ['received', 'unread'],
        });
        expect((await org.client.inboxes.messages.list(gated.inboxId)).messages.map((m) => m.messageId)).toEqual([
          friendId,
        ]);
        const openAll = await org.client.inboxes.messages.list(open, { includeBlocked: true });
        expect(openAll.messages.find((m) => m.messageId === coldId)?.labels).not.toContain('blocked');
        expect(openAll.messages.find((m) => m.messageId === evilId)?.labels).toContain('blocked');

        expect(
          (await eventsOf(server, { inboxId: gated.inboxId, type: 'message.received' })).map(
            (e) => e.message.message_id,
          ),
        ).toEqual([friendId]);
        const openEvents = (await eventsOf(server, { inboxId: open, type: 'message.received' })).map(
          (e) => e.message.message_id,
        );
        expect(openEvents).toContain(coldId);
        expect(openEvents).not.toContain(evilId);
      } finally {
        await org.client.lists.delete('receive', 'block', 'evil.example');
      }
    });

    it('screens replies to our own messages by the reply lists instead of the receive lists', async () => {
      const port = smtpPort(server);
      const agent = await org.client.inboxes.create({ username: unique('outreach') });
      const prospect = await other.client.inboxes.create({ username: unique('prospect') });
      // Only friends may write cold; anyone we wrote to may answer, except who the reply list blocks.
      await org.client.inboxes.lists.create(agent.inboxId, 'receive', 'allow', { entry: 'friends.example' });
      await org.client.inboxes.lists.create(agent.inboxId, 'reply', 'block', { entry: 'rude.example' });
      const ours = await org.client.inboxes.messages.send(agent.inboxId, {
        to: prospect.inboxId,
        subject: 'offer',
        text: 'interested?',
      });

      const answer = (from: string, id: string, inReplyTo?: string) =>
        deliver(port, {
          from,
          to: [agent.inboxId],
          message: simpleMessage({
            from,
            to: agent.inboxId,
            messageId: id,
            subject: 'Re: offer',
            ...(inReplyTo ? { headers: `In-Reply-To: ${inReplyTo}\r\nReferences: ${inReplyTo}` } : {}),
          }),
        });
      const replyId = storedMessageId(
        (await answer('p@prospect.example', `<r1.${unique('m')}@prospect.example>`, ours.messageId)).data,
      );
      const rudeId = storedMessageId(
        (await answer('x@rude.example', `<r2.${unique('m')}@rude.example>`, ours.messageId)).data,
      );
      const coldId = storedMessageId((await answer('p@prospect.example', `<r3.${unique('m')}@prospect.example>`)).data);

      const all = await org.client.inboxes.messages.list(agent.inboxId, { includeBlocked: true });
      const labels = Object.fromEntries(all.messages.map((m) => [m.messageId, m.labels.includes('blocked')]));
      expect(labels).toMatchObject({ [replyId]: false, [rudeId]: true, [coldId]: true });
      expect(
        (await eventsOf(server, { inboxId: agent.inboxId, type: 'message.received' })).map((e) => e.message.message_id),
      ).toEqual([replyId]);
    });

    it('drops the lists of a deleted inbox', async () => {
      const gone = await org.client.inboxes.create({ username: unique('gone') });
      await org.client.inboxes.lists.create(gone.inboxId, 'receive', 'block', { entry: 'x.example' });
      await org.client.inboxes.delete(gone.inboxId);
      const rows = await server.service.runtime.services.db
        .selectFrom('access_list_entries')
        .select('entry')
        .where('inbox_id', '=', gone.inboxId)
        .execute();
      expect(rows).toEqual([]);
    });
  });
});

/** Every route of lists, metrics, inbox events and scoped webhooks with keys of another pod, another inbox, and no permissions. */
describe.each(dialects)('%s: scope isolation of lists, metrics, inbox events and scoped webhooks', (dialect) => {
  let server: InboxTestServer;
  let orgKey: string;
  let a1: string;
  let p1: string;
  let hook: string;
  const keys: Record<'p2' | 'a2' | 'none' | 'p1' | 'a1', string> = { p2: '', a2: '', none: '', p1: '', a1: '' };

  beforeAll(async () => {
    server = await startInboxServer({ dialect });
    const org = await organization(server);
    orgKey = org.key;
    const pod1 = await org.client.pods.create({ name: 'p1' });
    const pod2 = await org.client.pods.create({ name: 'p2' });
    p1 = pod1.podId;
    a1 = (await org.client.pods.inboxes.create(p1, { username: unique('a1') })).inboxId;
    const a2 = (await org.client.pods.inboxes.create(pod2.podId, { username: unique('a2') })).inboxId;
    await org.client.inboxes.lists.create(a1, 'receive', 'block', { entry: 'x.example' });
    await org.client.pods.lists.create(p1, 'send', 'allow', { entry: 'y.example' });
    hook = (
      await org.client.inboxes.webhooks.create(a1, { url: 'https://example.org/h', eventTypes: ['message.received'] })
    ).webhookId;
    keys.p2 = secretOf(await org.client.pods.apiKeys.create(pod2.podId, { name: 'p2' }));
    keys.a2 = secretOf(await org.client.inboxes.apiKeys.create(a2, { name: 'a2' }));
    keys.p1 = secretOf(await org.client.pods.apiKeys.create(p1, { name: 'p1' }));
    keys.a1 = secretOf(await org.client.inboxes.apiKeys.create(a1, { name: 'a1' }));
    keys.none = secretOf(await org.client.apiKeys.create({ name: 'none', permissions: {} }));
  });
  afterAll(async () => server?.close());

  const routes = (): [string, string, unknown?][] => [
    ['GET', `/v0/inboxes/${enc(a1)}/lists/receive/block`],
    ['GET', `/v0/inboxes/${enc(a1)}/lists/receive/block/x.example`],
    ['POST', `/v0/inboxes/${enc(a1)}/lists/receive/block`, { entry: 'z.example' }],
    ['DELETE', `/v0/inboxes/${enc(a1)}/lists/receive/block/x.example`],
    ['GET', `/v0/pods/${enc(p1)}/lists/send/allow`],
    ['POST', `/v0/pods/${enc(p1)}/lists/send/allow`, { entry: 'z.example' }],
    ['DELETE', `/v0/pods/${enc(p1)}/lists/send/allow/y.example`],
    ['GET', `/v0/inboxes/${enc(a1)}/metrics/events`],
    ['GET', `/v0/pods/${enc(p1)}/metrics/usage`],
    ['GET', `/v0/inboxes/${enc(a1)}/events`],
    ['GET', `/v0/inboxes/${enc(a1)}/webhooks`],
    ['GET', `/v0/inboxes/${enc(a1)}/webhooks/${hook}`],
    ['PATCH', `/v0/inboxes/${enc(a1)}/webhooks/${hook}/headers`, { headers: { 'X-A': '1' } }],
    ['GET', `/v0/pods/${enc(p1)}/webhooks`],
    ['GET', `/v0/webhooks/${hook}/headers`],
  ];

  for (const who of ['p2', 'a2'] as const) {
    it(`a key of another ${who === 'p2' ? 'pod' : 'inbox'}: 404 on every route, never data`, async () => {
      for (const [method, path, body] of routes()) {
        const res = await call(server.url, keys[who], method, path, body);
        expect({ path, method, status: res.status }).toEqual({ path, method, status: 404 });
        expect(Object.keys(res.body)).toEqual(['error']);
      }
      // Organization-level lists and metrics are not in a narrower key's scope either.
      expectError(await call(server.url, keys[who], 'GET', '/v0/lists/send/block'), 404, 'not_found', 'LIST_NOT_FOUND');
      expectError(
        await call(server.url, keys[who], 'GET', '/v0/metrics/events'),
        404,
        'not_found',
        'METRICS_NOT_FOUND',
      );
    });
  }

  it('a key without permissions: 403 on every route of its own organization', async () => {
    for (const [method, path, body] of routes()) {
      const res = await call(server.url, keys.none, method, path, body);
      expect({ path, method, status: res.status }).toEqual({ path, method, status: 403 });
    }
    expectError(
      await call(server.url, keys.none, 'GET', '/v0/lists/send/block'),
      403,
      'permission_error',
      'PERMISSION_DENIED',
    );
  });

  it('keys of the pod and of the inbox reach their own lists, metrics and webhooks', async () => {
    for (const key of [keys.p1, keys.a1]) {
      expect(
        (await call(server.url, key, 'GET', `/v0/inboxes/${enc(a1)}/lists/receive/block`)).body.entries.map(
          (e: { entry: string }) => e.entry,
        ),
      ).toEqual(['x.example']);
      expect(
        (await call(server.url, key, 'GET', `/v0/inboxes/${enc(a1)}/metrics/events?event_types=message.sent`)).status,
      ).toBe(200);
      expect((await call(server.url, key, 'GET', `/v0/inboxes/${enc(a1)}/webhooks/${hook}`)).body.webhook_id).toBe(
        hook,
      );
    }
    expect(
      (await call(server.url, keys.p1, 'GET', `/v0/pods/${enc(p1)}/lists/send/allow`)).body.entries.map(
        (e: { entry: string }) => e.entry,
      ),
    ).toEqual(['y.example']);
    // An inbox key does not reach its pod's lists.
    expectError(
      await call(server.url, keys.a1, 'GET', `/v0/pods/${enc(p1)}/lists/send/allow`),
      404,
      'not_found',
      'LIST_NOT_FOUND',
    );
    expect((await call(server.url, orgKey, 'GET', `/v0/pods/${enc(p1)}/metrics/usage`)).status).toBe(200);
  });
});
