import type { EventType } from '../../src/inbox/core/events.js';
import type { InboxTestServer } from './inbox-server.js';
import type { WebhookReceiver } from './webhook-receiver.js';

/** Helpers of the webhook suites: an organization with an inbox, events, webhooks, the delivery log. */

export interface Tenant {
  readonly key: string;
  readonly organizationId: string;
  readonly podId: string;
  readonly inboxId: string;
}

export async function newTenant(server: InboxTestServer, username?: string): Promise<Tenant> {
  const { key, organizationId, podId } = await server.createKey();
  const inbox = await server.client(key).inboxes.create(username ? { username } : {});
  return { key, organizationId, podId, inboxId: inbox.inboxId };
}

/** Emits an event as the messages service would (in a transaction), and wakes the worker. */
export async function emit(
  server: InboxTestServer,
  tenant: Tenant,
  eventType: EventType = 'message.received',
  options: { inboxId?: string; podId?: string; body?: Record<string, unknown> } = {},
): Promise<string> {
  const { services, runner } = server.service.runtime;
  const { eventIds } = await services.db.transaction().execute((trx) =>
    services.events.emitMany(trx, [
      {
        organizationId: tenant.organizationId,
        inboxId: options.inboxId ?? tenant.inboxId,
        podId: options.podId ?? tenant.podId,
        eventType,
        body: options.body ?? { send: { inbox_id: options.inboxId ?? tenant.inboxId, note: 'ünïcödé ✓' } },
      },
    ]),
  );
  runner.notify();
  return eventIds[0] as string;
}

export async function storedPayload(server: InboxTestServer, eventId: string): Promise<string> {
  return (
    await server.service.database.db
      .selectFrom('events')
      .select('payload')
      .where('event_id', '=', eventId)
      .executeTakeFirstOrThrow()
  ).payload;
}

export async function deliveryLog(server: InboxTestServer, key: string, webhookId: string, query = '') {
  const res = await fetch(`${server.url}/v0/webhooks/${webhookId}/deliveries${query}`, {
    headers: { authorization: `Bearer ${key}` },
  });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- test bodies are inspected freely
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

export async function createHook(
  server: InboxTestServer,
  receiver: WebhookReceiver,
  tenant: Tenant,
  path: string,
  body: Record<string, unknown> = {},
): Promise<{ webhook_id: string; secret: string }> {
  const res = await fetch(`${server.url}/v0/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: receiver.url(path), ...body }),
  });
  const hook = (await res.json()) as { webhook_id: string; secret: string };
  if (res.status !== 201) throw new Error(`create webhook: ${res.status} ${JSON.stringify(hook)}`);
  receiver.trust(path, hook.secret);
  return hook;
}

/** Statuses of the delivery jobs of one webhook, oldest first. */
export async function jobStates(server: InboxTestServer, webhookId: string): Promise<string[]> {
  const rows = await server.service.database.db
    .selectFrom('jobs')
    .select(['status', 'payload'])
    .where('queue', '=', 'webhook.deliver')
    .orderBy('id')
    .execute();
  return rows
    .filter((r) => (JSON.parse(r.payload) as { webhook_id: string }).webhook_id === webhookId)
    .map((r) => r.status);
}
