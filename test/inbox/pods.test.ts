import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { expectWireShape } from '../support/sdk-shapes.js';
import { call, expectError, organization, unique } from './fixtures.js';

describe.each(dialects)('pods (%s)', (dialect) => {
  let server: InboxTestServer;
  beforeAll(async () => {
    server = await startInboxServer({ dialect });
  });
  afterAll(async () => server?.close());

  it('creates, lists, gets and deletes pods through the SDK', async () => {
    const org = await organization(server);
    const pod = await org.client.pods.create({ name: 'sales', clientId: 'sales-1' });
    expect(pod).toEqual({
      podId: expect.any(String),
      name: 'sales',
      clientId: 'sales-1',
      createdAt: expect.any(Date),
      updatedAt: expect.any(Date),
    });
    // The same client_id: the same pod.
    expect((await org.client.pods.create({ name: 'other', clientId: 'sales-1' })).podId).toBe(pod.podId);
    const listed = await org.client.pods.list();
    expect(listed.count).toBe(2); // the default pod and this one
    expect(listed.pods.map((p) => p.podId)).toContain(pod.podId);
    expect(await org.client.pods.get(pod.podId)).toEqual(pod);
    await org.client.pods.delete(pod.podId);
    const gone = await call(server.url, org.key, 'GET', `/v0/pods/${pod.podId}`);
    expectError(gone, 404, 'not_found', 'POD_NOT_FOUND');
  });

  it('keeps pods apart: inboxes and threads of a pod route are that pod only', async () => {
    const org = await organization(server);
    const a = await org.client.pods.create({ name: 'a' });
    const b = await org.client.pods.create({ name: 'b' });
    const ia = await org.client.pods.inboxes.create(a.podId, { username: unique('pa'), displayName: 'A' });
    const ib = await org.client.pods.inboxes.create(b.podId, { username: unique('pb') });
    expect(ia).toMatchObject({ podId: a.podId, displayName: 'A' });
    expect((await org.client.pods.inboxes.list(a.podId)).inboxes.map((i) => i.inboxId)).toEqual([ia.inboxId]);
    expect((await org.client.pods.inboxes.get(a.podId, ia.inboxId)).inboxId).toBe(ia.inboxId);
    expectError(
      await call(server.url, org.key, 'GET', `/v0/pods/${a.podId}/inboxes/${ib.inboxId}`),
      404,
      'not_found',
      'INBOX_NOT_FOUND',
    );
    expect((await org.client.pods.inboxes.update(a.podId, ia.inboxId, { displayName: 'A2' })).displayName).toBe('A2');
    const sent = await org.client.inboxes.messages.send(ia.inboxId, { to: ib.inboxId, subject: 'hello', text: 'hi' });
    const threadsA = await org.client.pods.threads.list(a.podId);
    expect(threadsA.threads.map((t) => t.inboxId)).toEqual([ia.inboxId]);
    const threadsB = await org.client.pods.threads.list(b.podId);
    expect(threadsB.threads.map((t) => t.inboxId)).toEqual([ib.inboxId]);
    expect((await org.client.pods.threads.get(a.podId, sent.threadId)).threadId).toBe(sent.threadId);
    expectError(
      await call(server.url, org.key, 'GET', `/v0/pods/${b.podId}/threads/${sent.threadId}`),
      404,
      'not_found',
      'THREAD_NOT_FOUND',
    );
    // pods.threads.update labels every message of the pod's thread; another pod's thread is not found.
    const updated = await org.client.pods.threads.update(a.podId, sent.threadId, { addLabels: ['triaged'] });
    expectWireShape(
      'UpdateThreadResponse',
      (
        await call(server.url, org.key, 'PATCH', `/v0/pods/${a.podId}/threads/${sent.threadId}`, {
          add_labels: ['triaged'],
        })
      ).body,
    );
    expect(updated.labels).toContain('triaged');
    expect((await org.client.threads.get(sent.threadId)).messages.every((m) => m.labels.includes('triaged'))).toBe(
      true,
    );
    expectError(
      await call(server.url, org.key, 'PATCH', `/v0/pods/${b.podId}/threads/${sent.threadId}`, { add_labels: ['x'] }),
      404,
      'not_found',
      'THREAD_NOT_FOUND',
    );
    expectError(
      await call(server.url, org.key, 'PATCH', `/v0/pods/${a.podId}/threads/${sent.threadId}`, { add_labels: 42 }),
      400,
      'validation_error',
      'INVALID_VALUE',
    );
    const stranger = await organization(server);
    expectError(
      await call(server.url, stranger.key, 'PATCH', `/v0/pods/${a.podId}/threads/${sent.threadId}`, {
        add_labels: ['x'],
      }),
      404,
      'not_found',
      'POD_NOT_FOUND',
    );
    // A pod with inboxes is not deleted (decision 0018): 409.
    expectError(await call(server.url, org.key, 'DELETE', `/v0/pods/${a.podId}`), 409, 'conflict', 'POD_NOT_EMPTY');
    await org.client.pods.inboxes.delete(a.podId, ia.inboxId);
    await org.client.pods.delete(a.podId);
  });
});
