import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInboxTestDatabase, dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { createHook } from '../support/inbox-webhooks.js';
import { deliver, SmtpTestClient, storedMessageId, transact } from '../support/smtp-client.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';
import { call, enc, eventsOf, organization, unique } from './fixtures.js';
import {
  downloadAttachment,
  downloadRaw,
  getMessage,
  simpleMessage,
  smtpPort,
  storedRows,
} from './smtp-inbound.helpers.js';

/** The SMTP face of inbound mail: what a foreign server sees, and what the API then shows. */
describe.each(dialects)('%s: inbound SMTP', (dialect) => {
  let server: InboxTestServer;
  let org: Awaited<ReturnType<typeof organization>>;
  let agent: string;
  let port: number;

  beforeAll(async () => {
    server = await startInboxServer({ dialect });
    org = await organization(server, [unique('agent')]);
    agent = org.inboxes[0] as string;
    port = smtpPort(server);
  });
  afterAll(async () => {
    await server.close();
  });

  it('stores a message a foreign server sends with nodemailer, readable through REST with its raw source, thread and attachment, and signs a message.received webhook', async () => {
    const receiver = await startWebhookReceiver();
    try {
      const tenant = { key: org.key, organizationId: org.organizationId, podId: '', inboxId: agent };
      await createHook(server, receiver, tenant, '/inbound', { inbox_ids: [agent], event_types: ['message.received'] });
      const transport = nodemailer.createTransport({
        host: '127.0.0.1',
        port,
        secure: false,
        ignoreTLS: true,
        name: 'mta.sender.example',
      });
      const pdf = Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.alloc(3000, 0x5a)]);
      const info = await transport.sendMail({
        from: 'Erika Mustermann <erika@sender.example>',
        to: agent,
        subject: 'Quarterly report',
        text: 'Hello, the report is attached.',
        html: '<p>Hello, the report is <b>attached</b>.</p>',
        messageId: '<quarterly.1@sender.example>',
        attachments: [{ filename: 'report.pdf', content: pdf, contentType: 'application/pdf' }],
      });
      transport.close();
      expect(info.accepted).toEqual([agent]);
      expect(info.response).toMatch(/^250 .*<quarterly\.1@sender\.example>/);

      const got = await getMessage(server, org.key, agent, '<quarterly.1@sender.example>');
      expect(got.status).toBe(200);
      expect(got.body).toMatchObject({
        inbox_id: agent,
        message_id: '<quarterly.1@sender.example>',
        labels: ['received', 'unread'],
        from: 'Erika Mustermann <erika@sender.example>',
        to: [agent],
        subject: 'Quarterly report',
        text: 'Hello, the report is attached.',
        html: '<p>Hello, the report is <b>attached</b>.</p>',
        preview: 'Hello, the report is attached.',
        attachments: [
          {
            filename: 'report.pdf',
            content_type: 'application/pdf',
            content_disposition: 'attachment',
            size: pdf.length,
          },
        ],
      });
      expect(got.body.headers).toMatchObject({
        'Return-Path': '<erika@sender.example>',
        Subject: 'Quarterly report',
        'Message-ID': '<quarterly.1@sender.example>',
      });
      // Unfolded as RFC 5322 says: the line breaks go, the tabs that began the continuation lines stay.
      expect(got.body.headers.Received).toMatch(
        /^from mta\.sender\.example \(\[127\.0\.0\.1\]\)\tby \S+ with ESMTP id \S+\tfor <[^>]+>;\t\w{3}, \d{1,2} \w{3} \d{4} [\d:]{8} \+0000$/,
      );
      // Verification is off in this suite: no verdict is claimed.
      expect(got.body.headers['Authentication-Results']).toBeUndefined();

      const file = await downloadAttachment(
        server,
        org.key,
        agent,
        got.body.message_id,
        got.body.attachments[0].attachment_id,
      );
      expect(file.equals(pdf)).toBe(true);
      const raw = await downloadRaw(server, org.key, agent, got.body.message_id);
      expect(raw.toString('latin1')).toMatch(
        /^Return-Path: <erika@sender\.example>\r\nReceived: from mta\.sender\.example /,
      );
      expect(raw.toString('latin1')).toContain('Message-ID: <quarterly.1@sender.example>');
      expect(got.body.size).toBe(raw.length);

      const thread = await call(
        server.url,
        org.key,
        'GET',
        `/v0/inboxes/${enc(agent)}/threads/${enc(got.body.thread_id)}`,
      );
      expect(thread.body).toMatchObject({
        message_count: 1,
        subject: 'Quarterly report',
        labels: ['received', 'unread'],
        messages: [{ message_id: '<quarterly.1@sender.example>' }],
      });

      await receiver.waitFor(1, 10_000);
      const [delivery] = receiver.received;
      expect(delivery).toMatchObject({ path: '/inbound', svix: true, standard: true });
      const event = JSON.parse(delivery?.body ?? '{}');
      expect(event).toMatchObject({
        type: 'event',
        event_type: 'message.received',
        message: {
          inbox_id: agent,
          message_id: '<quarterly.1@sender.example>',
          labels: ['received', 'unread'],
          subject: 'Quarterly report',
          text: 'Hello, the report is attached.',
        },
        thread: { inbox_id: agent, thread_id: got.body.thread_id, message_count: 1 },
      });
    } finally {
      await receiver.stop();
    }
  });

  it('answers RCPT 550 for an address without an inbox and 554 for a domain that is not local, and delivers to the rest, one copy per inbox', async () => {
    const other = await organization(server, [unique('peer')]);
    const peer = other.inboxes[0] as string;
    const result = await deliver(port, {
      from: 'sender@sender.example',
      to: [agent, `nobody-${unique('x')}@inbox.test`, 'someone@not-ours.example', peer.toUpperCase()],
      message: simpleMessage({
        to: `${agent}, ${peer}`,
        subject: 'Several recipients',
        messageId: `<several.${unique('m')}@sender.example>`,
      }),
    });
    expect(result.rcpt.map((r) => r.code)).toEqual([250, 550, 554, 250]);
    expect(result.rcpt[1]?.text).toMatch(/No such user/);
    expect(result.rcpt[2]?.text).toMatch(/Relay access denied/);
    expect(result.data?.code).toBe(250);
    const id = storedMessageId(result.data);
    expect((await getMessage(server, org.key, agent, id)).body.labels).toEqual(['received', 'unread']);
    expect((await getMessage(server, other.key, peer, id)).body).toMatchObject({
      inbox_id: peer,
      subject: 'Several recipients',
    });
    // Another organization's copy is not visible with this key.
    expect((await getMessage(server, org.key, peer, id)).status).toBe(404);
  });

  it('refuses a transaction whose every recipient is refused: DATA is answered 503 and nothing is stored', async () => {
    const { client } = await SmtpTestClient.connect(port);
    try {
      await client.command('EHLO sender.example');
      expect((await client.command('MAIL FROM:<sender@sender.example>')).code).toBe(250);
      expect((await client.command('RCPT TO:<ghost@inbox.test>')).code).toBe(550);
      expect((await client.command('DATA')).code).toBe(503);
    } finally {
      client.close();
    }
  });

  it('accepts the null sender (bounces) and records it as an empty Return-Path', async () => {
    const messageId = `<bounce.${unique('b')}@mailer.example>`;
    const result = await deliver(port, {
      from: '',
      to: [agent],
      message: simpleMessage({
        from: 'Mail Delivery System <MAILER-DAEMON@mailer.example>',
        subject: 'Undelivered Mail Returned to Sender',
        messageId,
      }),
    });
    expect(result.data?.code).toBe(250);
    const got = await getMessage(server, org.key, agent, messageId);
    expect(got.body.headers['Return-Path']).toBe('<>');
    expect(got.body.from).toBe('Mail Delivery System <MAILER-DAEMON@mailer.example>');
  });

  it('stores a retried message once: the same Message-ID to the same inbox is answered 250 again without a second copy', async () => {
    const messageId = `<retry.${unique('r')}@sender.example>`;
    const inbox = (await organization(server, [unique('retry')])).inboxes[0] as string;
    const first = await deliver(port, {
      from: 'sender@sender.example',
      to: [inbox],
      message: simpleMessage({ to: inbox, messageId }),
    });
    const second = await deliver(port, {
      from: 'sender@sender.example',
      to: [inbox],
      message: simpleMessage({ to: inbox, messageId }),
    });
    expect([first.data?.code, second.data?.code]).toEqual([250, 250]);
    expect(storedMessageId(second.data)).toBe(messageId);
    expect(await storedRows(server, inbox)).toMatchObject({ messages: 1, threads: 1, events: 1 });
  });

  it('never crashes on malformed DATA: each message gets the reply pinned for it, whatever is accepted can be read back, and the listener keeps working', async () => {
    const owner = await organization(server, [unique('junk')]);
    const inbox = owner.inboxes[0] as string;
    // mailparser is lenient: each of these parses into something and is stored (250). Input it
    // cannot take apart at all (over 1000 MIME parts) is answered 554 (next test).
    const junk: { name: string; code: number; message: Buffer }[] = [
      {
        name: 'binary garbage with NULs',
        code: 250,
        message: Buffer.from([0x00, 0x01, 0x02, 0xff, 0xfe, 0x0d, 0x0a, 0x80, 0x00, 0x41]),
      },
      {
        name: 'NULs in header and body',
        code: 250,
        message: Buffer.from(
          'Subject: nul\0in\0header\r\nFrom: a\0b@sender.example\r\n\r\nbody with \0 NUL bytes and \x1b escapes\r\n',
          'latin1',
        ),
      },
      { name: 'no header section', code: 250, message: Buffer.from('no header section at all, just text\r\n') },
      {
        name: 'a 100,000-character line',
        code: 250,
        message: Buffer.from(`Subject: long line\r\n\r\n${'x'.repeat(100_000)}\r\n`),
      },
      {
        name: 'bare LF, unknown charset, broken base64',
        code: 250,
        message: Buffer.from(
          'Subject: bare LF\nContent-Type: multipart/mixed; boundary=zz\n\n--zz\nContent-Type: text/plain; charset=does-not-exist\nContent-Transfer-Encoding: base64\n\n@@@@\n--zz--\n',
        ),
      },
      {
        name: 'broken addresses, encoded words and ids',
        code: 250,
        message: Buffer.from(
          'From: <<<>>>@@@\r\nTo: ,,,;;;\r\nSubject: =?UTF-8?B?!!!?= =?bogus?Q?x?=\r\nMessage-ID: not an id\r\nReferences: <a@b> garbage <c@d\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n<p>=ZZ=\r\n',
        ),
      },
      {
        name: '200 nested multiparts, never closed',
        code: 250,
        message: Buffer.from(
          `Content-Type: multipart/mixed; boundary=a\r\n\r\n${'--a\r\nContent-Type: multipart/mixed; boundary=a\r\n\r\n'.repeat(200)}`,
        ),
      },
    ];
    const { client } = await SmtpTestClient.connect(port);
    try {
      await client.command('EHLO sender.example');
      for (const { name, code, message } of junk) {
        const result = await transact(client, {
          from: 'fuzz@sender.example',
          to: [inbox],
          message,
          mailParams: 'BODY=8BITMIME',
        });
        expect(result.data?.code, name).toBe(code);
        if (result.data?.code === 250) {
          const got = await getMessage(server, owner.key, inbox, storedMessageId(result.data));
          expect(got.status, `${name}: ${result.data.text}`).toBe(200);
        }
      }
    } finally {
      client.close();
    }
    expect(await storedRows(server, inbox)).toMatchObject({ messages: junk.filter((j) => j.code === 250).length });
    const after = await deliver(port, {
      from: 'sender@sender.example',
      to: [inbox],
      message: simpleMessage({ to: inbox, subject: 'Still alive' }),
    });
    expect(after.data?.code).toBe(250);
  });

  it('answers 554 to a message mailparser cannot take apart (over 1000 MIME parts) and stores nothing', async () => {
    const inbox = (await organization(server, [unique('parts')])).inboxes[0] as string;
    const parts = Array.from({ length: 1001 }, (_, i) => `--p\r\nContent-Type: text/plain\r\n\r\npart ${i}\r\n`).join(
      '',
    );
    const message = `From: a@sender.example\r\nSubject: parts\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=p\r\n\r\n${parts}--p--\r\n`;
    const result = await deliver(port, { from: 'a@sender.example', to: [inbox], message });
    expect(result.data?.code).toBe(554);
    expect(result.data?.text).toMatch(/could not be parsed/);
    expect(await storedRows(server, inbox)).toMatchObject({ messages: 0, threads: 0, events: 0 });
  });

  it('leaves nothing behind when the client disconnects in the middle of DATA', async () => {
    const inbox = (await organization(server, [unique('cut')])).inboxes[0] as string;
    const { client } = await SmtpTestClient.connect(port);
    await client.command('EHLO sender.example');
    await client.command('MAIL FROM:<sender@sender.example>');
    await client.command(`RCPT TO:<${inbox}>`);
    expect((await client.command('DATA')).code).toBe(354);
    client.write(simpleMessage({ to: inbox, subject: 'cut off', body: 'half a message' }));
    client.close();
    await new Promise((r) => setTimeout(r, 300));
    expect(await storedRows(server, inbox)).toMatchObject({ messages: 0, threads: 0, events: 0 });
    expect(
      (await deliver(port, { from: 'sender@sender.example', to: [inbox], message: simpleMessage({ to: inbox }) })).data
        ?.code,
    ).toBe(250);
  });
});

