import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { createHook } from '../support/inbox-webhooks.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { organization, unique } from './fixtures.js';

/**
 * Every way labels change (messages.update, messages.batchUpdate, threads.update, a thread moved to
 * the trash) goes through the mail store's one labels service (mailstore/labels.service.ts), so each
 * writes the same label.added / label.removed events (inboxes.events.list), and each shows on a
 * webhook and on a WebSocket exactly as messages.update does. Before, only messages.update wrote them.
 */

const isLabelEvent = (type: string) => type.startsWith('label.');

type Org = Awaited<ReturnType<typeof organization>>;

/** The label events of an inbox as (message, type, label), oldest first. */
async function labelEvents(org: Org, inboxId: string): Promise<string[]> {
  const { events } = await org.client.inboxes.events.list(inboxId, { ascending: true, limit: 100 });
  return events.map((e) => `${e.messageId} ${e.eventType} ${e.label}`);
}

describe.each(dialects)('label changes on every path (%s)', (dialect) => {
  let server: InboxTestServer;
  let receiver: WebhookReceiver;
  let org: Org;
  let inbox: string;
  let peer: string;
  let ws: WebSocket;
  const frames: { event_type?: string }[] = [];

  beforeAll(async () => {
    server = await startInboxServer({ dialect, jobPollMs: 20 });
    receiver = await startWebhookReceiver();
    org = await organization(server, [unique('lbl'), unique('peer')]);
    [inbox, peer] = org.inboxes as [string, string];
    const tenant = { key: org.key, organizationId: org.organizationId, podId: '', inboxId: inbox };
    await createHook(server, receiver, tenant, '/all');
    ws = new WebSocket(`${server.url.replace('http', 'ws')}/v0?api_key=${org.key}`);
    ws.on('message', (data) => frames.push(JSON.parse(data.toString()) as { event_type?: string }));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    ws.send(JSON.stringify({ type: 'subscribe' }));
    await waitFor(() => frames.some((f) => (f as { type?: string }).type === 'subscribed'), 'the subscription');
  });

  afterAll(async () => {
    ws?.terminate();
    await receiver?.stop();
    await server?.close();
  });

  function waitFor(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const started = Date.now();
      const poll = () => {
        if (check()) return resolve();
        if (Date.now() - started > timeoutMs) return reject(new Error(`timed out waiting for ${what}`));
        setTimeout(poll, 10);
      };
      poll();
    });
  }

  /** What a webhook and a WebSocket saw of `change`: the label event types that arrived before a marker message did. */
  async function seenOutside(change: () => Promise<unknown>): Promise<{ webhook: string[]; websocket: string[] }> {
    const hooksBefore = receiver.received.length;
    const framesBefore = frames.length;
    await change();
    // A marker after the change: whatever the change announced arrives before its message.received.
    const subject = unique('marker');
    await org.client.inboxes.messages.send(peer, { to: inbox, subject, text: 'marker' });
    const markerIn = (body: string) => body.includes(subject) && body.includes('"message.received"');
    await waitFor(() => receiver.received.slice(hooksBefore).some((r) => markerIn(r.body)), 'the marker by webhook');
    await waitFor(
      () => frames.slice(framesBefore).some((f) => markerIn(JSON.stringify(f))),
      'the marker on the WebSocket',
    );
    const until = <T>(list: T[], body: (t: T) => string) => {
      const end = list.findIndex((t) => markerIn(body(t)));
      return list.slice(0, end);
    };
    return {
      webhook: until(receiver.received.slice(hooksBefore), (r) => r.body)
        .map((r) => (JSON.parse(r.body) as { event_type: string }).event_type)
        .filter(isLabelEvent),
      websocket: until(frames.slice(framesBefore), (f) => JSON.stringify(f))
        .flatMap((f) => (f.event_type ? [f.event_type] : []))
        .filter(isLabelEvent),
    };
  }

  it('writes the same label events through messages.update, messages.batchUpdate and threads.update', async () => {
    const one = await org.client.inboxes.messages.send(inbox, { to: peer, subject: unique('one'), text: 'one' });
    const two = await org.client.inboxes.messages.send(inbox, { to: peer, subject: unique('two'), text: 'two' });
    const three = await org.client.inboxes.messages.send(inbox, { to: peer, subject: unique('three'), text: '3' });
    const before = await labelEvents(org, inbox);

    const viaUpdate = await seenOutside(() =>
      org.client.inboxes.messages.update(inbox, one.messageId, { addLabels: ['urgent'] }),
    );
    const viaBatch = await seenOutside(() =>
      org.client.inboxes.messages.batchUpdate(inbox, {
        messageIds: [one.messageId, two.messageId],
        addLabels: ['reviewed'],
        removeLabels: ['urgent'],
      }),
    );
    const viaThread = await seenOutside(() =>
      org.client.inboxes.threads.update(inbox, three.threadId, { addLabels: ['archived'], removeLabels: ['reviewed'] }),
    );

    expect((await labelEvents(org, inbox)).slice(before.length)).toEqual([
      `${one.messageId} label.added urgent`,
      `${one.messageId} label.added reviewed`,
      `${one.messageId} label.removed urgent`,
      `${two.messageId} label.added reviewed`,
      `${three.messageId} label.added archived`,
    ]);
    // Outside the service, the three paths look alike: what messages.update shows, the others show.
    expect(viaBatch).toEqual(viaUpdate);
    expect(viaThread).toEqual(viaUpdate);
    // The threads' labels follow their messages' on every path.
    expect((await org.client.inboxes.threads.get(inbox, one.threadId)).labels).toContain('reviewed');
    expect((await org.client.inboxes.threads.get(inbox, three.threadId)).labels).toEqual(
      expect.arrayContaining(['archived']),
    );
  });

  it('writes label.added trash for each message a thread delete moves to the trash, and nothing for a change that changes nothing', async () => {
    const sent = await org.client.inboxes.messages.send(inbox, { to: peer, subject: unique('bin'), text: 'bin' });
    const before = await labelEvents(org, inbox);
    await org.client.inboxes.messages.update(inbox, sent.messageId, { addLabels: ['kept'] });
    const kept = await labelEvents(org, inbox);
    expect(kept.slice(before.length)).toEqual([`${sent.messageId} label.added kept`]);
    await org.client.inboxes.messages.batchUpdate(inbox, { messageIds: [sent.messageId], addLabels: ['kept'] });
    await org.client.inboxes.threads.update(inbox, sent.threadId, { removeLabels: ['never-there'] });
    expect(await labelEvents(org, inbox)).toEqual(kept);
    await org.client.inboxes.threads.delete(inbox, sent.threadId);
    expect((await labelEvents(org, inbox)).slice(kept.length)).toEqual([`${sent.messageId} label.added trash`]);
    // Deleting it again removes it for good: no label event for that.
    await org.client.inboxes.threads.delete(inbox, sent.threadId);
    expect((await labelEvents(org, inbox)).slice(kept.length)).toEqual([`${sent.messageId} label.added trash`]);
  });
});
