import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { socketExchange } from '../support/http.js';
import { callInbox, dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';

/**
 * Hostile and odd input (issue 13, items 7, 8, 10, 11): every answer is the same 4xx on both
 * dialects, in the inbox error format, and nothing is stored.
 */

const call = callInbox;
const enc = encodeURIComponent;
const token = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe.each(dialects)('%s: hostile input', (dialect) => {
  let server: InboxTestServer;
  let key: string;
  let inbox: string;
  let messageId: string;
  let threadId: string;
  let webhookId: string;

  beforeAll(async () => {
    server = await startInboxServer({ dialect, env: { REQUEST_TIMEOUT_MS: '1500' } });
    key = (await server.createKey()).key;
    inbox = (await call(server, key, 'POST', '/v0/inboxes', { username: 'hostile' })).body?.inbox_id as string;
    const sent = await call(server, key, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, {
      to: inbox,
      subject: 'hi',
      text: 'hello',
    });
    messageId = sent.body?.message_id as string;
    threadId = sent.body?.thread_id as string;
    webhookId = (await call(server, key, 'POST', '/v0/webhooks', { url: 'http://127.0.0.1:9/hook' })).body
      ?.webhook_id as string;
  });
  afterAll(() => server.close());

  describe('a NUL character (U+0000): a path with one names nothing (404), anywhere else it is a 400', () => {
    it.each([
      ['GET', '/v0/inboxes/a%00b'],
      ['GET', '/v0/inboxes/a%00b@inbox.test'],
      ['PATCH', '/v0/inboxes/a%00b@inbox.test'],
      ['DELETE', '/v0/inboxes/x%00@inbox.test'],
      ['GET', '/v0/threads/t%00'],
      ['GET', '/v0/webhooks/ep_%00'],
      ['DELETE', '/v0/webhooks/ep_%00'],
      ['GET', '/v0/downloads/abc%00.def'],
      ['GET', '/v0/nowhere%00'],
    ])('in the path: %s %s → 404', async (method, path) => {
      const res = await call(server, key, method, path, method === 'PATCH' ? { display_name: 'x' } : undefined);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({
        error: { type: 'not_found', message: expect.any(String), details: { code: 'NUL_CHARACTER' } },
      });
    });

    it('in path ids of routes with data behind them → 404; in their query → 400', async () => {
      for (const path of [
        `/v0/inboxes/${enc(inbox)}/messages/${enc(messageId)}%00`,
        `/v0/inboxes/${enc(inbox)}/threads/${enc(threadId)}%00`,
        `/v0/inboxes/${enc(inbox)}%00/messages`,
        `/v0/webhooks/${webhookId}%00/deliveries`,
      ]) {
        const res = await call(server, key, 'GET', path);
        expect([path, res.status, res.body?.error?.details]).toEqual([path, 404, { code: 'NUL_CHARACTER' }]);
      }
      for (const path of [
        '/v0/inboxes?page_token=a%00',
        `/v0/inboxes/${enc(inbox)}/messages?labels=%5B%22a%00%22%5D`,
        `/v0/inboxes/${enc(inbox)}/threads?labels=x%00`,
        `/v0/webhooks/${webhookId}/deliveries?event_id=e%00`,
        '/v0/threads?before=2026%00',
      ]) {
        const res = await call(server, key, 'GET', path);
        expect([path, res.status, res.body?.error]).toEqual([
          path,
          400,
          { type: 'validation_error', message: expect.stringContaining('NUL'), details: { code: 'NUL_CHARACTER' } },
        ]);
      }
    });

    it.each([
      ['display_name', 'POST', '/v0/inboxes', { username: 'nul1', display_name: 'a\u0000b' }],
      ['client_id', 'POST', '/v0/inboxes', { username: 'nul2', client_id: 'c\u0000' }],
      ['username', 'POST', '/v0/inboxes', { username: 'nul\u00003' }],
      ['url', 'POST', '/v0/webhooks', { url: 'http://127.0.0.1:9/\u0000' }],
      ['client_id', 'POST', '/v0/webhooks', { url: 'http://127.0.0.1:9/a', client_id: '\u0000' }],
      ['inbox_ids', 'POST', '/v0/webhooks', { url: 'http://127.0.0.1:9/a', inbox_ids: ['x\u0000@inbox.test'] }],
    ])('in a body string: %s of %s %s', async (field, method, path, body) => {
      const res = await call(server, key, method, path, body);
      expect(res.status).toBe(400);
      expect(res.body?.error).toMatchObject({ type: 'validation_error', details: { field, code: 'NUL_CHARACTER' } });
    });

    it.each([
      ['text', { text: 'a\u0000b' }],
      ['html', { html: '<p>\u0000</p>' }],
      ['subject', { subject: '\u0000', text: 'x' }],
      ['labels', { text: 'x', labels: ['l\u0000'] }],
      ['headers', { text: 'x', headers: { 'X-A': 'v\u0000' } }],
      ['headers', { text: 'x', headers: { 'X-\u0000': 'v' } }],
      ['attachments', { text: 'x', attachments: [{ filename: 'a\u0000.txt', content: 'QUJD' }] }],
      ['to', { to: 'a\u0000@inbox.test', text: 'x' }],
    ])('in a sent message: %s', async (field, patch) => {
      const res = await call(server, key, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, { to: inbox, ...patch });
      expect(res.status).toBe(400);
      expect(res.body?.error).toMatchObject({ type: 'validation_error', details: { field, code: 'NUL_CHARACTER' } });
    });

    it('in updates: message labels, inbox display_name', async () => {
      const labels = await call(server, key, 'PATCH', `/v0/inboxes/${enc(inbox)}/messages/${enc(messageId)}`, {
        add_labels: ['ok', 'bad\u0000'],
      });
      expect([labels.status, labels.body?.error?.details]).toEqual([
        400,
        { field: 'add_labels', code: 'NUL_CHARACTER' },
      ]);
      const name = await call(server, key, 'PATCH', `/v0/inboxes/${enc(inbox)}`, { display_name: '\u0000' });
      expect([name.status, name.body?.error?.details]).toEqual([400, { field: 'display_name', code: 'NUL_CHARACTER' }]);
      const stored = await call(server, key, 'GET', `/v0/inboxes/${enc(inbox)}/messages/${enc(messageId)}`);
      expect(stored.body?.labels).not.toContain('ok');
    });

    it('stores nothing for a refused request', async () => {
      const list = await call(server, key, 'GET', '/v0/inboxes?limit=100');
      expect(list.body?.inboxes.map((i: { inbox_id: string }) => i.inbox_id)).toEqual([inbox]);
      const hooks = await call(server, key, 'GET', '/v0/webhooks');
      expect(hooks.body?.webhooks.map((w: { webhook_id: string }) => w.webhook_id)).toEqual([webhookId]);
    });
  });

  describe('page tokens', () => {
    it.each([
      ['messages', () => `/v0/inboxes/${enc(inbox)}/messages`, 'integer'],
      ['threads of an inbox', () => `/v0/inboxes/${enc(inbox)}/threads`, 'integer'],
      ['threads', () => '/v0/threads', 'integer'],
      ['webhook deliveries', () => `/v0/webhooks/${webhookId}/deliveries`, 'integer'],
      ['inboxes', () => '/v0/inboxes', 'string'],
      ['webhooks', () => '/v0/webhooks', 'string'],
    ])('whose tiebreaker has the wrong type answer 400 INVALID_PAGE_TOKEN: %s', async (_name, path, tiebreak) => {
      const wrong =
        tiebreak === 'integer'
          ? ['x', '1; drop table messages', 'abc', 1.5, 1e300, null, [1], { a: 1 }]
          : [1, null, [1], { a: 1 }];
      for (const t of wrong) {
        const res = await call(
          server,
          key,
          'GET',
          `${path()}?page_token=${token(['2026-01-01T00:00:00.000Z', t, 'desc'])}`,
        );
        expect([t, res.status, res.body?.error]).toEqual([
          t,
          400,
          {
            type: 'validation_error',
            message: expect.any(String),
            details: { field: 'page_token', code: 'INVALID_PAGE_TOKEN' },
          },
        ]);
      }
      // A well-formed token of the right type is still a page.
      const ok = await call(
        server,
        key,
        'GET',
        `${path()}?page_token=${token(['2999-01-01T00:00:00.000Z', tiebreak === 'integer' ? 999 : 'zzz', 'desc'])}`,
      );
      expect(ok.status).toBe(200);
    });
  });

  describe('sent headers and attachments', () => {
    const send = (body: Record<string, unknown>) =>
      call(server, key, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, { to: inbox, text: 'x', ...body });

    it.each([
      'DKIM-Signature',
      'Authentication-Results',
      'Received',
      'received-spf',
      'ARC-Seal',
      'ARC-Message-Signature',
      'arc-authentication-results',
      'Resent-From',
      'Resent-Message-ID',
      'Delivered-To',
      'X-Original-To',
      'Disposition-Notification-To',
      'Return-Receipt-To',
    ])('refuses the trace or authentication header %s', async (name) => {
      const res = await send({ headers: { [name]: 'v=1; a=rsa-sha256; d=bank.example' } });
      expect(res.status).toBe(400);
      expect(res.body?.error).toMatchObject({
        type: 'validation_error',
        details: { field: 'headers', code: 'FORBIDDEN_HEADER' },
      });
      expect(res.body?.error.message).toContain(name);
    });

    it('still accepts custom X- headers', async () => {
      expect((await send({ headers: { 'X-Campaign': 'spring', 'X-Originally-From': 'x' } })).status).toBe(200);
    });

    it.each([
      'text/plain; name="a\r\nX-Evil: 1"',
      'text/plain; name="a\nb"',
      'text/plain; name="a\rb"',
      'text/plain;\r\n charset=utf-8',
      'text/plain; name="\u0007"',
    ])('refuses the attachment content_type %j', async (contentType) => {
      const res = await send({ attachments: [{ filename: 'a.txt', content: 'QUJD', content_type: contentType }] });
      expect(res.status).toBe(400);
      expect(res.body?.error).toMatchObject({
        type: 'validation_error',
        details: { field: 'attachments', code: 'INVALID_ATTACHMENT' },
      });
    });

    it('accepts quoted parameters without line breaks', async () => {
      const res = await send({
        attachments: [
          { filename: 'a.txt', content: 'QUJD', content_type: 'text/plain; charset="utf-8"; name="a b.txt"' },
        ],
      });
      expect(res.status).toBe(200);
    });
  });

  describe('bytes that never become a request answer in the inbox error format', () => {
    const request = (line: Buffer | string, headers = '') =>
      Buffer.concat([Buffer.from(line), Buffer.from(` HTTP/1.1\r\nHost: x\r\n${headers}Connection: close\r\n\r\n`)]);

    it.each([
      [
        'raw non-ASCII bytes in the request line',
        request(Buffer.concat([Buffer.from('GET /v0/inboxes/'), Buffer.from([0xff, 0xc3, 0xa4])])),
        400,
        'validation_error',
      ],
      ['a control character in a header', request('GET /v0/inboxes', 'X-A: a\u0001b\r\n'), 400, 'validation_error'],
      ['a request line that is not HTTP', Buffer.from('HELLO WORLD\r\n\r\n'), 400, 'validation_error'],
      ['a 17 KB URL', request(`GET /v0/inboxes?x=${'a'.repeat(17 * 1024)}`), 431, 'validation_error'],
      ['20 KB of headers', request('GET /v0/inboxes', `X-Big: ${'a'.repeat(20 * 1024)}\r\n`), 431, 'validation_error'],
      ['a malformed percent escape', request('GET /v0/inboxes/%E0%A4%A'), 400, 'validation_error'],
      [
        'a path parameter over 1000 characters',
        request(`GET /v0/inboxes/${'a'.repeat(2000)}`),
        414,
        'validation_error',
      ],
    ])('%s → %i', async (_name, bytes, status, type) => {
      const res = await socketExchange(server.url, bytes);
      expect({ status: res.status, contentType: res.headers['content-type'], body: res.body }).toEqual({
        status,
        contentType: 'application/json; charset=utf-8',
        body: { error: { type, message: expect.any(String), details: { code: expect.any(String) } } },
      });
    });

    it('a body trickled a byte at a time is cut off at REQUEST_TIMEOUT_MS with 408, and nothing is stored', async () => {
      const head = `POST /v0/inboxes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n{"username":"slowpoke"`;
      const res = await socketExchange(server.url, Buffer.from(head), { trickle: { everyMs: 200 }, timeoutMs: 15_000 });
      expect({ status: res.status, body: res.body }).toEqual({
        status: 408,
        body: {
          error: {
            type: 'request_timeout',
            message: expect.stringContaining('1500 ms'),
            details: { code: 'REQUEST_TIMEOUT' },
          },
        },
      });
      expect(res.headers.connection).toBe('close');
      expect(res.closedAfterMs).toBeGreaterThanOrEqual(1400);
      const list = await call(server, key, 'GET', '/v0/inboxes?limit=100');
      expect(list.body?.inboxes.map((i: { inbox_id: string }) => i.inbox_id)).toEqual([inbox]);
    });
  });
});
