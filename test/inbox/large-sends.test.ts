import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { htmlToPlainText } from '../../src/inbox/mail/compose.js';
import { BLOB_CLAIMED, CHUNK_BYTES } from '../../src/inbox/mailstore/message-blobs.js';
import {
  LARGE_STRING_BYTES,
  OFFLOAD_BASE64_CHARS,
  OFFLOAD_COMPOSE_BYTES,
  OFFLOAD_JSON_BYTES,
} from '../../src/inbox/offload.js';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { b64, call, enc, expectError, organization, parseRaw, unique, type Reply } from './fixtures.js';

/**
 * Sends at the size limits: bodies of megabytes are parsed and composed in worker threads
 * (src/inbox/offload.ts), which must give the same answers as the event loop would, and text and
 * html are capped by INBOX_MAX_BODY_BYTES (docs/decisions/0012-large-sends-off-the-event-loop.md).
 */

const MAX_BODY = 300_000;

describe.each(dialects)('%s: large sends', (dialect) => {
  let server: InboxTestServer;

  beforeAll(async () => {
    server = await startInboxServer({
      dialect,
      env: { INBOX_MAX_BODY_BYTES: String(MAX_BODY), INBOX_MAX_ATTACHMENT_BYTES: String(2 * 1024 * 1024) },
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  const send = (key: string, from: string, body: unknown) =>
    call(server.url, key, 'POST', `/v0/inboxes/${enc(from)}/messages/send`, body);

  it('stores a send of megabytes (text and html at the limit, attachments) as composed and previewed on the event loop', async () => {
    const org = await organization(server, [unique('big'), unique('peer')]);
    const [from, to] = org.inboxes as [string, string];
    // Multi-byte text at exactly the limit, HTML whose preview comes from behind a style block.
    const text = `${'Grüße aus Köln, '.repeat(MAX_BODY / 18)}`.slice(0, MAX_BODY / 2);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(MAX_BODY);
    const html = `<style>${'p { color: red } '.repeat(2000)}</style><p>${'Zeile &amp; mehr <b>fett</b> '.repeat(9000)}</p>`;
    const file = Buffer.alloc(1024 * 1024);
    for (let i = 0; i < file.length; i++) file[i] = (i * 131) & 0xff;
    const res = await send(org.key, from, {
      to,
      subject: 'Quartalsbericht',
      text,
      html,
      attachments: [{ filename: 'data.bin', content: b64(file) }],
    });
    expect(res.status).toBe(200);

    const got = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(to)}/messages/${enc(res.body.message_id)}`);
    expect(got.status).toBe(200);
    expect(got.body.text).toBe(text);
    expect(got.body.html).toBe(html);
    expect(got.body.preview).toBe(Array.from(text.replace(/\s+/g, ' ').trim()).slice(0, 200).join(''));

    const raw = await call(
      server.url,
      org.key,
      'GET',
      `/v0/inboxes/${enc(to)}/messages/${enc(res.body.message_id)}/raw`,
    );
    const download = await fetch(raw.body.download_url);
    const parsed = await parseRaw(Buffer.from(await download.arrayBuffer()));
    expect(parsed.text?.trimEnd()).toBe(text.trimEnd());
    expect(parsed.html).toBe(html);
    expect(parsed.attachments[0]?.content.equals(file)).toBe(true);
  });

  it('stores a large source and attachment once, as blobs every copy names, and gives the same bytes back by download, forward and delete', async () => {
    const org = await organization(server, [unique('pieces'), unique('peer')]);
    const [from, to] = org.inboxes as [string, string];
    // Over two pieces and not a multiple of CHUNK_BYTES; a small attachment beside it stays in its column.
    const file = Buffer.alloc(CHUNK_BYTES * 2 + 12_345);
    for (let i = 0; i < file.length; i++) file[i] = (i * 7919) & 0xff;
    const small = Buffer.from('small attachment');
    const res = await send(org.key, from, {
      to,
      subject: 'Stücke',
      text: 'see attached',
      attachments: [
        { filename: 'big.bin', content: b64(file) },
        { filename: 'small.txt', content: b64(small) },
      ],
    });
    expect(res.status).toBe(200);
    const db = server.service.database.db;
    const copies = await db
      .selectFrom('messages')
      .select(['id', 'raw', 'size', 'source_blob'])
      .where('message_id', '=', res.body.message_id)
      .orderBy('id')
      .execute();
    expect(copies).toHaveLength(2);
    const sourceBlob = Number(copies[0]?.source_blob);
    const piecesOf = (blob: number) =>
      db.selectFrom('blob_chunks').select(['seq', 'bytes']).where('blob_id', '=', blob).orderBy('seq').execute();
    for (const copy of copies) {
      expect(copy.raw).toBeNull();
      // One blob for both copies.
      expect(Number(copy.source_blob)).toBe(sourceBlob);
    }
    const source = await piecesOf(sourceBlob);
    expect(Buffer.concat(source.map((p) => Buffer.from(p.bytes))).length).toBe(Number(copies[0]?.size));
    expect(source.every((p) => p.bytes.length <= CHUNK_BYTES)).toBe(true);
    const attachmentRows = await db
      .selectFrom('attachments')
      .select(['filename', 'content', 'content_blob'])
      .where(
        'message_pk',
        'in',
        copies.map((c) => c.id),
      )
      .execute();
    const bigRows = attachmentRows.filter((a) => a.filename === 'big.bin');
    expect(bigRows).toHaveLength(2);
    expect(new Set(bigRows.map((a) => Number(a.content_blob))).size).toBe(1);
    expect(bigRows.every((a) => a.content.length === 0)).toBe(true);
    const attachmentBlob = Number(bigRows[0]?.content_blob);
    expect((await piecesOf(attachmentBlob)).map((p) => p.seq)).toEqual([0, 1, 2]);
    expect(
      attachmentRows
        .filter((a) => a.filename === 'small.txt')
        .every((a) => a.content_blob === null && Buffer.from(a.content).equals(small)),
    ).toBe(true);
    const states = await db
      .selectFrom('blobs')
      .select(['id', 'state'])
      .where('id', 'in', [sourceBlob, attachmentBlob])
      .execute();
    expect(states.map((b) => b.state)).toEqual([BLOB_CLAIMED, BLOB_CLAIMED]);

    const got = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(to)}/messages/${enc(res.body.message_id)}`);
    const [big, little] = got.body.attachments as { attachment_id: string; size: number }[];
    expect([big?.size, little?.size]).toEqual([file.length, small.length]);
    const bytesOf = async (inbox: string, attachmentId: string) => {
      const link = await call(
        server.url,
        org.key,
        'GET',
        `/v0/inboxes/${enc(inbox)}/messages/${enc(res.body.message_id)}/attachments/${enc(attachmentId)}`,
      );
      return Buffer.from(await (await fetch(link.body.download_url)).arrayBuffer());
    };
    expect((await bytesOf(to, big?.attachment_id as string)).equals(file)).toBe(true);
    expect((await bytesOf(to, little?.attachment_id as string)).equals(small)).toBe(true);
    const raw = await call(
      server.url,
      org.key,
      'GET',
      `/v0/inboxes/${enc(to)}/messages/${enc(res.body.message_id)}/raw`,
    );
    const parsed = await parseRaw(Buffer.from(await (await fetch(raw.body.download_url)).arrayBuffer()));
    expect(parsed.attachments.map((a) => a.content.equals(a.filename === 'big.bin' ? file : small))).toEqual([
      true,
      true,
    ]);

    // A forward carries the attachment on: read back from the blob, stored as a blob of its own.
    const forwarded = await call(
      server.url,
      org.key,
      'POST',
      `/v0/inboxes/${enc(to)}/messages/${enc(res.body.message_id)}/forward`,
      { to: from, text: 'FYI' },
    );
    expect(forwarded.status).toBe(200);
    const copy = await call(
      server.url,
      org.key,
      'GET',
      `/v0/inboxes/${enc(from)}/messages/${enc(forwarded.body.message_id)}`,
    );
    const carried = (copy.body.attachments as { filename: string; attachment_id: string; size: number }[]).find(
      (a) => a.filename === 'big.bin',
    );
    expect(carried?.size).toBe(file.length);
    const forwardBlobs = await db
      .selectFrom('attachments')
      .innerJoin('messages', 'messages.id', 'attachments.message_pk')
      .select('attachments.content_blob')
      .where('messages.message_id', '=', forwarded.body.message_id)
      .where('attachments.filename', '=', 'big.bin')
      .execute();
    expect(forwardBlobs.length).toBeGreaterThan(0);
    expect(forwardBlobs.every((b) => b.content_blob !== null && Number(b.content_blob) !== attachmentBlob)).toBe(true);

    // Deleting the recipient's inbox leaves the blobs to the sender's copy, sweep or not.
    expect((await call(server.url, org.key, 'DELETE', `/v0/inboxes/${enc(to)}`)).status).toBeLessThan(300);
    await server.service.runtime.sweepBlobs();
    expect((await piecesOf(sourceBlob)).length).toBe(source.length);
    const own = await call(
      server.url,
      org.key,
      'GET',
      `/v0/inboxes/${enc(from)}/messages/${enc(res.body.message_id)}/raw`,
    );
    expect((await (await fetch(own.body.download_url)).arrayBuffer()).byteLength).toBe(Number(copies[0]?.size));
    const ownBig = (
      await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(from)}/messages/${enc(res.body.message_id)}`)
    ).body.attachments.find((a: { filename: string }) => a.filename === 'big.bin');
    expect((await bytesOf(from, ownBig.attachment_id)).equals(file)).toBe(true);

    // Once the last copy is deleted, the sweep takes the blobs and their pieces; the forward keeps its own.
    expect(
      (await call(server.url, org.key, 'DELETE', `/v0/inboxes/${enc(from)}/messages/${enc(res.body.message_id)}`))
        .status,
    ).toBeLessThan(300);
    expect(await server.service.runtime.sweepBlobs()).toBeGreaterThanOrEqual(2);
    expect(await db.selectFrom('blobs').select('id').where('id', 'in', [sourceBlob, attachmentBlob]).execute()).toEqual(
      [],
    );
    expect(
      await db.selectFrom('blob_chunks').select('seq').where('blob_id', 'in', [sourceBlob, attachmentBlob]).execute(),
    ).toEqual([]);
    const kept = (
      await call(
        server.url,
        org.key,
        'GET',
        `/v0/inboxes/${enc(from)}/messages/${enc(forwarded.body.message_id)}/attachments/${enc(carried?.attachment_id as string)}`,
      )
    ).body;
    expect(Buffer.from(await (await fetch(kept.download_url)).arrayBuffer()).equals(file)).toBe(true);
  });

  it('keeps a source composed in a worker thread in its column when it comes to less than a blob piece', async () => {
    const org = await organization(server, [unique('between'), unique('peer')]);
    const [from, to] = org.inboxes as [string, string];
    // Long enough to be composed in a worker thread (OFFLOAD_COMPOSE_BYTES), short enough that its source stays under CHUNK_BYTES.
    const text = `Grüße ${'x'.repeat(70)}\n`.repeat(Math.ceil((OFFLOAD_COMPOSE_BYTES + 10_000) / 77));
    expect(text.length).toBeGreaterThanOrEqual(OFFLOAD_COMPOSE_BYTES);
    const res = await send(org.key, from, { to, subject: 'dazwischen', text });
    expect(res.status).toBe(200);
    const db = server.service.database.db;
    const copies = await db
      .selectFrom('messages')
      .select(['raw', 'size', 'source_blob'])
      .where('message_id', '=', res.body.message_id)
      .execute();
    expect(copies).toHaveLength(2);
    for (const copy of copies) {
      expect(copy.source_blob).toBeNull();
      expect(copy.raw?.length).toBe(Number(copy.size));
      expect(Number(copy.size)).toBeLessThan(CHUNK_BYTES);
    }
    const raw = await call(
      server.url,
      org.key,
      'GET',
      `/v0/inboxes/${enc(to)}/messages/${enc(res.body.message_id)}/raw`,
    );
    const parsed = await parseRaw(Buffer.from(await (await fetch(raw.body.download_url)).arrayBuffer()));
    expect(parsed.text).toBe(text);
  });

  it('checks and decodes base64 of megabytes (in a worker thread) as it does a small one: whitespace, URL-safe alphabet, invalid content', async () => {
    const org = await organization(server, [unique('b64'), unique('peer')]);
    const [from, to] = org.inboxes as [string, string];
    // Two of them fit INBOX_MAX_ATTACHMENT_BYTES; each one's base64 is over OFFLOAD_BASE64_CHARS.
    const file = Buffer.alloc(800 * 1024 + 1);
    for (let i = 0; i < file.length; i++) file[i] = (i * 251) & 0xff;
    const wrapped = b64(file).replace(/.{76}/g, '$&\r\n');
    const urlSafe = file.toString('base64url');
    expect(Math.min(wrapped.length, urlSafe.length)).toBeGreaterThanOrEqual(OFFLOAD_BASE64_CHARS);
    const res = await send(org.key, from, {
      to,
      text: 'two',
      attachments: [
        { filename: 'a.bin', content: wrapped },
        { filename: 'b.bin', content: urlSafe },
      ],
    });
    expect(res.status).toBe(200);
    const got = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(to)}/messages/${enc(res.body.message_id)}`);
    for (const a of got.body.attachments as { attachment_id: string; size: number }[]) {
      expect(a.size).toBe(file.length);
      const link = await call(
        server.url,
        org.key,
        'GET',
        `/v0/inboxes/${enc(to)}/messages/${enc(res.body.message_id)}/attachments/${enc(a.attachment_id)}`,
      );
      expect(Buffer.from(await (await fetch(link.body.download_url)).arrayBuffer()).equals(file)).toBe(true);
    }
    // Invalid large content: the same answer as for small content, and nothing stored.
    const bad = `${b64(file).slice(0, -8)}!!!!====`;
    expectError(
      await send(org.key, from, {
        to,
        text: 'bad',
        attachments: [
          { filename: 'ok.txt', content: 'QUJD' },
          { filename: 'bad.bin', content: bad },
        ],
      }),
      400,
      'validation_error',
      'INVALID_ATTACHMENT',
      'attachments',
    );
    expectError(
      await send(org.key, from, { to, text: 'bad', attachments: [{ filename: 'bad.bin', content: `${b64(file)}A` }] }),
      400,
      'validation_error',
      'INVALID_ATTACHMENT',
      'attachments',
    );
    const list = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(to)}/messages`);
    expect(list.body.count).toBe(1);
  });

  it("checks and decodes a draft's base64 of megabytes as a send does, on create and on update", async () => {
    const org = await organization(server, [unique('draftb64')]);
    const [inbox] = org.inboxes as [string];
    const file = Buffer.alloc(800 * 1024 + 1);
    for (let i = 0; i < file.length; i++) file[i] = (i * 241) & 0xff;
    const wrapped = b64(file).replace(/.{76}/g, '$&\r\n');
    expect(wrapped.length).toBeGreaterThanOrEqual(OFFLOAD_BASE64_CHARS);
    const drafts = `/v0/inboxes/${enc(inbox)}/drafts`;
    const created = await call(server.url, org.key, 'POST', drafts, {
      to: ['someone@example.org'],
      attachments: [{ filename: 'a.bin', content: wrapped }],
    });
    expect(created.status).toBe(201);
    const [attachment] = created.body.attachments as { attachment_id: string; size: number }[];
    expect(attachment?.size).toBe(file.length);
    const link = await call(
      server.url,
      org.key,
      'GET',
      `${drafts}/${enc(created.body.draft_id)}/attachments/${enc(attachment?.attachment_id as string)}`,
    );
    expect(Buffer.from(await (await fetch(link.body.download_url)).arrayBuffer()).equals(file)).toBe(true);
    // Invalid large content: INVALID_ATTACHMENT on create and on update, and the draft unchanged.
    const bad = `${b64(file).slice(0, -8)}!!!!====`;
    expectError(
      await call(server.url, org.key, 'POST', drafts, { attachments: [{ filename: 'bad.bin', content: bad }] }),
      400,
      'validation_error',
      'INVALID_ATTACHMENT',
      'attachments',
    );
    const one = `${drafts}/${enc(created.body.draft_id)}`;
    expectError(
      await call(server.url, org.key, 'PATCH', one, { add_attachments: [{ filename: 'bad.bin', content: bad }] }),
      400,
      'validation_error',
      'INVALID_ATTACHMENT',
      'attachments',
    );
    expect((await call(server.url, org.key, 'GET', one)).body.attachments).toHaveLength(1);
    const added = await call(server.url, org.key, 'PATCH', one, {
      add_attachments: [{ filename: 'b.bin', content: file.toString('base64url') }],
    });
    expect(added.status).toBe(200);
    expect((added.body.attachments as { size: number }[]).map((a) => a.size)).toEqual([file.length, file.length]);
  });

  it('previews an HTML-only send of megabytes from its visible text', async () => {
    const org = await organization(server, [unique('html'), unique('peer')]);
    const [from, to] = org.inboxes as [string, string];
    const html = `<head><title>not shown</title></head><script>${'x'.repeat(100_000)}</script>${'<p>Hallo &amp; willkommen</p>'.repeat(4000)}`;
    const res = await send(org.key, from, {
      to,
      html,
      attachments: [{ filename: 'pad.bin', content: b64(Buffer.alloc(1024 * 1024, 1)) }],
    });
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
    expectError(
      await send(org.key, from, { to, text: 'ü'.repeat(MAX_BODY / 2 + 1) }),
      400,
      'validation_error',
      'BODY_TOO_LARGE',
      'text',
    );
    expectError(
      await send(org.key, from, { to, text: 'ok', html: `<p>${'x'.repeat(MAX_BODY)}</p>` }),
      400,
      'validation_error',
      'BODY_TOO_LARGE',
      'html',
    );
    const list = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(to)}/messages`);
    expect(list.body.count).toBe(1);

    const original = list.body.messages[0].message_id as string;
    const over = { text: 'x'.repeat(MAX_BODY + 1) };
    expectError(
      await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(to)}/messages/${enc(original)}/reply`, over),
      400,
      'validation_error',
      'BODY_TOO_LARGE',
      'text',
    );
    expectError(
      await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(to)}/messages/${enc(original)}/forward`, {
        to: from,
        ...over,
      }),
      400,
      'validation_error',
      'BODY_TOO_LARGE',
      'text',
    );
    // A forward counts only the caller's part: the original at the limit travels along.
    const forwarded = await call(
      server.url,
      org.key,
      'POST',
      `/v0/inboxes/${enc(to)}/messages/${enc(original)}/forward`,
      { to: from, text: 'FYI' },
    );
    expect(forwarded.status).toBe(200);
  });

  it('answers a body of megabytes that is not valid JSON, or that carries __proto__, as Fastify does a small one', async () => {
    const org = await organization(server, [unique('bad'), unique('peer')]);
    const [from, to] = org.inboxes as [string, string];
    const pad = 'a'.repeat(1024 * 1024);
    expectError(await send(org.key, from, `{"to":"${to}","text":"${pad}"`), 400, 'validation_error', 'INVALID_JSON');
    expectError(
      await send(org.key, from, `{"to":"${to}","text":"${pad}","__proto__":{"x":1}}`),
      400,
      'validation_error',
      'INVALID_JSON',
    );
    expectError(
      await send(org.key, from, `{"to":"${to}","text":"${pad}","constructor":{"prototype":{"x":1}}}`),
      400,
      'validation_error',
      'INVALID_JSON',
    );
    // The same shapes, small: the answers are the same.
    expectError(
      await send(org.key, from, `{"to":"${to}","text":"x","__proto__":{"x":1}}`),
      400,
      'validation_error',
      'INVALID_JSON',
    );
    const list = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(to)}/messages`);
    expect(list.body.count).toBe(0);
  });

  /**
   * POSTs `body` as the socket would carry a slow client's upload: in pieces of `piece` bytes, each
   * written after the last was sent, with or without a Content-Length (chunked transfer coding).
   */
  function upload(key: string, path: string, body: Buffer, piece: number, declared: boolean): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const url = new URL(path, server.url);
      const length = declared ? { 'content-length': String(body.length) } : {};
      const req = http.request(
        {
          host: url.hostname,
          port: url.port,
          method: 'POST',
          path: url.pathname,
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...length },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const bytes = Buffer.concat(chunks);
            resolve({
              status: res.statusCode ?? 0,
              headers: new Headers(res.headers as Record<string, string>),
              body: JSON.parse(bytes.toString('utf8') || 'null'),
              bytes,
            });
          });
        },
      );
      // The server may answer (413) before the whole body went out: then the rest is not sent.
      let answered = false;
      req.on('response', () => (answered = true));
      req.on('error', reject);
      let at = 0;
      const next = () => {
        if (answered || at >= body.length) return void req.end();
        const part = body.subarray(at, at + piece);
        at += piece;
        req.write(part, () => setTimeout(next, 1));
      };
      // The headers first, and a moment for an answer to them alone (a declared length over the limit).
      req.flushHeaders();
      setTimeout(next, 50);
    });
  }

  it('reads a body of megabytes in pieces as it arrives, with or without Content-Length: attachments decoded on the way, text and html whole, limits and bad input answered as for a body read whole', async () => {
    const org = await organization(server, [unique('pieces'), unique('peer')]);
    const [from, to] = org.inboxes as [string, string];
    const path = `/v0/inboxes/${enc(from)}/messages/send`;
    const file = Buffer.alloc(1536 * 1024 + 2);
    for (let i = 0; i < file.length; i++) file[i] = (i * 2654435761) >>> 24;
    // Quotes, backslashes, escapes and multi-byte characters, so that some fall on the pieces' edges.
    const text = 'Grüße "aus" C:\\Temp\\ – 😀\n'.repeat(8000).slice(0, MAX_BODY / 2);
    const html = `<p>${'Zeile mit &amp; und "Zitat" <b>fett</b>\t'.repeat(5000)}</p>`.slice(0, MAX_BODY);
    const body = Buffer.from(
      JSON.stringify({
        to,
        subject: 'in pieces',
        text,
        html,
        attachments: [
          { filename: 'a.bin', content: file.toString('base64') },
          { filename: 'u.bin', content: file.subarray(0, 100_000).toString('base64url') },
        ],
      }),
    );
    expect(body.length).toBeGreaterThan(OFFLOAD_JSON_BYTES);
    expect(text.length).toBeGreaterThan(LARGE_STRING_BYTES);
    for (const [piece, declared] of [
      [65_536, true],
      [7_777, false],
      [1_048_576, false],
    ] as const) {
      const sent = await upload(org.key, path, body, piece, declared);
      expect(sent.status, JSON.stringify(sent.body)).toBe(200);
      const got = await call(
        server.url,
        org.key,
        'GET',
        `/v0/inboxes/${enc(to)}/messages/${enc(sent.body.message_id)}`,
      );
      expect(got.body.text).toBe(text);
      expect(got.body.html).toBe(html);
      const sizes = (got.body.attachments as { size: number }[]).map((a) => a.size);
      expect(sizes).toEqual([file.length, 100_000]);
      const raw = await call(
        server.url,
        org.key,
        'GET',
        `/v0/inboxes/${enc(to)}/messages/${enc(sent.body.message_id)}/raw`,
      );
      const parsed = await parseRaw(Buffer.from(await (await fetch(raw.body.download_url)).arrayBuffer()));
      expect(
        parsed.attachments.map((a) => a.content.equals(a.filename === 'a.bin' ? file : file.subarray(0, 100_000))),
      ).toEqual([true, true]);
    }

    // Over the route's limit: 413 whether the length was declared or not, and nothing stored.
    const huge = Buffer.from(
      JSON.stringify({
        to,
        text: 'big',
        attachments: [{ filename: 'x', content: Buffer.alloc(4 * 1024 * 1024).toString('base64') }],
      }),
    );
    for (const declared of [true, false]) {
      expectError(
        await upload(org.key, path, huge, 65_536, declared),
        413,
        'payload_too_large',
        'FST_ERR_CTP_BODY_TOO_LARGE',
      );
    }
    // A NUL in a large text; an unterminated large attachment.
    const nul = await upload(
      org.key,
      path,
      Buffer.from(
        JSON.stringify({
          to,
          text: `${'x'.repeat(2 * LARGE_STRING_BYTES)}\u0000`,
          attachments: [{ content: file.toString('base64') }],
        }),
      ),
      65_536,
      true,
    );
    expectError(nul, 400, 'validation_error', 'NUL_CHARACTER', 'text');
    const cut = await upload(
      org.key,
      path,
      Buffer.from(`{"to":"${to}","attachments":[{"content":"${file.toString('base64')}`),
      65_536,
      false,
    );
    expectError(cut, 400, 'validation_error', 'INVALID_JSON');
    const list = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(to)}/messages`);
    expect(list.body.count).toBe(3);
  });
});
