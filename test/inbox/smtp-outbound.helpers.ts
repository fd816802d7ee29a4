import { expect } from 'vitest';
import type { InboxTestServer } from '../support/inbox-server.js';
import type { WebhookReceiver } from '../support/webhook-receiver.js';
import { call, enc } from './fixtures.js';

/** Helpers of the outbound suites: webhooks for every event, the outbound jobs, polling. */

/** A webhook for every event type of the organization of `key`; returns its path on the receiver. */
export async function hookAll(
  server: InboxTestServer,
  receiver: WebhookReceiver,
  key: string,
  path: string,
): Promise<string> {
  const res = await call(server.url, key, 'POST', '/v0/webhooks', { url: receiver.url(path) });
  expect(res.status).toBe(201);
  receiver.trust(path, res.body.secret as string);
  return path;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- event payloads are checked key by key
export type Event = Record<string, any>;

/** The events a receiver got on `path`, each verified with both signature libraries. */
export function delivered(receiver: WebhookReceiver, path: string, type?: string): Event[] {
  const events = receiver.received
    .filter((r) => r.path === path)
    .map((r) => {
      expect({ svix: r.svix, standard: r.standard }).toEqual({ svix: true, standard: true });
      return JSON.parse(r.body) as Event;
    });
  return type ? events.filter((e) => e.event_type === type) : events;
}

export interface OutboundJobRow {
  readonly id: number;
  readonly status: string;
  readonly attempts: number;
  readonly run_at: string;
  readonly locked_until: string | null;
  readonly last_error: string | null;
  readonly payload: Event;
}

export async function outboundJobs(server: InboxTestServer): Promise<OutboundJobRow[]> {
  const rows = await server.service.database.db
    .selectFrom('jobs')
    .select(['id', 'status', 'attempts', 'run_at', 'locked_until', 'last_error', 'payload'])
    .where('queue', '=', 'mail.outbound')
    .orderBy('id')
    .execute();
  return rows.map((r) => ({
    ...r,
    id: Number(r.id),
    attempts: Number(r.attempts),
    payload: JSON.parse(r.payload) as Event,
  }));
}

const ORDER = ['message.sent', 'message.received', 'message.delivered', 'message.bounced', 'message.rejected'];

/** Events in the order of their cause: by timestamp, then sent, received, delivered, bounced (webhook jobs run in parallel). */
export function inOrder(events: Event[]): Event[] {
  const at = (e: Event) => String((e.send ?? e.delivery ?? e.bounce ?? e.reject ?? e.message)?.timestamp ?? '');
  return [...events].sort(
    (a, b) =>
      at(a).localeCompare(at(b)) || ORDER.indexOf(a.event_type as string) - ORDER.indexOf(b.event_type as string),
  );
}

/** Polls `check` until it returns a value other than undefined/false. */
export async function until<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  what: string,
  timeoutMs = 10_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The stored source of a message, through the API's signed download link. */
export async function rawSource(
  server: InboxTestServer,
  key: string,
  inboxId: string,
  messageId: string,
): Promise<Buffer> {
  const link = await call(server.url, key, 'GET', `/v0/inboxes/${enc(inboxId)}/messages/${enc(messageId)}/raw`);
  expect(link.status).toBe(200);
  return Buffer.from(await (await fetch(link.body.download_url as string)).arrayBuffer());
}

/** A mailauth `resolver` that answers TXT queries from `records` (name → text) and nothing else. */
export function txtResolver(
  records: Readonly<Record<string, string>>,
): (name: string, rrtype: string) => Promise<string[][]> {
  return async (name, rrtype) => {
    const text = records[name.toLowerCase().replace(/\.$/, '')];
    if (rrtype === 'TXT' && text !== undefined) return [[text]];
    throw Object.assign(new Error(`no ${rrtype} record for ${name}`), { code: 'ENOTFOUND' });
  };
}

/** Waits until the job of `index` has made another attempt and recorded its outcome. */
export async function nextAttempt(server: InboxTestServer, index = 0): Promise<OutboundJobRow> {
  const before = (await outboundJobs(server))[index]?.attempts ?? 0;
  server.service.runtime.runner.notify();
  return until(async () => {
    const job = (await outboundJobs(server))[index];
    return job && job.attempts > before && job.locked_until === null && job;
  }, 'another attempt');
}

/** Waits until the first outbound job has made its first attempt and recorded its outcome. */
export async function firstAttempt(server: InboxTestServer): Promise<OutboundJobRow> {
  return until(async () => {
    const [job] = await outboundJobs(server);
    return job !== undefined && job.attempts >= 1 && job.locked_until === null && job;
  }, 'the first attempt');
}
