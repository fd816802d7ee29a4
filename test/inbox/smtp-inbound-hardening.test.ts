import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPem } from '../../src/inbox/smtp/smtp.server.js';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { deliver, SmtpTestClient, storedMessageId, transact } from '../support/smtp-client.js';
import { call, enc, organization, unique } from './fixtures.js';
import { testCertificate, type TestCertificate } from '../support/tls.js';
import { getMessage, simpleMessage, smtpPort, storedRows } from './smtp-inbound.helpers.js';

/**
 * What a hostile or merely unusual sender can throw at the listener: huge header sections, many
 * attachments to many inboxes, ids and subjects longer than an index takes, the reserved name
 * postmaster, internationalized domains, IPv6 clients, address harvesting, connection floods,
 * and TLS material in the forms operators hand it over.
 */

/** Random text of `length` characters drawn from `alphabet` (random, so that no index compresses it). */
function randomText(length: number, alphabet: string): string {
  const chars = Array.from(alphabet);
  return Array.from(randomBytes(length), (b) => chars[b % chars.length] as string).join('');
}

const BASE64ISH = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const CJK = '日本語中文字漢韓国朝鮮越南語電子郵便手紙返信転送件名送信受信宛先差出人添付資料会議議事録報告書';

describe.each(dialects)('%s: inbound SMTP under hostile and unusual input', (dialect) => {
  let server: InboxTestServer;
  let org: Awaited<ReturnType<typeof organization>>;
  let agent: string;
  let port: number;

  beforeAll(async () => {
    // '::' takes IPv4 and IPv6 clients; one of the local domains is written in its ASCII (xn--) form.
    server = await startInboxServer({
      dialect,
      env: {
        INBOX_SMTP_HOST: '::',
        INBOX_DOMAINS: 'inbox.test,xn--bcher-kva.test',
        INBOX_SMTP_MAX_CONNECTIONS_PER_IP: '4',
      },
    });
    org = await organization(server, [unique('agent')]);
    agent = org.inboxes[0] as string;
    port = smtpPort(server);
  });
  afterAll(async () => {
    await server?.close();
  });

  it(
    'answers a report-shaped message with 100,000 header lines within seconds, while the API stays responsive',
    { timeout: 60_000 },
    async () => {
      const status = `Reporting-MTA: dns; relay.example.net\r\n${'X-B: c\r\n'.repeat(50_000)}\r\nFinal-Recipient: rfc822; gone@remote.example\r\nAction: failed\r\nStatus: 5.1.1\r\n`;
      const message = [
        'From: MAILER-DAEMON@relay.example.net',
        `To: ${agent}`,
        'Subject: Undelivered Mail Returned to Sender',
        `Message-ID: <headers.${unique('h')}@relay.example.net>`,
        'MIME-Version: 1.0',
        'Content-Type: multipart/report; report-type=delivery-status; boundary="B"',
        'X-A: b\r\n'.repeat(100_000) + '',
        '--B',
        'Content-Type: text/plain',
        '',
        'It failed.',
        '--B',
        'Content-Type: message/delivery-status',
        '',
        status,
        '--B--',
        '',
      ].join('\r\n');
      const { client } = await SmtpTestClient.connect(port);
      const latencies: number[] = [];
      let done = false;
      const probe = (async () => {
        while (!done) {
          const started = performance.now();
          const reply = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(agent)}`);
          latencies.push(performance.now() - started);
          expect(reply.status).toBe(200);
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
      try {
        await client.command('EHLO relay.example.net');
        await client.command('MAIL FROM:<>');
        expect((await client.command(`RCPT TO:<${agent}>`)).code).toBe(250);
        const started = performance.now();
        const reply = await client.data(message, 20_000);
        const elapsed = performance.now() - started;
        expect(reply.code).toBe(250);
        expect(elapsed).toBeLessThan(10_000);
      } finally {
        done = true;
        await probe;
        client.close();
      }
      expect(latencies.length).toBeGreaterThan(0);
      expect(Math.max(...latencies)).toBeLessThan(2_000);
      // No message of ours is named: the report is ordinary mail, stored once.
      expect(await storedRows(server, agent)).toMatchObject({ messages: 1 });
    },
  );

  it(
    "stores one message with 900 attachments for 5 inboxes (4,500 attachment rows, past SQLite's bind-variable limit in one statement)",
    { timeout: 60_000 },
    async () => {
      const five = (await organization(server, [unique('m1'), unique('m2'), unique('m3'), unique('m4'), unique('m5')]))
        .inboxes;
      const parts = Array.from({ length: 900 }, (_, i) =>
        [
          `--att`,
          `Content-Type: application/octet-stream`,
          `Content-Disposition: attachment; filename="f${i}.bin"`,
          'Content-Transfer-Encoding: base64',
          '',
          Buffer.from(`attachment ${i}`).toString('base64'),
          '',
        ].join('\r\n'),
      ).join('');
      const messageId = `<many.${unique('a')}@sender.example>`;
      const message = `From: a@sender.example\r\nTo: ${five.join(', ')}\r\nSubject: many attachments\r\nMessage-ID: ${messageId}\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=att\r\n\r\n--att\r\nContent-Type: text/plain\r\n\r\nSee attached.\r\n${parts}--att--\r\n`;
      const result = await deliver(port, { from: 'a@sender.example', to: five, message });
      expect(result.rcpt.map((r) => r.code)).toEqual([250, 250, 250, 250, 250]);
      expect(result.data?.code).toBe(250);
      expect(storedMessageId(result.data)).toBe(messageId);
      for (const inbox of five)
        expect(await storedRows(server, inbox)).toEqual({
          messages: 1,
          threads: 1,
          events: 1,
          labels: 2,
          attachments: 900,
        });
    },
  );

  it('stores a message with a 3 kB random subject, and threads a reply to it by subject', async () => {
    const subject = randomText(3072, BASE64ISH);
    const first = await deliver(port, {
      from: 'long@sender.example',
      to: [agent],
      message: simpleMessage({
        from: 'long@sender.example',
        to: agent,
        subject,
        messageId: `<subject.${unique('s')}@sender.example>`,
      }),
    });
    expect(first.data?.code).toBe(250);
    const stored = await getMessage(server, org.key, agent, storedMessageId(first.data));
    expect(stored.body.subject).toBe(subject);
    // No References: only the subject (cut to the indexed 255 characters) can join the thread.
    const reply = await deliver(port, {
      from: 'long@sender.example',
      to: [agent],
      message: simpleMessage({
        from: 'long@sender.example',
        to: agent,
        subject: `Re: ${subject}`,
        messageId: `<subject-reply.${unique('s')}@sender.example>`,
      }),
    });
    expect(reply.data?.code).toBe(250);
    expect((await getMessage(server, org.key, agent, storedMessageId(reply.data))).body.thread_id).toBe(
      stored.body.thread_id,
    );
  });

  it('keys an over-long Message-ID (over 250 bytes, ASCII or UTF-8) by a stable stand-in: stored once across retries, the original kept in the source, replies threaded', async () => {
    const owner = await organization(server, [unique('ids')]);
    const inbox = owner.inboxes[0] as string;
    for (const original of [
      `<${randomText(3000, BASE64ISH)}@sender.example>`,
      `<${randomText(990, CJK)}@sender.example>`,
    ]) {
      const message = simpleMessage({ to: inbox, subject: 'long id', messageId: original });
      const first = await deliver(port, {
        from: 'sender@sender.example',
        to: [inbox],
        message,
        mailParams: 'BODY=8BITMIME SMTPUTF8',
      });
      const again = await deliver(port, {
        from: 'sender@sender.example',
        to: [inbox],
        message,
        mailParams: 'BODY=8BITMIME SMTPUTF8',
      });
      expect([first.data?.code, again.data?.code]).toEqual([250, 250]);
      const id = storedMessageId(first.data);
      expect(id).toMatch(/^<[0-9a-f]{40}@long-message-id\.invalid>$/);
      expect(storedMessageId(again.data)).toBe(id);
      const got = await getMessage(server, owner.key, inbox, id);
      expect(got.status).toBe(200);
      expect(got.body.headers['Message-ID']).toContain(original);
      const reply = await deliver(port, {
        from: 'sender@sender.example',
        to: [inbox],
        message: simpleMessage({
          to: inbox,
          subject: 'other words',
          messageId: `<r.${unique('r')}@sender.example>`,
          headers: `In-Reply-To: ${original}`,
        }),
        mailParams: 'BODY=8BITMIME SMTPUTF8',
      });
      expect((await getMessage(server, owner.key, inbox, storedMessageId(reply.data))).body.thread_id).toBe(
        got.body.thread_id,
      );
    }
    expect(await storedRows(server, inbox)).toMatchObject({ messages: 4, threads: 2 });
  });

  it('accepts postmaster (RFC 5321 §4.5.1) once an inbox named postmaster exists on the default domain, and refuses it clearly before', async () => {
    const before = await deliver(port, {
      from: 'sender@sender.example',
      to: ['postmaster'],
      message: simpleMessage({ to: 'postmaster' }),
    });
    expect(before.rcpt[0]?.code).toBe(550);
    expect(before.rcpt[0]?.text).toMatch(/no inbox named postmaster/);
    const owner = await organization(server, [{ username: 'postmaster', domain: 'inbox.test' }]);
    const postmaster = owner.inboxes[0] as string;
    expect(postmaster).toBe('postmaster@inbox.test');
    const messageId = `<pm.${unique('p')}@sender.example>`;
    const result = await deliver(port, {
      from: 'sender@sender.example',
      to: ['Postmaster', 'POSTMASTER@inbox.test', 'postmaster@xn--bcher-kva.test'],
      message: simpleMessage({ to: 'postmaster', messageId }),
    });
    expect(result.rcpt.map((r) => r.code)).toEqual([250, 250, 250]);
    expect(result.data?.code).toBe(250);
    expect((await getMessage(server, owner.key, postmaster, messageId)).status).toBe(200);
    expect(await storedRows(server, postmaster)).toMatchObject({ messages: 1 });
  });

  it('delivers to a domain configured as xn-- whether the sender writes it in Unicode or ASCII', async () => {
    const idn = await organization(server, [{ username: unique('idn'), domain: 'xn--bcher-kva.test' }]);
    const inbox = idn.inboxes[0] as string;
    expect(inbox).toMatch(/@xn--bcher-kva\.test$/);
    const local = inbox.slice(0, inbox.indexOf('@'));
    const unicode = await deliver(port, {
      from: 'sender@sender.example',
      to: [`${local}@bücher.test`],
      message: simpleMessage({ to: `${local}@bücher.test`, messageId: `<u.${unique('i')}@sender.example>` }),
      mailParams: 'SMTPUTF8',
    });
    const ascii = await deliver(port, {
      from: 'sender@sender.example',
      to: [`${local}@XN--BCHER-KVA.test`],
      message: simpleMessage({ to: inbox, messageId: `<a.${unique('i')}@sender.example>` }),
    });
    expect([unicode.rcpt[0]?.code, ascii.rcpt[0]?.code]).toEqual([250, 250]);
    expect([unicode.data?.code, ascii.data?.code]).toEqual([250, 250]);
    expect(await storedRows(server, inbox)).toMatchObject({ messages: 2 });
  });

  it('writes an IPv6 client as an [IPv6:…] address literal in Received', async () => {
    const result = await deliver(
      port,
      {
        from: 'sender@sender.example',
        to: [agent],
        message: simpleMessage({ to: agent, messageId: `<v6.${unique('v')}@sender.example>` }),
      },
      '::1',
    );
    const got = await getMessage(server, org.key, agent, storedMessageId(result.data));
    expect(got.body.headers.Received).toMatch(/^from sender\.example \(\[IPv6:::1\]\)\tby /);
  });

  it('closes a session with 421 after 20 refused recipients (address harvesting)', async () => {
    const { client } = await SmtpTestClient.connect(port);
    try {
      await client.command('EHLO harvester.example');
      expect((await client.command('MAIL FROM:<h@harvester.example>')).code).toBe(250);
      for (let i = 0; i < 20; i++) expect((await client.command(`RCPT TO:<guess${i}@inbox.test>`)).code).toBe(550);
      const last = await client.command('RCPT TO:<guess20@inbox.test>');
      expect(last.code).toBe(421);
      expect(last.text).toMatch(/Too many refused commands/);
      await client.closed;
    } finally {
      client.close();
    }
  });

  it('refuses a connection beyond INBOX_SMTP_MAX_CONNECTIONS_PER_IP from one address with 421, and takes it again once one closed', async () => {
    await new Promise((r) => setTimeout(r, 200));
    const open = await Promise.all([0, 1, 2, 3].map(() => SmtpTestClient.connect(port)));
    try {
      expect(open.map((o) => o.greeting.code)).toEqual([220, 220, 220, 220]);
      const fifth = await SmtpTestClient.connect(port);
      expect(fifth.greeting.code).toBe(421);
      expect(fifth.greeting.text).toMatch(/Too many connections from your address/);
      fifth.client.close();
      // Another address (IPv6 loopback) is not affected.
      const other = await SmtpTestClient.connect(port, '::1');
      expect(other.greeting.code).toBe(220);
      other.client.close();
      open.pop()?.client.close();
      await new Promise((r) => setTimeout(r, 200));
      const again = await SmtpTestClient.connect(port);
      expect(again.greeting.code).toBe(220);
      again.client.close();
    } finally {
      for (const { client } of open) client.close();
    }
  });
});

describe('inbound SMTP TLS material', () => {
  let pem: TestCertificate;
  let keyPem: string;
  let certPem: string;
  beforeAll(() => {
    pem = testCertificate('mx.inbox.test');
    keyPem = readFileSync(pem.key, 'utf8');
    certPem = readFileSync(pem.cert, 'utf8');
  });
  afterAll(() => pem?.remove());

  it('takes PEM text quoted and on one line with \\n escapes, as environment files hand it over', () => {
    const oneLine = (pem: string) => `"${pem.trim().replace(/\n/g, '\\n')}"`;
    expect(readPem(oneLine(keyPem), 'INBOX_SMTP_TLS_KEY').toString()).toBe(keyPem.trim());
    expect(readPem(`'${certPem}'`, 'INBOX_SMTP_TLS_CERT').toString()).toBe(certPem.trim());
    expect(readPem(pem.key, 'INBOX_SMTP_TLS_KEY').toString()).toBe(keyPem);
  });

  it('never repeats the value in an error: a mangled key (no BEGIN line) read as a path names only the setting', () => {
    const body = keyPem.split('\n').slice(1, 3).join('');
    let message = '';
    try {
      readPem(body, 'INBOX_SMTP_TLS_KEY');
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/^INBOX_SMTP_TLS_KEY is neither PEM text nor a readable PEM file \(ENOENT\)$/);
    expect(message).not.toContain(body.slice(0, 16));
  });

  it.each(dialects)('%s: offers STARTTLS with a quoted one-line key', async (dialect) => {
    const oneLine = `"${keyPem.trim().replace(/\n/g, '\\n')}"`;
    const server = await startInboxServer({
      dialect,
      env: { INBOX_SMTP_TLS_KEY: oneLine, INBOX_SMTP_TLS_CERT: certPem, INBOX_SMTP_HOSTNAME: 'mx.inbox.test' },
    });
    try {
      const { client } = await SmtpTestClient.connect(smtpPort(server));
      try {
        await client.command('EHLO sender.example');
        const { reply, socket } = await client.startTls();
        expect(reply.code).toBe(220);
        expect(socket?.getPeerCertificate().subject.CN).toBe('mx.inbox.test');
        const org = await organization(server, [unique('tls')]);
        const inbox = org.inboxes[0] as string;
        await client.command('EHLO sender.example');
        const result = await transact(client, {
          from: 'sender@sender.example',
          to: [inbox],
          message: simpleMessage({ to: inbox }),
        });
        expect(result.data?.code).toBe(250);
      } finally {
        client.close();
      }
    } finally {
      await server.close();
    }
  });

  it(
    'serves a renewed key and certificate after SIGHUP without a restart, and keeps the pair in use when the new one does not match',
    { timeout: 30_000 },
    async () => {
      const renewed = testCertificate('first.inbox.test');
      const { issue, dir: files, key: keyFile, cert: certFile } = renewed;
      const server = await startInboxServer({ env: { INBOX_SMTP_TLS_KEY: keyFile, INBOX_SMTP_TLS_CERT: certFile } });
      /** The subject CN a new STARTTLS session is shown. */
      const served = async () => {
        const { client } = await SmtpTestClient.connect(smtpPort(server));
        try {
          await client.command('EHLO sender.example');
          const { reply, socket } = await client.startTls();
          expect(reply.code).toBe(220);
          return socket?.getPeerCertificate().subject.CN;
        } finally {
          client.close();
        }
      };
      try {
        expect(await served()).toBe('first.inbox.test');
        issue('renewed.inbox.test');
        // The listener is in this process: the signal reaches its handler (without one it would end the process).
        expect(process.listenerCount('SIGHUP')).toBeGreaterThan(0);
        process.kill(process.pid, 'SIGHUP');
        await new Promise((r) => setTimeout(r, 100));
        expect(await served()).toBe('renewed.inbox.test');
        // A certificate whose key is elsewhere: not taken; the renewed pair stays in use.
        issue('mismatched.inbox.test', path.join(files, 'other-key.pem'), certFile);
        process.kill(process.pid, 'SIGHUP');
        await new Promise((r) => setTimeout(r, 100));
        expect(await served()).toBe('renewed.inbox.test');
      } finally {
        await server.close();
        renewed.remove();
      }
    },
  );

  it('fails to start without the value in the error when the key is neither PEM nor a file', async () => {
    const secret = `MIIEv${randomText(40, BASE64ISH)}`;
    const failure = await startInboxServer({ env: { INBOX_SMTP_TLS_KEY: secret, INBOX_SMTP_TLS_CERT: certPem } }).then(
      async (s) => {
        await s.close();
        return undefined;
      },
      (err: unknown) => err as Error,
    );
    expect(failure?.message).toMatch(/INBOX_SMTP_TLS_KEY/);
    expect(failure?.message).not.toContain(secret);
    expect(String(failure?.stack)).not.toContain(secret);
  });
});

describe.each(dialects)('%s: inbound SMTP memory and time bounds', (dialect) => {
  const MAX_MESSAGE = 64 * 1024;
  const BUDGET = 100 * 1024;
  let server: InboxTestServer;
  let agent: string;
  let port: number;

  beforeAll(async () => {
    server = await startInboxServer({
      dialect,
      env: {
        INBOX_SMTP_MAX_MESSAGE_BYTES: String(MAX_MESSAGE),
        INBOX_SMTP_MAX_BUFFERED_BYTES: String(BUDGET),
        INBOX_SMTP_DATA_TIMEOUT_MS: '1500',
        INBOX_SMTP_GREETING_DELAY_MS: '0',
      },
    });
    const org = await organization(server, [unique('agent')]);
    agent = org.inboxes[0] as string;
    port = smtpPort(server);
  });
  afterAll(async () => {
    await server?.close();
  });

  /** A session that has sent MAIL, RCPT and DATA and is ready for the message. */
  async function inData(subject: string): Promise<SmtpTestClient> {
    const { client } = await SmtpTestClient.connect(port);
    expect((await client.command('EHLO sender.example')).code).toBe(250);
    expect((await client.command('MAIL FROM:<sender@sender.example>')).code).toBe(250);
    expect((await client.command(`RCPT TO:<${agent}>`)).code).toBe(250);
    expect((await client.command('DATA')).code).toBe(354);
    client.write(
      `From: sender@sender.example\r\nTo: ${agent}\r\nSubject: ${subject}\r\nMessage-ID: <${unique(subject)}@sender.example>\r\n\r\n`,
    );
    return client;
  }
  const body = (bytes: number) => `${'x'.repeat(98)}\r\n`.repeat(Math.ceil(bytes / 100));
  const waitFor = async (check: () => Promise<boolean>) => {
    for (let i = 0; i < 200 && !(await check()); i++) await new Promise((r) => setTimeout(r, 25));
  };

  it(
    'refuses with 452 a message that would take the sessions past INBOX_SMTP_MAX_BUFFERED_BYTES, keeps the others, and takes it on retry',
    { timeout: 30_000 },
    async () => {
      const before = (await storedRows(server, agent)).messages;
      // A holds 60 KiB of its message, unfinished; B's 60 KiB would make 120 KiB > 100 KiB.
      const a = await inData('budget-a');
      a.write(body(60 * 1024));
      const b = await inData('budget-b');
      b.write(body(60 * 1024));
      b.write('.\r\n');
      const refused = await b.read();
      expect(refused.code).toBe(452);
      expect(refused.text).toMatch(/4\.3\.1|storage/i);
      // A goes on and is stored; its bytes were never dropped.
      a.write('.\r\n');
      const taken = await a.read();
      expect(taken.code).toBe(250);
      // B's sender retries once A is done, in the same session (452 leaves the session usable).
      expect((await b.command('RSET')).code).toBe(250);
      const retried = await transact(b, {
        from: 'sender@sender.example',
        to: [agent],
        message: `Subject: budget-b again\r\n\r\n${body(60 * 1024)}`,
      });
      expect(retried.data?.code).toBe(250);
      a.close();
      b.close();
      expect((await storedRows(server, agent)).messages).toBe(before + 2);
    },
  );

  it('refuses to start with a budget below the largest message', async () => {
    await expect(
      startInboxServer({
        dialect,
        env: {
          INBOX_SMTP_MAX_MESSAGE_BYTES: String(MAX_MESSAGE),
          INBOX_SMTP_MAX_BUFFERED_BYTES: String(MAX_MESSAGE - 1),
        },
      }),
    ).rejects.toThrow(
      /INBOX_SMTP_MAX_BUFFERED_BYTES \(65535\) must be at least INBOX_SMTP_MAX_MESSAGE_BYTES \(65536\)/,
    );
  });

  it(
    'closes with 421 a session that trickles DATA past INBOX_SMTP_DATA_TIMEOUT_MS, stores nothing of it, and frees its budget',
    { timeout: 30_000 },
    async () => {
      const before = (await storedRows(server, agent)).messages;
      const slow = await inData('trickle');
      // 50 KiB held at once, then a line every 200 ms: the idle timeout never fires, the deadline does.
      slow.write(body(50 * 1024));
      let trickling = true;
      const trickle = (async () => {
        while (trickling) {
          slow.write('still going\r\n');
          await new Promise((r) => setTimeout(r, 200));
        }
      })();
      const reply = await slow.read(10_000);
      trickling = false;
      await trickle;
      expect(reply.code).toBe(421);
      expect(reply.text).toMatch(/not complete within 1500 ms/);
      await Promise.race([
        slow.closed,
        new Promise((_, reject) => setTimeout(() => reject(new Error('the session stayed open')), 8_000)),
      ]);
      // Its 50 KiB no longer count: another 60 KiB message fits the 100 KiB budget at once.
      const next = await deliver(port, {
        from: 'sender@sender.example',
        to: [agent],
        message: `Subject: after the trickle\r\n\r\n${body(60 * 1024)}`,
      });
      expect(next.data?.code).toBe(250);
      await waitFor(async () => (await storedRows(server, agent)).messages === before + 1);
      expect((await storedRows(server, agent)).messages).toBe(before + 1);
    },
  );
});
