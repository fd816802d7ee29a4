import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../src/platform/clock.js';
import { createInboxServices } from '../../src/inbox/service.js';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { b64, call, enc, expectError, organization, parseRaw, unique } from './fixtures.js';

const pdf = Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.alloc(2048, 0xab)]);

/** Replaces one character of the token's signature (or of its payload). */
function tamper(downloadUrl: string, part: 'payload' | 'signature'): string {
  const u = new URL(downloadUrl);
  const token = u.pathname.split('/').pop() as string;
  const [payload, signature] = token.split('.') as [string, string];
  const flip = (s: string) => s.slice(0, 5) + (s[5] === 'A' ? 'B' : 'A') + s.slice(6);
  u.pathname = u.pathname.replace(
    token,
    part === 'payload' ? `${flip(payload)}.${signature}` : `${payload}.${flip(signature)}`,
  );
  return u.toString();
}

describe.each(dialects)('%s: attachments and raw messages', (dialect) => {
  const clock = fixedClock(new Date('2030-06-01T10:00:00.000Z'));
  let server: InboxTestServer;
  let org: Awaited<ReturnType<typeof organization>>;
  let sender: string;
  let rcpt: string;
  let sent: { messageId: string; threadId: string };

  beforeAll(async () => {
    server = await startInboxServer({ dialect, clock });
    org = await organization(server, [unique('att'), unique('rec')]);
    [sender, rcpt] = org.inboxes as [string, string];
    sent = await org.client.inboxes.messages.send(sender, {
      to: rcpt,
      subject: 'Files',
      text: 'see attached',
      html: '<p>see <img src="cid:pic@att"></p>',
      attachments: [
        { filename: 'report.pdf', contentType: 'application/pdf', content: b64(pdf) },
        { filename: 'Übersicht "Q3".html', contentType: 'text/html', content: b64('<script>alert(1)</script>') },
        { contentId: '<pic@att>', contentType: 'image/png', content: b64('png') },
      ],
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  const attachmentsOf = async (inbox: string) =>
    (await org.client.inboxes.messages.get(inbox, sent.messageId)).attachments ?? [];

  it('answers an attachment with its metadata and an absolute, signed, short-lived download_url', async () => {
    const [report] = await attachmentsOf(sender);
    const res = await call(
      server.url,
      org.key,
      'GET',
      `/v0/inboxes/${enc(sender)}/messages/${enc(sent.messageId)}/attachments/${report?.attachmentId}`,
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      attachment_id: report?.attachmentId,
      filename: 'report.pdf',
      size: pdf.length,
      content_type: 'application/pdf',
      content_disposition: 'attachment',
      download_url: expect.stringMatching(new RegExp(`^${server.url}/v0/downloads/[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$`)),
      expires_at: '2030-06-01T10:15:00.000Z',
    });

    const download = await fetch(res.body.download_url);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('application/pdf');
    expect(download.headers.get('content-disposition')).toBe(
      `attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`,
    );
    expect(download.headers.get('x-content-type-options')).toBe('nosniff');
    expect(Buffer.from(await download.arrayBuffer()).equals(pdf)).toBe(true);
  });

  it('works through the SDK, for the sender and for the recipient copy, without the API key', async () => {
    for (const inbox of [sender, rcpt]) {
      const [, page] = await attachmentsOf(inbox);
      const got = await org.client.inboxes.messages.getAttachment(inbox, sent.messageId, page?.attachmentId as string);
      expect(got).toMatchObject({
        filename: 'Übersicht "Q3".html',
        contentType: 'text/html',
        contentDisposition: 'attachment',
        size: 25,
      });
      expect(got.expiresAt).toEqual(new Date('2030-06-01T10:15:00.000Z'));
      const download = await fetch(got.downloadUrl, { headers: { authorization: 'Bearer wrong' } });
      expect(download.status).toBe(200);
      // Never rendered in our origin: always an attachment, sandboxed, with a safe ASCII name.
      expect(download.headers.get('content-disposition')).toBe(
        `attachment; filename="_bersicht _Q3_.html"; filename*=UTF-8''%C3%9Cbersicht%20%22Q3%22.html`,
      );
      expect(download.headers.get('content-security-policy')).toContain('sandbox');
      expect(await download.text()).toBe('<script>alert(1)</script>');
    }
    const inline = (await attachmentsOf(sender))[2];
    expect(inline).toMatchObject({ contentId: 'pic@att', contentDisposition: 'inline', contentType: 'image/png' });
    expect(inline?.filename).toBeUndefined();
    const pic = await org.client.inboxes.messages.getAttachment(sender, sent.messageId, inline?.attachmentId as string);
    expect((await fetch(pic.downloadUrl)).headers.get('content-disposition')).toMatch(
      /^attachment; filename="attachment"/,
    );
  });

  it('answers the raw source as message/rfc822 through a signed link', async () => {
    const raw = await org.client.inboxes.messages.getRaw(rcpt, sent.messageId);
    expect(raw.messageId).toBe(sent.messageId);
    expect(raw.expiresAt).toEqual(new Date('2030-06-01T10:15:00.000Z'));
    const res = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(rcpt)}/messages/${enc(sent.messageId)}/raw`);
    expect(Object.keys(res.body).sort()).toEqual(['download_url', 'expires_at', 'message_id', 'size']);
    const download = await fetch(raw.downloadUrl);
    expect(download.headers.get('content-type')).toBe('message/rfc822');
    const bytes = Buffer.from(await download.arrayBuffer());
    expect(bytes.length).toBe(raw.size);
    expect(raw.size).toBe((await org.client.inboxes.messages.get(rcpt, sent.messageId)).size);
    const mail = await parseRaw(bytes);
    expect(mail.messageId).toBe(sent.messageId);
    expect(mail.attachments.map((a) => a.filename)).toEqual([undefined, 'report.pdf', 'Übersicht "Q3".html']);
  });

  it('refuses altered and made-up tokens with 404, in the error envelope', async () => {
    const [report] = await attachmentsOf(sender);
    const got = await org.client.inboxes.messages.getAttachment(sender, sent.messageId, report?.attachmentId as string);
    for (const bad of [
      tamper(got.downloadUrl, 'signature'),
      tamper(got.downloadUrl, 'payload'),
      `${server.url}/v0/downloads/garbage`,
      `${server.url}/v0/downloads/a.b.c`,
      `${got.downloadUrl}x`,
    ]) {
      const res = await call(server.url, undefined, 'GET', new URL(bad).pathname);
      expectError(res, 404, 'not_found', 'DOWNLOAD_LINK_INVALID');
    }
    // The payload names the attachment: a link to one is no link to another of the same message.
    const raw = await org.client.inboxes.messages.getRaw(sender, sent.messageId);
    const [payloadA, sigA] = (new URL(got.downloadUrl).pathname.split('/').pop() as string).split('.') as [
      string,
      string,
    ];
    const [payloadR] = (new URL(raw.downloadUrl).pathname.split('/').pop() as string).split('.') as [string, string];
    expect(payloadA).not.toBe(payloadR);
    expectError(
      await call(server.url, undefined, 'GET', `/v0/downloads/${payloadR}.${sigA}`),
      404,
      'not_found',
      'DOWNLOAD_LINK_INVALID',
    );
  });

  it('answers 410 once the link has expired (INBOX_DOWNLOAD_URL_TTL_SECONDS, 900 by default)', async () => {
    const raw = await org.client.inboxes.messages.getRaw(sender, sent.messageId);
    clock.advance(899_000);
    expect((await fetch(raw.downloadUrl)).status).toBe(200);
    clock.advance(1_000);
    expectError(
      await call(server.url, undefined, 'GET', new URL(raw.downloadUrl).pathname),
      410,
      'gone',
      'DOWNLOAD_LINK_EXPIRED',
    );
    // A tampered expired link is still just invalid.
    expectError(
      await call(server.url, undefined, 'GET', new URL(tamper(raw.downloadUrl, 'signature')).pathname),
      404,
      'not_found',
      'DOWNLOAD_LINK_INVALID',
    );
  });

  it('answers 404 for unknown attachments and for another organization', async () => {
    expectError(
      await call(
        server.url,
        org.key,
        'GET',
        `/v0/inboxes/${enc(sender)}/messages/${enc(sent.messageId)}/attachments/nope`,
      ),
      404,
      'not_found',
      'ATTACHMENT_NOT_FOUND',
      'attachment_id',
    );
    const [report] = await attachmentsOf(sender);
    const stranger = await organization(server, [unique('x')]);
    for (const path of [
      `/v0/inboxes/${enc(sender)}/messages/${enc(sent.messageId)}/attachments/${report?.attachmentId}`,
      `/v0/inboxes/${enc(sender)}/messages/${enc(sent.messageId)}/raw`,
      `/v0/threads/${sent.threadId}/attachments/${report?.attachmentId}`,
    ]) {
      expect((await call(server.url, stranger.key, 'GET', path)).status).toBe(404);
    }
  });

  it('signs with a key stored once in service_secrets, which every instance on the database shares', async () => {
    const rows = await server.service.runtime.services.db.selectFrom('service_secrets').selectAll().execute();
    expect(rows.map((r) => r.name)).toEqual(['download_signing_key']);
    expect(Buffer.from((rows[0] as { value: string }).value, 'base64url')).toHaveLength(32);
    const raw = await org.client.inboxes.messages.getRaw(sender, sent.messageId);
    const token = new URL(raw.downloadUrl).pathname.split('/').pop() as string;
    const log = { warn() {}, error() {} };
    const second = createInboxServices(server.service.runtime.services.config, server.service.runtime.services.db, {
      clock,
      log,
    });
    const file = await second.services.messages.download(token);
    expect(file.kind).toBe('raw');
    expect(file.content.length).toBe(raw.size);
  });
});

describe.each(dialects)('%s: download links with INBOX_PUBLIC_URL', (dialect) => {
  let server: InboxTestServer;
  beforeAll(async () => {
    server = await startInboxServer({
      dialect,
      env: { INBOX_PUBLIC_URL: 'https://mail.example.org/api/', INBOX_DOWNLOAD_URL_TTL_SECONDS: '60' },
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('builds links on the public URL and with the configured lifetime', async () => {
    const org = await organization(server, [unique('p'), unique('q')]);
    const sent = await org.client.inboxes.messages.send(org.inboxes[0] as string, {
      to: org.inboxes[1] as string,
      text: 'x',
    });
    const before = Date.now();
    const raw = await org.client.inboxes.messages.getRaw(org.inboxes[0] as string, sent.messageId);
    expect(raw.downloadUrl).toMatch(/^https:\/\/mail\.example\.org\/api\/v0\/downloads\/[^/]+$/);
    expect(raw.expiresAt.getTime()).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 60_000);
    expect(raw.expiresAt.getTime()).toBeLessThanOrEqual(Date.now() + 60_000);
    // The same token works on this server's own origin.
    const path = new URL(raw.downloadUrl).pathname.replace('/api', '');
    expect((await fetch(new URL(path, server.url))).status).toBe(200);
  });
});