describe.each(dialects)('%s: inbound SMTP limits', (dialect) => {
  let server: InboxTestServer;
  let org: Awaited<ReturnType<typeof organization>>;
  let port: number;

  beforeAll(async () => {
    server = await startInboxServer({
      dialect,
      env: {
        INBOX_SMTP_MAX_MESSAGE_BYTES: '4096',
        INBOX_SMTP_MAX_RECIPIENTS: '2',
        INBOX_SMTP_MAX_MESSAGES_PER_CONNECTION: '2',
        INBOX_SMTP_MAX_CONNECTIONS: '3',
      },
    });
    org = await organization(server, [unique('a'), unique('b'), unique('c')]);
    port = smtpPort(server);
  });
  afterAll(async () => {
    await server.close();
  });

  it('advertises SIZE, refuses MAIL with a larger SIZE= (552), answers 552 to a larger message without storing it, and goes on', async () => {
    const inbox = org.inboxes[0] as string;
    const { client } = await SmtpTestClient.connect(port);
    try {
      const ehlo = await client.command('EHLO sender.example');
      expect(ehlo.lines).toContain('250 SIZE 4096');
      expect(ehlo.text).toMatch(/8BITMIME/);
      expect(ehlo.text).toMatch(/SMTPUTF8/);
      expect(ehlo.text).toMatch(/PIPELINING/);
      expect(ehlo.text).not.toMatch(/AUTH|STARTTLS/);
      expect((await client.command('MAIL FROM:<sender@sender.example> SIZE=5000')).code).toBe(552);
      const big = await transact(client, {
        from: 'sender@sender.example',
        to: [inbox],
        message: simpleMessage({ to: inbox, subject: 'too big', body: 'y'.repeat(6000) }),
      });
      expect(big.data?.code).toBe(552);
      expect(await storedRows(server, inbox)).toMatchObject({ messages: 0 });
      const small = await transact(client, {
        from: 'sender@sender.example',
        to: [inbox],
        message: simpleMessage({ to: inbox, subject: 'small' }),
      });
      expect(small.data?.code).toBe(250);
    } finally {
      client.close();
    }
  });

  it('answers 452 to recipients beyond INBOX_SMTP_MAX_RECIPIENTS and delivers to those accepted (RFC 5321 §4.5.3.1.10)', async () => {
    const [a, b, c] = org.inboxes as [string, string, string];
    const result = await deliver(port, {
      from: 'sender@sender.example',
      to: [a, b, c],
      message: simpleMessage({
        to: `${a}, ${b}, ${c}`,
        subject: 'three',
        messageId: `<three.${unique('t')}@sender.example>`,
      }),
    });
    expect(result.rcpt.map((r) => r.code)).toEqual([250, 250, 452]);
    expect(result.data?.code).toBe(250);
    const id = storedMessageId(result.data);
    expect((await getMessage(server, org.key, a, id)).status).toBe(200);
    expect((await getMessage(server, org.key, b, id)).status).toBe(200);
    expect((await getMessage(server, org.key, c, id)).status).toBe(404);
  });

  it('answers 421 to the MAIL beyond INBOX_SMTP_MAX_MESSAGES_PER_CONNECTION and closes the connection', async () => {
    const inbox = org.inboxes[1] as string;
    const { client } = await SmtpTestClient.connect(port);
    try {
      await client.command('EHLO sender.example');
      for (let i = 0; i < 2; i++)
        expect(
          (
            await transact(client, {
              from: 'sender@sender.example',
              to: [inbox],
              message: simpleMessage({ to: inbox, subject: `n${i}` }),
            })
          ).data?.code,
        ).toBe(250);
      const third = await client.command('MAIL FROM:<sender@sender.example>');
      expect(third.code).toBe(421);
      await client.closed;
    } finally {
      client.close();
    }
  });

  // Last of this server's tests: the sessions it closes leave the server's count a moment later.
  it('refuses a connection beyond INBOX_SMTP_MAX_CONNECTIONS with 421', async () => {
    const open = await Promise.all([0, 1, 2].map(() => SmtpTestClient.connect(port)));
    try {
      expect(open.map((o) => o.greeting.code)).toEqual([220, 220, 220]);
      const socket = net.connect(port, '127.0.0.1');
      const greeting = await new Promise<string>((resolve) => socket.once('data', (d) => resolve(d.toString())));
      socket.destroy();
      expect(greeting).toMatch(/^421 .*Too many connected clients/);
    } finally {
      for (const { client } of open) client.close();
    }
  });
});

