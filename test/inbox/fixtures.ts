import { simpleParser, type ParsedMail } from 'mailparser';
import type { AgentMail } from 'agentmail';
import { expect } from 'vitest';
import type { InboxTestServer } from '../support/inbox-server.js';

/** A JSON request with `Authorization: Bearer <key>` over a real socket. */
export interface Reply {
  readonly status: number;
  readonly headers: Headers;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- wire bodies are checked key by key
  readonly body: any;
  readonly bytes: Buffer;
}

export async function call(
  base: string,
  key: string | undefined,
  method: string,
  path: string,
  body?: unknown,
): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (key !== undefined) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(new URL(path, base), {
    method,
    headers,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    redirect: 'manual',
  });
  const bytes = Buffer.from(await response.arrayBuffer());
  const text = bytes.toString('utf8');
  let parsed: unknown = text;
  if (/json/.test(response.headers.get('content-type') ?? '') && text) parsed = JSON.parse(text);
  return { status: response.status, headers: response.headers, body: parsed, bytes };
}

/** The spec's error envelope, exactly: `{ error: { type, message, details: { field?, code } } }`. */
export function expectError(reply: Reply, status: number, type: string, code: string, field?: string): void {
  expect({ status: reply.status, body: reply.body }).toMatchObject({
    status,
    body: { error: { type, details: { code } } },
  });
  expect(Object.keys(reply.body)).toEqual(['error']);
  expect(typeof reply.body.error.message).toBe('string');
  expect(reply.body.error.message.length).toBeGreaterThan(0);
  if (field !== undefined) expect(reply.body.error.details.field).toBe(field);
  expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
}

export const enc = encodeURIComponent;
export const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');

/** The events the service recorded (the outbox webhooks deliver from), oldest first. */
export async function eventsOf(
  server: InboxTestServer,
  filter: { type?: string; inboxId?: string } = {},
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- event payloads are checked key by key
): Promise<any[]> {
  let q = server.service.runtime.services.db
    .selectFrom('events')
    .select(['payload', 'event_type', 'inbox_id', 'organization_id', 'created_at'])
    .orderBy('created_at')
    .orderBy('event_id');
  if (filter.type) q = q.where('event_type', '=', filter.type);
  if (filter.inboxId) q = q.where('inbox_id', '=', filter.inboxId);
  return (await q.execute()).map((r) => ({
    ...(JSON.parse(r.payload) as object),
    _organization_id: r.organization_id,
    _inbox_id: r.inbox_id,
  }));
}

export async function parseRaw(bytes: Buffer): Promise<ParsedMail> {
  return simpleParser(bytes, { skipHtmlToText: true, skipTextToHtml: true, skipTextLinks: true });
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const isoTimestamp = expect.stringMatching(ISO);

/** A fresh organization with its key, SDK client and inboxes `names` (display names optional). */
export async function organization(
  server: InboxTestServer,
  inboxes: readonly (string | { username: string; displayName?: string; domain?: string })[] = [],
) {
  const created = await server.createKey();
  const client = server.client(created.key);
  const addresses: string[] = [];
  for (const spec of inboxes) {
    const s = typeof spec === 'string' ? { username: spec } : spec;
    const inbox = await client.inboxes.create({
      username: s.username,
      ...(s.displayName ? { displayName: s.displayName } : {}),
      ...(s.domain ? { domain: s.domain } : {}),
    });
    addresses.push(inbox.inboxId);
  }
  return { key: created.key, organizationId: created.organizationId, client, inboxes: addresses };
}

let counter = 0;
/** A username nobody used yet in this test file. */
export function unique(prefix: string): string {
  counter += 1;
  return `${prefix}${counter}${Math.random().toString(36).slice(2, 6)}`;
}

/** Bearer keys are all this service makes: narrows the SDK's CreateApiKeyResult, checking it. */
export function bearerKey(result: AgentMail.CreateApiKeyResult): AgentMail.CreateApiKeyResponse {
  expect('apiKey' in result, 'a bearer key with its secret').toBe(true);
  return result as AgentMail.CreateApiKeyResponse;
}

/** The secret of a bearer key the SDK just created (its result type is a union with public-key credentials). */
export function secretOf(created: object): string {
  const key = (created as { apiKey?: unknown }).apiKey;
  if (typeof key !== 'string') throw new Error('expected a bearer key with its secret');
  return key;
}
