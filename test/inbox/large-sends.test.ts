import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { htmlToPlainText } from '../../src/inbox/mail/compose.js';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { b64, call, enc, expectError, organization, parseRaw, unique } from './fixtures.js';

/**
 * Sends at the size limits: bodies of megabytes are parsed and composed in worker threads
 * (src/inbox/offload.ts), which must give the same answers as the event loop would, and text and
 * html are capped by INBOX_MAX_BODY_BYTES (docs/decisions/0012-large-sends-off-the-event-loop.md).
 */

const MAX_BODY = 300_000;

describe.each(dialects)('%s: large sends', (dialect) => {
  let server: InboxTestServer;

  beforeAll(async () => {
    server = await startInboxServer({ dialect, env: { INBOX_MAX_BODY_BYTES: String(MAX_BODY), INBOX_MAX_ATTACHMENT_BYTES: String(2 * 1024 * 1024) } });
  });
  afterAll(async () => {
    await server?.close();
  });

  const send = (key: string, from: string, body: unknown) => call(server.url, key, 'POST', `/v0/inboxes/${enc(from)}/messages/send`, body);

  it('stores a send of megabytes (text and html at the limit, attachments) as composed and previewed on the event loop', async () => {
    const org = await organization(server, [unique('big'), unique('peer')]);
    const [from, to] = org.inboxes as [string, string];
    // Multi-byte text at exactly the limit, HTML whose preview comes from behind a style block.
    const text = `${'Grüße aus Köln, '.repeat(MAX_BODY / 18)}`.slice(0, MAX_BODY / 2);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(MAX_BODY);
    const html = `<style>${'p { color: red } '.repeat(2000)}</style><p>${'Zeile &amp; mehr <b>fett</b> '.repeat(9000)}</p>`;
    const file = Buffer.alloc(1024 * 1024);
    for (let i = 0; i < file.length; i++) file[i] = (i * 131) & 0xff;
    const res = await send(org.key, from, { to, subject: 'Quartalsbericht', text, html, attachments: [{ filename: 'data.bin', content: b64(file) }] });
    expect(res.status).toBe(200);

    const got = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(to)}/messages/${enc(res.body.message_id)}`);
    expect(got.status).toBe(200);
    expect(got.body.text).toBe(text);
    expect(got.body.html).toBe(html);
    expect(got.body.preview).toBe(Array.from(text.replace(/\s+/g, ' ').trim()).slice(0, 200).join(''));

    const raw = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(to)}/messages/${enc(res.body.message_id)}/raw`);
    const download = await fetch(raw.body.download_url);
    const parsed = await parseRaw(Buffer.from(await download.arrayBuffer()));
    expect(parsed.text?.trimEnd()).toBe(text.trimEnd());
    expect(parsed.html).toBe(html);
    expect(parsed.attachments[0]?.content.equals(file)).toBe(true);
  });

  it('previews an HTML-only send of megabytes from its visible text', async () => {
    const org = await organization(server, [unique('html'), unique('peer')]);
    const [from, to] = org.inboxes as [string, string];
    const html = `<head><title>not shown</title></head><script>${'x'.repeat(100_000)}</script>${'<p>Hallo &amp; willkommen</p>'.repeat(4000)}`;
    const res = await send(org.key, from, { to, html, attachments: [{ filename: 'pad.bin', content: b64(Buffer.alloc(1024 * 1024, 1)) }] });
    expect(res.status).toBe(200);
    const got = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(to)}/messages/${enc(res.body.message_id)}`);
    expect(got.body.preview).toBe(Array.from(htmlToPlainText(html).replace(/\s+/g, ' ').trim()).slice(0, 200).join(''));
    expect(got.body.preview.startsWith('Hallo & willkommen Hallo')).toBe(true);
  });

  it('refuses text or html over INBOX_MAX_BODY_BYTES (UTF-8 bytes) with BODY_TOO_LARGE, on send, reply and forward, and stores nothing', async () => {
    const org = await organization(server, [unique('cap'), unique('peer')]);
    const [from, to] = org.inboxes as [string, string];
    // 'ü' is two bytes: MAX_BODY / 2 of them fit exactly, one more does not.
    expect((await send(org.key, from, { to, text: 'ü'.repeat(MAX_BODY / 2) })).status).toBe(200);
    expectError(await send(org.key, from, { to, text: 'ü'.repeat(MAX_BODY / 2 + 1) }), 400, 'validation_error', 'BODY_TOO_LARGE', 'text');
    expectError(await send(org.key, from, { to, text: 'ok', html: `<p>${'x'.repeat(MAX_BODY)}</p>` }), 400, 'validation_error', 'BODY_TOO_LARGE', 'html');
    const list = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(to)}/messages`);
    expect(list.body.count).toBe(1);

    const original = list.body.messages[0].message_id as string;
    const over = { text: 'x'.repeat(MAX_BODY + 1) };
    expectError(await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(to)}/messages/${enc(original)}/reply`, over), 400, 'validation_error', 'BODY_TOO_LARGE', 'text');
    expectError(await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(to)}/messages/${enc(original)}/forward`, { to: from, ...over }), 400, 'validation_error', 'BODY_TOO_LARGE', 'text');
    // A forward counts only the caller's part: the original at the limit travels along.
    const forwarded = await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(to)}/messages/${enc(original)}/forward`, { to: from, text: 'FYI' });
    expect(forwarded.status).toBe(200);
  });

  it('answers a body of megabytes that is not valid JSON, or that carries __proto__, as Fastify does a small one', async () => {
    const org = await organization(server, [unique('bad'), unique('peer')]);
    const [from, to] = org.inboxes as [string, string];
    const pad = 'a'.repeat(1024 * 1024);
    expectError(await send(org.key, from, `{"to":"${to}","text":"${pad}"`), 400, 'validation_error', 'INVALID_JSON');
    expectError(await send(org.key, from, `{"to":"${to}","text":"${pad}","__proto__":{"x":1}}`), 400, 'validation_error', 'INVALID_JSON');
    expectError(await send(org.key, from, `{"to":"${to}","text":"${pad}","constructor":{"prototype":{"x":1}}}`), 400, 'validation_error', 'INVALID_JSON');
    // The same shapes, small: the answers are the same.
    expectError(await send(org.key, from, `{"to":"${to}","text":"x","__proto__":{"x":1}}`), 400, 'validation_error', 'INVALID_JSON');
    const list = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(to)}/messages`);
    expect(list.body.count).toBe(0);
  });
});
