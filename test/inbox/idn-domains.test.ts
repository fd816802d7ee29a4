import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { call, enc, eventsOf, expectError, organization, parseRaw, unique } from './fixtures.js';

/**
 * An internationalized local domain, configured in Unicode (`bücher.test`), reached through the
 * API in either spelling: inbox creation, local delivery and bounces must treat `xn--bcher-kva.test`
 * and `BÜCHER.test` as the configured domain, as DNS does, and the wire stays ASCII.
 */
describe.each(dialects)('%s: an internationalized local domain', (dialect) => {
  let server: InboxTestServer;
  let org: Awaited<ReturnType<typeof organization>>;
  let sender: string;

  beforeAll(async () => {
    server = await startInboxServer({ dialect, env: { INBOX_DOMAINS: 'inbox.test,bücher.test' } });
    org = await organization(server, [unique('sender')]);
    sender = org.inboxes[0] as string;
  });
  afterAll(async () => {
    await server?.close();
  });

  it('creates an inbox on the domain from its xn-- and its upper-case spelling, as configured', async () => {
    for (const domain of ['xn--bcher-kva.test', 'BÜCHER.test', 'bücher.test']) {
      const username = unique('agent');
      const reply = await call(server.url, org.key, 'POST', '/v0/inboxes', { username, domain });
      expect(reply.status, domain).toBe(201);
      expect((reply.body as { inbox_id: string }).inbox_id).toBe(`${username}@bücher.test`);
    }
    expectError(
      await call(server.url, org.key, 'POST', '/v0/inboxes', {
        username: unique('agent'),
        domain: 'xn--other-kva.test',
      }),
      400,
      'validation_error',
      'DOMAIN_NOT_ALLOWED',
      'domain',
    );
  });

  it('delivers locally to an address written in either spelling, and bounces an unknown one locally', async () => {
    const username = unique('reader');
    expect((await call(server.url, org.key, 'POST', '/v0/inboxes', { username, domain: 'bücher.test' })).status).toBe(
      201,
    );
    const inboxId = `${username}@bücher.test`;
    for (const to of [`${username}@xn--bcher-kva.test`, `${username.toUpperCase()}@BÜCHER.test`, inboxId]) {
      const sent = await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(sender)}/messages/send`, {
        to,
        subject: `to ${to}`,
        text: 'Hallo',
      });
      expect(sent.status, to).toBe(200);
    }
    const list = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(inboxId)}/messages`);
    expect(list.status).toBe(200);
    const messages = (list.body as { messages: { subject: string; labels: string[] }[] }).messages;
    expect(messages.map((m) => m.subject).sort()).toEqual(
      [`to ${inboxId}`, `to ${username}@xn--bcher-kva.test`, `to ${username.toUpperCase()}@BÜCHER.test`].sort(),
    );
    expect(messages.every((m) => m.labels.includes('received'))).toBe(true);

    // Nobody there: a local bounce, not "external delivery disabled".
    const nobody = `${unique('nobody')}@xn--bcher-kva.test`;
    const bounced = await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(sender)}/messages/send`, {
      to: nobody,
      text: 'anyone?',
    });
    expect(bounced.status).toBe(200);
    const bounces = await eventsOf(server, { type: 'message.bounced', inboxId: sender });
    expect(bounces.some((e) => (e.bounce.recipients as { address: string }[]).some((r) => r.address === nobody))).toBe(
      true,
    );
  });

  it('names one inbox once however its address is spelled across to, cc and bcc (one copy, no 500)', async () => {
    const username = unique('twice');
    expect((await call(server.url, org.key, 'POST', '/v0/inboxes', { username, domain: 'bücher.test' })).status).toBe(
      201,
    );
    const inboxId = `${username}@bücher.test`;
    const reader = unique('reader');
    expect((await call(server.url, org.key, 'POST', '/v0/inboxes', { username: reader })).status).toBe(201);
    const sent = await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(sender)}/messages/send`, {
      to: [inboxId, `${username}@xn--bcher-kva.test`],
      cc: [`${reader}@inbox.test`],
      // Fullwidth letters map to the same domain (UTS 46), as DNS would resolve them.
      bcc: [`${reader}@ｉｎｂｏｘ.test`, `${username}@BÜCHER.test`],
      subject: 'spelled many ways',
      text: 'once each',
    });
    expect(sent.status).toBe(200);
    for (const id of [inboxId, `${reader}@inbox.test`]) {
      const list = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(id)}/messages`);
      expect(
        (list.body as { messages: { subject: string }[] }).messages.filter((m) => m.subject === 'spelled many ways'),
        id,
      ).toHaveLength(1);
    }
    // The headers keep what the sender wrote (one copy was delivered all the same).
    const copy = await call(
      server.url,
      org.key,
      'GET',
      `/v0/inboxes/${enc(sender)}/messages/${enc((sent.body as { message_id: string }).message_id)}`,
    );
    expect((copy.body as { to: string[] }).to).toEqual([inboxId, `${username}@xn--bcher-kva.test`]);
    // A fullwidth domain is stored as the domain the mail went to.
    expect((copy.body as { bcc: string[] }).bcc).toEqual([`${reader}@inbox.test`, `${username}@bücher.test`]);
    const alone = await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(sender)}/messages/send`, {
      to: `${reader}@ｉｎｂｏｘ.test`,
      text: 'fullwidth',
    });
    const stored = await call(
      server.url,
      org.key,
      'GET',
      `/v0/inboxes/${enc(sender)}/messages/${enc((alone.body as { message_id: string }).message_id)}`,
    );
    expect((stored.body as { to: string[] }).to).toEqual([`${reader}@inbox.test`]);
  });

  it('sends from an inbox on the domain with ASCII headers: From and Message-ID in their xn-- form', async () => {
    const username = unique('writer');
    const created = await call(server.url, org.key, 'POST', '/v0/inboxes', { username, domain: 'bücher.test' });
    const inboxId = (created.body as { inbox_id: string }).inbox_id;
    const sent = await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(inboxId)}/messages/send`, {
      to: sender,
      subject: 'from the IDN inbox',
      text: 'Grüße',
    });
    expect(sent.status).toBe(200);
    const { message_id: messageId } = sent.body as { message_id: string };
    expect(messageId).toMatch(/@xn--bcher-kva\.test>$/);
    const raw = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(inboxId)}/messages/${enc(messageId)}/raw`);
    expect(raw.status).toBe(200);
    const bytes = Buffer.from(await (await fetch((raw.body as { download_url: string }).download_url)).arrayBuffer());
    const head = bytes.toString('latin1').split('\r\n\r\n')[0] as string;
    expect(head).toMatch(/^[\x20-\x7e\r\n\t]*$/);
    expect(head).toContain(`From: ${username}@xn--bcher-kva.test`);
    const parsed = await parseRaw(bytes);
    expect(parsed.messageId).toBe(messageId);
    // The recipient's copy threads and reads back as usual.
    const received = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(sender)}/messages/${enc(messageId)}`);
    expect(received.status).toBe(200);
    expect((received.body as { text: string }).text).toBe('Grüße');
  });
});
