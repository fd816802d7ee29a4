import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { deliver, storedMessageId } from '../support/smtp-client.js';
import { organization, unique } from './fixtures.js';
import { downloadAttachment, downloadRaw, fixture, getMessage, smtpPort } from './smtp-inbound.helpers.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- wire bodies are checked key by key
type Wire = Record<string, any>;

interface Case {
  /** MAIL FROM and its parameters, as the sending server would give them for this message. */
  readonly from?: string;
  readonly mailParams?: string;
  check(message: Wire, read: { attachment(id: string): Promise<Buffer>; raw(): Promise<Buffer> }): Promise<void> | void;
}

const pdfBytes = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');

/** What each message of test/fixtures/eml/ must look like once read back through the API. */
const cases: Record<string, Case> = {
  '01-plain-ascii.eml': {
    from: 'bounces@sender.example',
    check(m) {
      expect(m).toMatchObject({
        message_id: '<plain-ascii.1@sender.example>',
        from: 'Alice Example <alice@sender.example>',
        to: ['Corpus <corpus@inbox.test>'],
        subject: 'Plain ASCII message',
      });
      expect(m.text).toContain(
        '\n.a line that starts with a dot must survive dot-stuffing.\n..and one with two dots.\n',
      );
      expect(m.html).toBeUndefined();
      // The message's own Return-Path is replaced by ours, from the envelope.
      expect(m.headers['Return-Path']).toBe('<bounces@sender.example>');
    },
  },
  '02-multipart-alternative.eml': {
    check(m) {
      expect(m).toMatchObject({
        from: '"Bob, the builder" <bob@sender.example>',
        cc: ['Carol <carol@elsewhere.example>'],
        reply_to: ['replies@sender.example'],
        subject: 'Alternative bodies',
      });
      expect(m.text).toContain(
        'Hello agent, the meeting moved to Thursday = 10:00. This line is long enough to need a soft line break',
      );
      expect(m.html).toContain(
        '<p style="color: #333333; font-family: Arial, Helvetica, sans-serif">Hello <b>agent</b>, the meeting moved to Thursday = 10:00.',
      );
      expect(m.attachments).toBeUndefined();
    },
  },
  '03-nested-multipart.eml': {
    async check(m, read) {
      expect(m.text).toContain('See the logo and the attached report.');
      expect(m.html).toContain('<img src="cid:logo.png@sender.example" alt="logo">');
      expect(m.attachments).toEqual([
        expect.objectContaining({
          filename: 'logo.png',
          content_type: 'image/png',
          content_disposition: 'inline',
          content_id: 'logo.png@sender.example',
          size: 70,
        }),
        expect.objectContaining({
          filename: 'report.pdf',
          content_type: 'application/pdf',
          content_disposition: 'attachment',
          size: pdfBytes.length,
        }),
      ]);
      expect((await read.attachment(m.attachments[1].attachment_id)).equals(pdfBytes)).toBe(true);
      expect((await read.attachment(m.attachments[0].attachment_id)).subarray(1, 4).toString()).toBe('PNG');
    },
  },
  '04-iso-8859-1-qp.eml': {
    check(m) {
      expect(m).toMatchObject({ from: 'Jürgen Müller <juergen@sender.example>', subject: 'Grüße aus Köln' });
      expect(m.text).toContain('Grüße aus Köln, schöne Grüße an Françoise.');
    },
  },
  '05-iso-8859-1-8bit.eml': {
    mailParams: 'BODY=8BITMIME',
    check(m) {
      expect(m.subject).toBe('Café 8bit');
      expect(m.text).toContain("Un café crème, s'il vous plaît. À bientôt!");
      expect(m.from).toMatch(/<rene@sender\.example>$/);
    },
  },
  '06-windows-1252.eml': {
    mailParams: 'BODY=8BITMIME',
    check(m) {
      expect(m.subject).toBe('“Quoted” price € 100');
      expect(m.text).toContain('The “smart” quotes cost € 100 – a dash, and … an ellipsis.');
    },
  },
  '07-iso-2022-jp.eml': {
    check(m) {
      expect(m).toMatchObject({ from: '山田 <yamada@sender.example>', subject: 'こんにちは' });
      expect(m.text).toContain('こんにちは、エージェントさん。\n会議は木曜日です。');
    },
  },
  '08-encoded-words.eml': {
    check(m) {
      expect(m).toMatchObject({
        from: 'Élodie Dupont <elodie@sender.example>',
        to: ['Zürich Team <corpus@inbox.test>', '"Other, Person" <other@elsewhere.example>'],
        subject: '📧 Newsletter für décembre',
      });
      expect(m.text).toContain('Bonjour à tous — voici la lettre de décembre. 📧');
      // Headers are kept as the wire carries them; the fields above are decoded.
      expect(m.headers.Subject).toMatch(/^=\?UTF-8\?B\?8J\+TpyBOZXdzbGV0dGVy\?=/);
    },
  },
  '09-long-folded-headers.eml': {
    check(m) {
      expect(m.subject).toBe(
        'This subject is deliberately very long so that it has to be folded over several physical lines by the sending mail user agent, as RFC 5322 allows for any header field',
      );
      expect(m.to).toHaveLength(9);
      expect(m.to[8]).toBe('corpus@inbox.test');
      expect(m.in_reply_to).toBe('<ref12.thread@sender.example>');
      expect(m.references).toEqual(Array.from({ length: 12 }, (_, i) => `<ref${i + 1}.thread@sender.example>`));
      expect(m.headers['X-Long-Custom-Header']).toBe(
        'one two three four five six seven eight nine ten eleven\ttwelve thirteen fourteen',
      );
    },
  },
  '10-missing-message-id.eml': {
    async check(m, read) {
      expect(m.message_id).toMatch(/^<[0-9a-f-]{36}@mx\.inbox\.test>$/);
      expect(m.subject).toBe('No Message-ID and no Date');
      // The generated id is written into the stored source, so the raw message names it too.
      expect((await read.raw()).toString('latin1')).toContain(`\r\nMessage-ID: ${m.message_id}\r\n`);
      expect(m.headers['Message-ID']).toBe(m.message_id);
    },
  },
  '11-smtputf8.eml': {
    from: 'jörg@bücher.example',
    mailParams: 'BODY=8BITMIME SMTPUTF8',
    check(m) {
      expect(m).toMatchObject({
        message_id: '<smtputf8.11@bücher.example>',
        from: 'Jörg Grün <jörg@bücher.example>',
        subject: 'Ünïcödé subject without encoded words ✓',
      });
      expect(m.text).toContain('Grüße von jörg@bücher.example — 日本語も大丈夫。');
      expect(m.headers['Return-Path']).toBe('<jörg@bücher.example>');
      expect(m.headers.Received).toMatch(/with UTF8SMTP/);
    },
  },
  '12-base64-attachment-rfc2231.eml': {
    async check(m, read) {
      expect(m.attachments).toEqual([
        expect.objectContaining({
          filename: '€-Rechnung März.pdf',
          content_type: 'application/pdf',
          content_disposition: 'attachment',
          size: pdfBytes.length,
        }),
        // A path in a file name is dropped: only the last segment is kept.
        expect.objectContaining({
          filename: 'passwd.csv',
          content_type: 'text/csv',
          content_disposition: 'attachment',
        }),
      ]);
      expect((await read.attachment(m.attachments[0].attachment_id)).equals(pdfBytes)).toBe(true);
    },
  },
  '13-html-only-base64.eml': {
    check(m) {
      expect(m.html).toBe('<html><body><h1>Weekly news</h1><p>Nothing but <em>HTML</em> here.</p></body></html>');
      // No text made up from the HTML; the preview still reads it.
      expect(m.text).toBeUndefined();
      expect(m.preview).toMatch(/Weekly news/);
    },
  },
  '14-forwarded-rfc822.eml': {
    async check(m, read) {
      expect(m.text).toContain('Forwarding the message below.');
      expect(m.attachments).toEqual([
        expect.objectContaining({ content_type: 'message/rfc822', content_disposition: 'attachment' }),
      ]);
      expect((await read.attachment(m.attachments[0].attachment_id)).toString()).toContain('Subject: The original');
    },
  },
  '15-broken-multipart.eml': {
    check(m) {
      expect(m.subject).toBe('Unterminated multipart');
      expect(m.text).toContain('This is the text part.');
    },
  },
};