describe.each(dialects)('%s: inbound SMTP sessions', (dialect) => {
  it('offers STARTTLS only with a key and certificate of our own, and stores mail received over TLS as ESMTPS', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'smtp-tls-'));
    const key = path.join(dir, 'key.pem');
    const cert = path.join(dir, 'cert.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '1',
        '-subj',
        '/CN=mx.inbox.test',
      ],
      { stdio: 'ignore' },
    );
    // The key as a path, the certificate as PEM text: both forms are accepted.
    const server = await startInboxServer({
      dialect,
      env: {
        INBOX_SMTP_TLS_KEY: key,
        INBOX_SMTP_TLS_CERT: readFileSync(cert, 'utf8'),
        INBOX_SMTP_HOSTNAME: 'mx.inbox.test',
      },
    });
    try {
      const org = await organization(server, [unique('tls')]);
      const inbox = org.inboxes[0] as string;
      const { client, greeting } = await SmtpTestClient.connect(smtpPort(server));
      try {
        expect(greeting.text).toMatch(/^mx\.inbox\.test ESMTP/);
        expect((await client.command('EHLO sender.example')).lines).toContain('250-STARTTLS');
        const { reply, socket } = await client.startTls();
        expect(reply.code).toBe(220);
        expect(socket?.getPeerCertificate().subject.CN).toBe('mx.inbox.test');
        const ehlo = await client.command('EHLO sender.example');
        expect(ehlo.text).not.toMatch(/STARTTLS/);
        const result = await transact(client, {
          from: 'sender@sender.example',
          to: [inbox],
          message: simpleMessage({ to: inbox, subject: 'over TLS' }),
        });
        const got = await getMessage(server, org.key, inbox, storedMessageId(result.data));
        expect(got.body.headers.Received).toMatch(/by mx\.inbox\.test with ESMTPS id/);
      } finally {
        client.close();
      }
    } finally {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('waits INBOX_SMTP_GREETING_DELAY_MS before greeting and refuses a client that talks first (421)', async () => {
    const slow = await startInboxServer({ dialect, env: { INBOX_SMTP_GREETING_DELAY_MS: '600' } });
    const fast = await startInboxServer({ dialect, env: { INBOX_SMTP_GREETING_DELAY_MS: '0' } });
    try {
      const greetingTime = async (port: number) => {
        const started = Date.now();
        const { client, greeting } = await SmtpTestClient.connect(port);
        client.close();
        expect(greeting.code).toBe(220);
        return Date.now() - started;
      };
      expect(await greetingTime(smtpPort(slow))).toBeGreaterThanOrEqual(550);
      expect(await greetingTime(smtpPort(fast))).toBeLessThan(550);

      const socket = net.connect(smtpPort(slow), '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write('EHLO early.example\r\n');
      const answer = await new Promise<string>((resolve) => {
        let text = '';
        socket.on('data', (d) => (text += d.toString()));
        socket.once('close', () => resolve(text));
      });
      expect(answer).toMatch(/^421 .*You talk too soon/m);
    } finally {
      await slow.close();
      await fast.close();
    }
  });

  it('closes gracefully: DATA in flight is stored and answered 250, idle sessions get 421, new connections are refused', async () => {
    const database = createInboxTestDatabase(dialect);
    // Slow DNS keeps the message between its final dot and its commit while the service closes.
    const slowDns = async (name: string) => {
      await new Promise((r) => setTimeout(r, 700));
      throw Object.assign(new Error(`queryTxt ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    };
    const first = await startInboxServer({
      database,
      env: { INBOX_SMTP_VERIFY_AUTH: 'true', INBOX_SMTP_AUTH_TIMEOUT_MS: '3000' },
      dnsResolver: slowDns,
    });
    let closing: Promise<void> | undefined;
    let second: InboxTestServer | undefined;
    try {
      const org = await organization(first, [unique('close')]);
      const inbox = org.inboxes[0] as string;
      const port = smtpPort(first);
      const idle = (await SmtpTestClient.connect(port)).client;
      await idle.command('EHLO idle.example');
      const busy = (await SmtpTestClient.connect(port)).client;
      await busy.command('EHLO busy.example');
      await busy.command('MAIL FROM:<sender@sender.example>');
      await busy.command(`RCPT TO:<${inbox}>`);
      const messageId = `<in-flight.${unique('f')}@sender.example>`;
      const dataReply = busy.data(simpleMessage({ to: inbox, messageId }));
      await new Promise((r) => setTimeout(r, 200));
      closing = first.close();
      await idle.closed;
      expect((await dataReply).code).toBe(250);
      await closing;
      await busy.closed;
      await expect(SmtpTestClient.connect(port)).rejects.toThrow();

      second = await startInboxServer({ database });
      const got = await getMessage(second, org.key, inbox, messageId);
      expect(got.status).toBe(200);
      expect(got.body.labels).toEqual(['received', 'unread', 'unauthenticated']);
    } finally {
      await (closing ?? first.close());
      await second?.close();
      await database.drop();
    }
  });
});

describe.each(dialects)('%s: inbound SMTP and delivery status notifications', (dialect) => {
  it('turns a report about mail an inbox sent into message.bounced instead of storing it, once however often it arrives; other reports are stored, and every reply reads the same', async () => {
    // Sends to other domains are queued for the relay; without the worker role nothing leaves.
    const server = await startInboxServer({
      dialect,
      env: { INBOX_ROLES: 'api,smtp', INBOX_SMTP_RELAY_URL: 'smtp://127.0.0.1:9' },
    });
    try {
      const org = await organization(server, [unique('dsn'), unique('peer')]);
      const [inbox, peer] = org.inboxes as [string, string];
      const sent = await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(inbox)}/messages`, {
        to: ['gone@remote.example', 'other@remote.example', peer],
        subject: 'Outbound check',
        text: 'hello',
      });
      expect(sent.status).toBe(200);
      const messageId = sent.body.message_id as string;
      const fixture = (name: string, failed: string, reportId: string) =>
        readFileSync(new URL(`../fixtures/dsn/${name}`, import.meta.url), 'utf8')
          .replaceAll('<20261121120005.4F2C81C0A2@relay.example.net>', reportId)
          .replaceAll('{{SENDER}}', inbox)
          .replaceAll('{{FAILED}}', failed)
          .replaceAll('{{OTHER}}', 'other@remote.example')
          .replaceAll('{{ENVID}}', messageId.slice(1, -1))
          .replaceAll('{{MESSAGE_ID}}', messageId);
      const send = (message: string) =>
        deliver(smtpPort(server), { from: '', to: [inbox], message, mailParams: 'BODY=8BITMIME' });
      const bounces = async () =>
        (await eventsOf(server, { type: 'message.bounced', inboxId: inbox })).map((e) => e.bounce);
      const replies: string[] = [];

      const report = fixture('postfix-user-unknown.eml', 'gone@remote.example', '<report.1@relay.example.net>');
      for (let i = 0; i < 2; i++) {
        // The second delivery is a retry after a lost 250: answered alike, bounced once.
        const result = await send(report);
        expect(result.data?.code).toBe(250);
        replies.push(result.data?.text ?? '');
      }
      expect(await bounces()).toHaveLength(1);
      expect((await bounces())[0]).toMatchObject({
        message_id: messageId,
        type: 'Permanent',
        recipients: [{ address: 'gone@remote.example', status: '5.1.1' }],
      });
      // Only the sent copy: the report was not stored.
      expect(await storedRows(server, inbox)).toMatchObject({ messages: 1 });

      // Reports that bounce nothing are mail for the inbox: a delay, one about a message it never
      // sent, and one claiming a local recipient failed (local mail never went through the relay).
      const others = [
        fixture('delayed.eml', 'gone@remote.example', '').replace(
          /^To: /m,
          'Message-ID: <report.2@relay.example.net>\r\nTo: ',
        ),
        fixture('postfix-user-unknown.eml', 'gone@remote.example', '<report.3@relay.example.net>')
          .replaceAll(messageId, '<someone-else@remote.example>')
          .replaceAll(messageId.slice(1, -1), 'someone-else@remote.example'),
        fixture('postfix-user-unknown.eml', peer, '<report.4@relay.example.net>'),
      ];
      for (const message of others) {
        const result = await send(message);
        expect(result.data?.code).toBe(250);
        replies.push(result.data?.text ?? '');
      }
      expect(await bounces()).toHaveLength(1);
      expect(await storedRows(server, inbox)).toMatchObject({ messages: 4 });
      for (const id of ['<report.2@relay.example.net>', '<report.3@relay.example.net>', '<report.4@relay.example.net>'])
        expect((await getMessage(server, org.key, inbox, id)).status).toBe(200);

      // Stored, already held, or turned into bounces: one text, so that a reply tells nothing about an inbox.
      for (const text of replies) expect(text).toMatch(/^OK: message accepted as <[^<>]+>$/);
    } finally {
      await server.close();
    }
  });
});
