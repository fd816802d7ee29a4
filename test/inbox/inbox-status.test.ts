import { AgentMailError } from 'agentmail';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../src/platform/clock.js';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { bearerKey, call, enc, expectError, organization, unique } from './fixtures.js';

describe.each(dialects)('%s: inbox status (active, paused)', (dialect) => {
  const clock = fixedClock(new Date('2030-03-01T08:00:00.000Z'));
  let server: InboxTestServer;
  let org: Awaited<ReturnType<typeof organization>>;
  let paused: string;
  let peer: string;

  beforeAll(async () => {
    server = await startInboxServer({ dialect, clock });
    org = await organization(server, [unique('paused'), unique('peer')]);
    [paused, peer] = org.inboxes as [string, string];
  });
  afterAll(async () => {
    await server?.close();
  });

  const patch = (key: string, inbox: string, body: unknown) =>
    call(server.url, key, 'PATCH', `/v0/inboxes/${enc(inbox)}`, body);
  const send = (inbox: string, body: unknown = { to: peer, subject: 'hello', text: 'x' }) =>
    call(server.url, org.key, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, body);

  it('pauses an inbox: it refuses every send (403 INBOX_PAUSED), drafts included, and still receives', async () => {
    const before = await org.client.inboxes.messages.send(peer, { to: paused, subject: 'before', text: 'x' });
    const res = await patch(org.key, paused, { status: 'paused' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ inbox_id: paused, status: 'paused' });
    expect((await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(paused)}`)).body.status).toBe('paused');
    const listed = await call(server.url, org.key, 'GET', '/v0/inboxes');
    expect(listed.body.inboxes.find((i: { inbox_id: string }) => i.inbox_id === paused).status).toBe('paused');
    expect(listed.body.inboxes.find((i: { inbox_id: string }) => i.inbox_id === peer).status).toBeUndefined();

    expectError(await send(paused), 403, 'permission_error', 'INBOX_PAUSED', 'inbox_id');
    const received = await org.client.inboxes.messages.list(paused);
    const parent = received.messages.find((m) => m.subject === 'before')?.messageId as string;
    expect(parent).toBeDefined();
    const base = `/v0/inboxes/${enc(paused)}/messages/${enc(parent)}`;
    for (const [path, body] of [
      [`${base}/reply`, { text: 'x' }],
      [`${base}/reply-all`, { text: 'x' }],
      [`${base}/forward`, { to: peer, text: 'x' }],
    ] as const)
      expectError(await call(server.url, org.key, 'POST', path, body), 403, 'permission_error', 'INBOX_PAUSED');
    // The SDK gets the same answer (its error class for 403).
    const err = await org.client.inboxes.messages
      .send(paused, { to: peer, text: 'x', attachments: [{ url: 'http://127.0.0.1:9/never-fetched' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentMailError);
    expect((err as AgentMailError).statusCode).toBe(403);
    expect((err as AgentMailError).body).toMatchObject({ error: { details: { code: 'INBOX_PAUSED' } } });

    // Drafts are written as before; sending one is refused, now or at send_at (failed, not retried).
    const draft = await org.client.inboxes.drafts.create(paused, { to: [peer], subject: 'draft', text: 'x' });
    expectError(
      await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(paused)}/drafts/${draft.draftId}/send`, {}),
      403,
      'permission_error',
      'INBOX_PAUSED',
    );
    const scheduled = await org.client.inboxes.drafts.create(paused, {
      to: [peer],
      subject: 'scheduled',
      text: 'x',
      sendAt: new Date(clock.now().getTime() + 60_000),
    });
    clock.advance(61_000);
    await server.service.runtime.runner.drain();
    const failed = await org.client.inboxes.drafts.get(paused, scheduled.draftId);
    expect(failed.sendStatus).toBe('failed');

    // Mail to it still arrives.
    await org.client.inboxes.messages.send(peer, { to: paused, subject: 'while paused', text: 'x' });
    const now = await org.client.inboxes.messages.list(paused);
    expect(now.messages.map((m) => m.subject)).toContain('while paused');
    expect(before.messageId).toBeDefined();

    // Active again: it sends.
    const resumed = await patch(org.key, paused, { status: 'active' });
    expect(resumed.status).toBe(200);
    expect(resumed.body.status).toBeUndefined();
    expect((await send(paused)).status).toBe(200);
    expect((await org.client.inboxes.drafts.send(paused, draft.draftId, {})).messageId).toBeDefined();
  });

  it('creates an inbox paused, at the organization and pod routes, and pauses through the pod route', async () => {
    const created = await call(server.url, org.key, 'POST', '/v0/inboxes', {
      username: unique('born'),
      status: 'paused',
    });
    expect(created.status).toBe(201);
    expect(created.body.status).toBe('paused');
    expectError(await send(created.body.inbox_id), 403, 'permission_error', 'INBOX_PAUSED');
    const pod = await org.client.pods.create({ name: unique('pod') });
    const inPod = await call(server.url, org.key, 'POST', `/v0/pods/${pod.podId}/inboxes`, { username: unique('p') });
    expect(inPod.body.status).toBeUndefined();
    const viaPod = await call(
      server.url,
      org.key,
      'PATCH',
      `/v0/pods/${pod.podId}/inboxes/${enc(inPod.body.inbox_id)}`,
      { status: 'paused' },
    );
    expect(viaPod.body.status).toBe('paused');
    expect((await org.client.inboxes.get(inPod.body.inbox_id)).inboxId).toBe(inPod.body.inbox_id);
  });

  it('answers bad input and keys out of scope in the error format', async () => {
    expectError(await patch(org.key, peer, { status: 'sleeping' }), 400, 'validation_error', 'INVALID_VALUE', 'status');
    expectError(await patch(org.key, peer, { status: null }), 400, 'validation_error', 'INVALID_VALUE', 'status');
    expectError(await patch(org.key, peer, {}), 400, 'validation_error', 'EMPTY_UPDATE');
    expectError(
      await call(server.url, org.key, 'POST', '/v0/inboxes', { username: unique('x'), status: 'off' }),
      400,
      'validation_error',
      'INVALID_VALUE',
      'status',
    );
    const other = await organization(server, [unique('other')]);
    expectError(await patch(other.key, peer, { status: 'paused' }), 404, 'not_found', 'INBOX_NOT_FOUND');
    const inboxKey = bearerKey(await org.client.inboxes.apiKeys.create(paused, { name: 'one inbox' }));
    expectError(await patch(inboxKey.apiKey, peer, { status: 'paused' }), 404, 'not_found', 'INBOX_NOT_FOUND');
    const readOnly = bearerKey(
      await org.client.apiKeys.create({ name: 'read', permissions: { inboxRead: true, messageSend: true } }),
    );
    expectError(await patch(readOnly.apiKey, peer, { status: 'paused' }), 403, 'permission_error', 'PERMISSION_DENIED');
    expect((await org.client.inboxes.get(peer)).inboxId).toBe(peer);
    expect((await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(peer)}`)).body.status).toBeUndefined();
  });
});