describe.each(dialects)('%s: inbound SMTP, a corpus of real-world mail', (dialect) => {
  let server: InboxTestServer;
  let org: Awaited<ReturnType<typeof organization>>;
  let inbox: string;

  beforeAll(async () => {
    server = await startInboxServer({ dialect, env: { INBOX_SMTP_HOSTNAME: 'mx.inbox.test' } });
    org = await organization(server, [unique('corpus')]);
    inbox = org.inboxes[0] as string;
  });
  afterAll(async () => {
    await server.close();
  });

  it('has a case for every file of test/fixtures/eml/', () => {
    expect(
      readdirSync(new URL('../fixtures/eml/', import.meta.url))
        .filter((f) => f.endsWith('.eml'))
        .sort(),
    ).toEqual(Object.keys(cases).sort());
  });

  it.each(Object.entries(cases))('%s is stored and reads back through the API', async (file, c) => {
    const source = fixture(file);
    const result = await deliver(smtpPort(server), {
      from: c.from ?? 'sender@sender.example',
      to: [inbox],
      message: source,
      ...(c.mailParams ? { mailParams: c.mailParams } : {}),
    });
    expect(result.data?.code, result.data?.text).toBe(250);
    const id = storedMessageId(result.data);
    const got = await getMessage(server, org.key, inbox, id);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ inbox_id: inbox, message_id: id, labels: ['received', 'unread'] });
    const read = {
      attachment: (aid: string) => downloadAttachment(server, org.key, inbox, id, aid),
      raw: () => downloadRaw(server, org.key, inbox, id),
    };
    await c.check(got.body, read);
    // The stored source is the message as received (CRLF line ends), after our trace fields.
    const raw = await read.raw();
    const body = source
      .toString('latin1')
      .replace(/\r?\n/g, '\r\n')
      .replace(/^Return-Path: [^\r\n]*\r\n/, '');
    expect(raw.toString('latin1').endsWith(body.endsWith('\r\n') ? body : `${body}\r\n`)).toBe(true);
    expect(raw.toString('latin1')).toMatch(
      /^Return-Path: <[^>]*>\r\nReceived: from sender\.example \(\[127\.0\.0\.1\]\)\r\n\tby mx\.inbox\.test with \S+ id \S+\r\n\tfor <[^>]+>;\r\n\t.+\r\n/,
    );
  });
});
