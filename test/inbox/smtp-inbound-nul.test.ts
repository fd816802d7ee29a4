import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { deliver, SmtpTestClient, storedMessageId } from '../support/smtp-client.js';
import { organization, unique } from './fixtures.js';
import { getMessage, simpleMessage, smtpPort } from './smtp-inbound.helpers.js';

/**
 * NUL characters (U+0000) in inbound mail (issue 13, hostile input): PostgreSQL cannot store one
 * in text, SQLite can. Wherever a message carries one, raw or decoded from an encoding, both
 * dialects must answer the same: the message is taken (250) and stored without the NUL, or the
 * command is refused with the same permanent reply. Never a 4xx "try again" that would repeat forever.
 */
const NUL = '\u0000';
const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

describe.each(dialects)('%s: NUL characters in inbound SMTP mail', (dialect) => {
  let server: InboxTestServer;
  let org: Awaited<ReturnType<typeof organization>>;
  let agent: string;
  let port: number;

  beforeAll(async () => {
    server = await startInboxServer({ dialect, env: { INBOX_DOMAINS: 'inbox.test' } });
    org = await organization(server, [unique('nul')]);
    agent = org.inboxes[0] as string;
    port = smtpPort(server);
  });
  afterAll(async () => {
    await server?.close();
  });

  const multipart = (o: { subject?: string; text?: string; html?: string; filename?: string; headers?: string }) =>
    [
      'From: Sender <sender@sender.example>',
      `To: ${agent}`,
      `Subject: ${o.subject ?? 'multipart'}`,
      `Message-ID: <${unique('m')}@sender.example>`,
      'MIME-Version: 1.0',
      ...(o.headers ? [o.headers] : []),
      'Content-Type: multipart/mixed; boundary="B"',
      '',
      '--B',
      'Content-Type: multipart/alternative; boundary="A"',
      '',
      '--A',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: base64',
      '',
      b64(o.text ?? 'plain'),
      '--A',
      'Content-Type: text/html; charset=utf-8',
      'Content-Transfer-Encoding: base64',
      '',
      b64(o.html ?? '<p>html</p>'),
      '--A--',
      '--B',
      `Content-Type: application/octet-stream; name="${o.filename ?? 'a.bin'}"`,
      `Content-Disposition: attachment; filename="${o.filename ?? 'a.bin'}"`,
      'Content-Transfer-Encoding: base64',
      '',
      b64('attachment bytes\u0000with a NUL'),
      '--B--',
      '',
    ].join('\r\n');

  const cases: [string, () => string][] = [
    [
      'a raw NUL in the subject',
      () => simpleMessage({ to: agent, subject: `a${NUL}b`, messageId: `<${unique('s')}@sender.example>` }),
    ],
    [
      'a NUL in an encoded-word subject',
      () =>
        simpleMessage({
          to: agent,
          subject: `=?utf-8?B?${b64(`x${NUL}y`)}?=`,
          messageId: `<${unique('s')}@sender.example>`,
        }),
    ],
    [
      'a NUL in the sender display name (encoded word)',
      () =>
        simpleMessage({
          to: agent,
          from: `=?utf-8?B?${b64(`Ev${NUL}il`)}?= <sender@sender.example>`,
          messageId: `<${unique('s')}@sender.example>`,
        }),
    ],
    [
      'a raw NUL in the sender display name',
      () =>
        simpleMessage({
          to: agent,
          from: `"Ev${NUL}il" <sender@sender.example>`,
          messageId: `<${unique('s')}@sender.example>`,
        }),
    ],
    [
      'a raw NUL in a plain-text body',
      () => simpleMessage({ to: agent, body: `line one${NUL}line two`, messageId: `<${unique('s')}@sender.example>` }),
    ],
    [
      'a quoted-printable =00 in a plain-text body',
      () =>
        simpleMessage({
          to: agent,
          body: 'before=00after',
          headers: 'Content-Transfer-Encoding: quoted-printable',
          messageId: `<${unique('s')}@sender.example>`,
        }),
    ],
    [
      'a NUL in a Message-ID, In-Reply-To and References',
      () =>
        simpleMessage({
          to: agent,
          messageId: `<id${NUL}x@sender.example>`,
          headers: `In-Reply-To: <p${NUL}q@x.example>\r\nReferences: <r${NUL}s@x.example>`,
        }),
    ],
    [
      'a NUL in a custom header',
      () => simpleMessage({ to: agent, headers: `X-Custom: v${NUL}w`, messageId: `<${unique('s')}@sender.example>` }),
    ],
    [
      'NULs in base64 text and html parts and an attachment file name',
      () => multipart({ text: `te${NUL}xt`, html: `<p>ht${NUL}ml</p>`, filename: `fi${NUL}le.bin` }),
    ],
    [
      'a NUL in an encoded attachment file name and a content-type parameter',
      () => multipart({ filename: `=?utf-8?B?${b64(`r${NUL}.pdf`)}?=`, headers: `Content-Language: de${NUL}` }),
    ],
    ['a delivery report whose envelope id and returned Message-ID hold a NUL', () => report()],
  ];

  /** A delivery status notification about a message we never sent, naming it with a NUL (xtext `+00`, and raw). */
  const report = () =>
    [
      'From: MAILER-DAEMON@relay.example.net',
      `To: ${agent}`,
      'Subject: Undelivered Mail Returned to Sender',
      `Message-ID: <${unique('dsn')}@relay.example.net>`,
      'MIME-Version: 1.0',
      'Content-Type: multipart/report; report-type=delivery-status; boundary="R"',
      '',
      '--R',
      'Content-Type: text/plain',
      '',
      'It failed.',
      '--R',
      'Content-Type: message/delivery-status',
      '',
      'Reporting-MTA: dns; relay.example.net',
      'Original-Envelope-Id: env+00id@sender.example',
      '',
      `Final-Recipient: rfc822; gone${NUL}@remote.example`,
      'Action: failed',
      'Status: 5.1.1',
      `Diagnostic-Code: smtp; 550 no${NUL}such user`,
      '--R',
      'Content-Type: text/rfc822-headers',
      '',
      `From: ${agent}`,
      `Message-ID: <orig${NUL}id@inbox.test>`,
      '--R--',
      '',
    ].join('\r\n');

  it.each(cases)('%s: taken (250) and stored without the NUL, readable through the API', async (_name, build) => {
    const result = await deliver(port, { from: 'sender@sender.example', to: [agent], message: build() });
    expect(result.data?.code, result.data?.text).toBe(250);
    const id = storedMessageId(result.data);
    const res = await getMessage(server, org.key, agent, id);
    expect(res.status).toBe(200);
    expect(JSON.stringify(res.body)).not.toContain('\\u0000');
  });

  it('a NUL in the envelope (MAIL FROM, RCPT TO) is refused permanently, never with a 4xx', async () => {
    const { client } = await SmtpTestClient.connect(port);
    try {
      await client.command('EHLO sender.example');
      const mail = await client.command(Buffer.from(`MAIL FROM:<se${NUL}nder@sender.example>`, 'utf8'));
      expect(mail.code === 250 || (mail.code >= 500 && mail.code < 600), `${mail.code} ${mail.text}`).toBe(true);
      if (mail.code !== 250) await client.command('RSET');
      await client.command('MAIL FROM:<sender@sender.example>');
      const rcpt = await client.command(Buffer.from(`RCPT TO:<${agent.replace('@', `${NUL}@`)}>`, 'utf8'));
      expect(rcpt.code >= 500 && rcpt.code < 600, `${rcpt.code} ${rcpt.text}`).toBe(true);
    } finally {
      client.close();
    }
  });
});
