import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/platform/config/config.js';
import { inboxConfigSpec } from '../../src/inbox/inbox.config.js';
import { perProcessStateWarnings } from '../../src/inbox/service.js';
import { createHook, newTenant } from '../support/inbox-webhooks.js';
import {
  createInboxTestDatabase,
  dialects,
  startInboxServer,
  type InboxTestDatabase,
  type InboxTestServer,
} from '../support/inbox-server.js';
import { deliver, storedMessageId } from '../support/smtp-client.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { simpleMessage, smtpPort } from './smtp-inbound.helpers.js';

/** Longer than any test here: work that gets done was woken, not found by a poll. */
const NO_POLL = 600_000;

describe.each(dialects)('%s: one role per process', (dialect) => {
  let database: InboxTestDatabase;
  let api: InboxTestServer;
  let worker: InboxTestServer;
  let smtp: InboxTestServer;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    database = createInboxTestDatabase(dialect);
    api = await startInboxServer({ database, jobPollMs: NO_POLL, env: { INBOX_ROLES: 'api' } });
    worker = await startInboxServer({ database, jobPollMs: NO_POLL, env: { INBOX_ROLES: 'worker' } });
    smtp = await startInboxServer({ database, jobPollMs: NO_POLL, env: { INBOX_ROLES: 'smtp' } });
    receiver = await startWebhookReceiver();
  });
  afterAll(async () => {
    await smtp?.close();
    await worker?.close();
    await api?.close();
    await receiver?.stop();
    await database?.drop();
  });

  it('serves /healthz, /readyz and /metrics in every role: the API on its port (no public /metrics), the others on a management port', async () => {
    expect(api.service.managementUrl).toBeUndefined();
    expect((await fetch(`${api.url}/healthz`)).status).toBe(200);
    const hidden = await fetch(`${api.url}/metrics`);
    expect(hidden.status).toBe(404);
    expect(((await hidden.json()) as { error: { type: string } }).error.type).toBe('not_found');
    for (const server of [worker, smtp]) {
      expect(server.service.app).toBeUndefined();
      const base = server.service.managementUrl?.replace('localhost', '127.0.0.1');
      expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(await (await fetch(`${base}/healthz`)).json()).toEqual({ status: 'ok' });
      expect(await (await fetch(`${base}/readyz`)).json()).toEqual({ status: 'ready', checks: { database: 'ok' } });
      const metrics = await fetch(`${base}/metrics`);
      expect(metrics.status).toBe(200);
      expect(await metrics.text()).toContain('process_cpu_user_seconds_total');
      const other = await fetch(`${base}/v0/inboxes`);
      expect(other.status).toBe(404);
      expect(((await other.json()) as { error: { type: string } }).error.type).toBe('not_found');
    }
  });

  it('mail taken by the smtp-only process wakes the worker of another process through the database, not a poll', async () => {
    const tenant = await newTenant(api, 'woken');
    await createHook(api, receiver, tenant, '/received', { event_types: ['message.received'] });
    const result = await deliver(smtpPort(smtp), {
      from: 'someone@example.org',
      to: [tenant.inboxId],
      message: simpleMessage({ to: tenant.inboxId, subject: 'wake up' }),
    });
    const messageId = storedMessageId(result.data);
    await receiver.waitFor(1, 10_000);
    const body = JSON.parse(receiver.received[0]?.body ?? '{}') as {
      event_type: string;
      message: { message_id: string };
    };
    expect([body.event_type, body.message.message_id]).toEqual(['message.received', messageId]);
  });

  it('a send through the api-only process wakes the worker of another process', async () => {
    const tenant = await newTenant(api, 'sender');
    const before = receiver.received.length;
    await createHook(api, receiver, tenant, '/sent', { event_types: ['message.sent'] });
    await api
      .client(tenant.key)
      .inboxes.messages.send(tenant.inboxId, { to: [tenant.inboxId], subject: 'to myself', text: 'hi' });
    await receiver.waitFor(before + 1, 10_000);
    expect(receiver.received.slice(before).map((r) => r.path)).toContain('/sent');
  });
});

describe('warnings at start about limits kept per process', () => {
  const config = (env: Record<string, string>) => loadConfig(inboxConfigSpec, env);
  it('warns on PostgreSQL with the API and no Redis, and on SQLite with the roles split; not otherwise', () => {
    const messages = (env: Record<string, string>, dialect: 'sqlite' | 'postgres') =>
      perProcessStateWarnings(config(env), dialect).map((w) => w.message);
    expect(messages({}, 'postgres')).toEqual([expect.stringMatching(/rate limit is counted per process/)]);
    expect(messages({ REDIS_URL: 'redis://127.0.0.1:6379' }, 'postgres')).toEqual([]);
    expect(messages({ INBOX_ROLES: 'worker' }, 'postgres')).toEqual([]);
    expect(messages({}, 'sqlite')).toEqual([]);
    expect(messages({ INBOX_ROLES: 'api,worker' }, 'sqlite')).toEqual([
      expect.stringMatching(/roles split across processes on SQLite/),
    ]);
  });
});
