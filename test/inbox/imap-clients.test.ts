import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImapFlow } from 'imapflow';
import { createInboxTestDatabase, dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { organization, unique } from './fixtures.js';
import { IMAP_ENV, RawImap, connect, greeting, imapPort } from '../support/imap.js';
import { testCertificate, type TestCertificate } from '../support/tls.js';

/**
 * IMAP for mail clients beyond imapflow (decision 0045): Python's imaplib, TLS (STARTTLS, implicit
 * TLS, no plaintext login elsewhere than on an allowed loopback), hostile input, the failed-login
 * budget, and UIDs that survive a restart and agree between instances, on both dialects.
 */

const run = promisify(execFile);

describe.each(dialects)('IMAP clients and hostile input (%s)', (dialect) => {
  let server: InboxTestServer;
  let org: Awaited<ReturnType<typeof organization>>;
  let inbox: string;
  let peer: string;

  beforeAll(async () => {
    server = await startInboxServer({
      dialect,
      jobPollMs: 20,
      env: { ...IMAP_ENV, INBOX_IMAP_LOGIN_FAILURES: '3', INBOX_IMAP_MAX_CONNECTIONS_PER_KEY: '3' },
    });
    org = await organization(server, [unique('py'), unique('peer')]);
    [inbox, peer] = org.inboxes as [string, string];
    for (const word of ['one', 'two'])
      await org.client.inboxes.messages.send(peer, { to: inbox, subject: `imaplib ${word}`, text: `imaplib ${word}` });
  });

  afterAll(async () => {
    await server?.close();
  });

  it("serves Python's imaplib: list, select, search, fetch, store, expunge to the Trash", async () => {
    const script = new URL('./imap/imaplib-session.py', import.meta.url).pathname;
    const { stdout } = await run('python3', [script, '127.0.0.1', String(imapPort(server)), inbox, org.key]);
    const out = JSON.parse(stdout) as Record<string, unknown>;
    expect(out.capabilities).toEqual(expect.arrayContaining(['IMAP4REV1', 'IDLE', 'LITERAL+']));
    expect(out.login).toBe('OK');
    expect(out.list).toEqual([
      '(\\HasNoChildren) "/" INBOX',
      '(\\HasNoChildren \\Sent) "/" Sent',
      '(\\HasNoChildren \\Trash) "/" Trash',
      '(\\HasNoChildren \\Junk) "/" Spam',
      '(\\HasNoChildren \\Drafts) "/" Drafts',
    ]);
    expect(out.exists).toBe(2);
    expect(out.unseen).toEqual([1, 2]);
    expect(out.subjects).toEqual(['Subject: imaplib one', 'Subject: imaplib two']);
    expect(out.structure).toMatch(/BODYSTRUCTURE \("TEXT" "PLAIN" \("CHARSET" "utf-8"\)/i);
    expect(out.text_has_body).toBe(true);
    // BODY[TEXT] (not PEEK) marks the message read, in REST too.
    expect(out.flags_after_body).toContain('\\Seen');
    expect(out.expunged).toEqual(['2']);
    expect(out.trash).toMatch(/Trash \(MESSAGES 1 UIDNEXT 2\)/);
    expect(out.create).toBe('NO');
    expect(out.bad_section).toBe('BAD');
    expect(out.logout).toBe('BYE');
    const trashed = await org.client.inboxes.messages.list(inbox, { labels: ['trash'] });
    expect(trashed.messages.map((m) => m.subject)).toEqual(['imaplib two']);
    const read = await org.client.inboxes.messages.list(inbox, { limit: 10 });
    expect(read.messages.find((m) => m.subject === 'imaplib one')?.labels).not.toContain('unread');
  });

  it('serves curl: the folder list, a message by UID, and a search', async () => {
    const base = `imap://127.0.0.1:${imapPort(server)}`;
    const user = ['-u', `${inbox}:${org.key}`];
    const list = await run('curl', ['-sS', '--fail', ...user, `${base}/`]);
    expect(list.stdout).toContain('"/" INBOX');
    expect(list.stdout).toContain('\\Trash) "/" Trash');
    const message = await run('curl', ['-sS', '--fail', ...user, `${base}/INBOX;UID=1`]);
    expect(message.stdout).toContain('Subject: imaplib one');
    const search = await run('curl', ['-sS', '--fail', ...user, `${base}/INBOX?SUBJECT%20%22imaplib%20one%22`]);
    expect(search.stdout.trim()).toBe('* SEARCH 1');
  });

  it('answers BAD to nonsense, never crashes, and cuts off oversized lines and literals', async () => {
    const raw = await RawImap.open(imapPort(server));
    try {
      expect(await raw.command('a1', 'FROB')).toMatch(/^a1 BAD/m);
      expect(await raw.command('a2', 'SELECT INBOX')).toMatch(/^a2 BAD/m);
      expect(await raw.command('a3', 'LOGIN')).toMatch(/^a3 BAD/m);
      expect(await raw.command('a4', 'FETCH 1:* (FLAGS')).toMatch(/^a4 BAD/m);
      raw.send('a5 LOGIN {99999999}\r\n');
      expect(await raw.until(/^a5 .*\r\n/m)).toMatch(/^a5 BAD \[TOOBIG\]/m);
      expect(await raw.command('a6', `LOGIN ${inbox} ${org.key}`)).toMatch(/^a6 OK/m);
      expect(await raw.command('a7', 'SELECT INBOX')).toMatch(/^a7 OK \[READ-WRITE\]/m);
      expect(await raw.command('a8', 'FETCH 99 FLAGS')).toMatch(/^a8 BAD/m);
      expect(await raw.command('a9', 'UID FETCH 1:* (BODY[1.2.3.4.5.6])')).toMatch(/^a9 OK/m);
      expect(await raw.command('b1', 'SEARCH OR OR OR')).toMatch(/^b1 BAD/m);
      expect(await raw.command('b2', 'STORE 1 +FLAGS (received)')).toMatch(/^b2 OK/m);
      expect(await raw.command('b3', 'UID SEARCH UID 1:* NOT DELETED')).toMatch(/^\* SEARCH[\d ]*\r\n/m);
      raw.send(`b4 NOOP ${'x'.repeat(70_000)}`);
      await raw.until(/^\* BYE/m);
    } finally {
      raw.close();
    }
    // Still serving.
    const after = await RawImap.open(imapPort(server));
    expect(await after.command('c1', 'CAPABILITY')).toMatch(/^c1 OK/m);
    after.close();
  });

  it('counts failed logins per user name and address, and never logs in beyond the budget', async () => {
    const user = `${unique('nobody')}@inbox.test`;
    for (let i = 0; i < 3; i++) {
      const raw = await RawImap.open(imapPort(server));
      expect(await raw.command('f', `LOGIN ${user} am_wrong${i}`)).toMatch(/^f NO \[AUTHENTICATIONFAILED\]/m);
      raw.close();
    }
    const raw = await RawImap.open(imapPort(server));
    expect(await raw.command('f', `LOGIN ${user} am_wrong`)).toMatch(/^f NO \[UNAVAILABLE\]/m);
    raw.close();
  });

  it('holds at most INBOX_IMAP_MAX_CONNECTIONS_PER_KEY sessions of one key, and refuses moves the labels cannot express', async () => {
    const created = (await org.client.apiKeys.create({ name: unique('limit') })) as { apiKey: string };
    const open: RawImap[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        const raw = await RawImap.open(imapPort(server));
        open.push(raw);
        expect(await raw.command('l', `LOGIN ${inbox} ${created.apiKey}`)).toMatch(/^l OK/m);
      }
      const fourth = await RawImap.open(imapPort(server));
      open.push(fourth);
      expect(await fourth.command('l', `LOGIN ${inbox} ${created.apiKey}`)).toMatch(/^l NO \[LIMIT\]/m);
      const first = open[0] as RawImap;
      expect(await first.command('s', 'SELECT INBOX')).toMatch(/^s OK/m);
      expect(await first.command('m', 'UID MOVE 1 Sent')).toMatch(/^m NO \[CANNOT\]/m);
      expect(await first.command('d', 'MOVE 1 Drafts')).toMatch(/^d NO \[CANNOT\]/m);
    } finally {
      for (const raw of open) raw.close();
    }
  });

  it('uses AUTHENTICATE PLAIN with and without an initial response', async () => {
    const plain = Buffer.from(`\0${inbox}\0${org.key}`).toString('base64');
    const raw = await RawImap.open(imapPort(server));
    raw.send('p1 AUTHENTICATE PLAIN\r\n');
    await raw.until(/^\+ ?\r\n/m);
    raw.send(`${plain}\r\n`);
    expect(await raw.until(/^p1 .*\r\n/m)).toMatch(/^p1 OK/m);
    raw.close();
    const client = new ImapFlow({
      host: '127.0.0.1',
      port: imapPort(server),
      secure: false,
      doSTARTTLS: false,
      auth: { user: inbox, pass: org.key, loginMethod: 'AUTH=PLAIN' },
      logger: false,
    });
    await client.connect();
    await client.logout();
  });
});

describe('IMAP over TLS', () => {
  let pem: TestCertificate;
  let server: InboxTestServer;
  let org: Awaited<ReturnType<typeof organization>>;
  let inbox: string;

  beforeAll(async () => {
    pem = testCertificate('imap.inbox.test');
    server = await startInboxServer({
      env: {
        ...IMAP_ENV,
        INBOX_IMAP_ALLOW_PLAINTEXT_LOOPBACK: 'false',
        INBOX_SMTP_TLS_KEY: pem.key,
        INBOX_SMTP_TLS_CERT: pem.cert,
      },
    });
    org = await organization(server, [unique('tls')]);
    inbox = org.inboxes[0] as string;
  });

  afterAll(async () => {
    await server?.close();
    pem?.remove();
  });

  it('refuses LOGIN in clear text and offers STARTTLS', async () => {
    const raw = await RawImap.open(imapPort(server));
    const caps = await raw.command('t1', 'CAPABILITY');
    expect(caps).toContain('STARTTLS');
    expect(caps).toContain('LOGINDISABLED');
    expect(await raw.command('t2', `LOGIN ${inbox} ${org.key}`)).toMatch(/^t2 NO \[PRIVACYREQUIRED\]/m);
    raw.close();
  });

  it('logs in after STARTTLS and on the implicit-TLS port', async () => {
    const ca = readFileSync(pem.cert);
    const starttls = new ImapFlow({
      host: '127.0.0.1',
      port: imapPort(server),
      secure: false,
      doSTARTTLS: true,
      tls: { ca, servername: 'imap.inbox.test' },
      auth: { user: inbox, pass: org.key },
      logger: false,
    });
    await starttls.connect();
    expect(starttls.secureConnection).toBe(true);
    await starttls.logout();
    const tlsPort = server.service.imap?.tlsPort as number;
    expect(tlsPort).toBeGreaterThan(0);
    const implicit = new ImapFlow({
      host: '127.0.0.1',
      port: tlsPort,
      secure: true,
      tls: { ca, servername: 'imap.inbox.test' },
      auth: { user: inbox, pass: org.key },
      logger: false,
    });
    await implicit.connect();
    await implicit.mailboxOpen('INBOX');
    await implicit.logout();
    // A command pipelined behind STARTTLS in clear text is dropped, not run after the handshake.
    const socket = net.connect(imapPort(server), '127.0.0.1');
    await new Promise((r) => socket.once('data', r));
    socket.write('s1 STARTTLS\r\ns2 LOGIN injected x\r\n');
    const upgraded = await new Promise<string>((resolve) => socket.once('data', (d) => resolve(d.toString())));
    expect(upgraded).toMatch(/^s1 OK/);
    const secured = tls.connect({ socket, ca, servername: 'imap.inbox.test' });
    await new Promise((r) => secured.once('secureConnect', r));
    secured.write('s3 NOOP\r\n');
    const reply = await new Promise<string>((resolve) => secured.once('data', (d) => resolve(d.toString())));
    expect(reply).toMatch(/^s3 OK/);
    secured.destroy();
  });
});

describe.each(dialects)('IMAP UIDs across restarts and instances (%s)', (dialect) => {
  it('keeps UIDs and UIDVALIDITY after a restart and between two instances; concurrent deliveries get distinct, increasing UIDs', async () => {
    const database = createInboxTestDatabase(dialect);
    let first: InboxTestServer | undefined = await startInboxServer({ database, jobPollMs: 20, env: IMAP_ENV });
    let second: InboxTestServer | undefined;
    try {
      const org = await organization(first, [unique('uid'), unique('peer')]);
      const [inbox, peer] = org.inboxes as [string, string];
      await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          org.client.inboxes.messages.send(peer, { to: inbox, subject: `uid ${i}`, text: `${i}` }),
        ),
      );
      const snapshot = async (server: InboxTestServer) => {
        const client = await connect(server, inbox, org.key);
        try {
          const box = await client.mailboxOpen('INBOX');
          const uids: [number, string][] = [];
          for await (const m of client.fetch('1:*', { uid: true, envelope: true }))
            uids.push([m.uid, m.envelope?.subject ?? '']);
          return { uidValidity: String(box.uidValidity), uidNext: box.uidNext, uids };
        } finally {
          await client.logout();
        }
      };
      const before = await snapshot(first);
      expect(before.uids.map(([uid]) => uid)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      expect(new Set(before.uids.map(([, s]) => s)).size).toBe(8);
      await first.close();
      first = await startInboxServer({ database, jobPollMs: 20, env: IMAP_ENV });
      expect(await snapshot(first)).toEqual(before);
      if (dialect === 'postgres') {
        second = await startInboxServer({ database, jobPollMs: 20, env: IMAP_ENV });
        const client = await connect(second, inbox, org.key);
        await client.mailboxOpen('INBOX');
        void client.idle();
        await new Promise((r) => setTimeout(r, 100));
        // Written through the first instance, heard by a client of the second while it idles (no
        // clock: how fast is bench:imap's; a notification that never comes fails at the test's timeout).
        const exists = new Promise<{ count: number; idling: boolean }>((resolve) =>
          client.once('exists', (e: { count: number }) => resolve({ count: e.count, idling: client.idling })),
        );
        await first.client(org.key).inboxes.messages.send(peer, { to: inbox, subject: 'uid 8', text: '8' });
        expect(await exists).toEqual({ count: 9, idling: true });
        await client.logout();
        const other = await snapshot(second);
        expect(other.uids.slice(0, 8)).toEqual(before.uids);
        expect(other.uids[8]?.[0]).toBe(9);
        expect(other.uidValidity).toBe(before.uidValidity);
      }
    } finally {
      await second?.close();
      await first?.close();
      await database.drop();
    }
  });
});

describe('IMAP limits', () => {
  it('refuses connections beyond INBOX_IMAP_MAX_CONNECTIONS_PER_IP and INBOX_IMAP_MAX_CONNECTIONS with BYE, and frees a slot at LOGOUT', async () => {
    const server = await startInboxServer({
      env: { ...IMAP_ENV, INBOX_IMAP_MAX_CONNECTIONS_PER_IP: '2', INBOX_IMAP_MAX_CONNECTIONS: '3' },
    });
    const open: RawImap[] = [];
    try {
      const port = imapPort(server);
      open.push(await RawImap.open(port), await RawImap.open(port));
      expect(await greeting(port)).toBe('* BYE Too many connections; try again later');
      // Another client address still gets in, up to the process's bound.
      open.push(await RawImap.open(port, '127.0.0.2'));
      expect(await greeting(port, '127.0.0.3')).toBe('* BYE Too many connections; try again later');
      expect(await (open[0] as RawImap).command('z', 'LOGOUT')).toMatch(/^z OK/m);
      expect(await greeting(port, '127.0.0.3')).toMatch(/^\* OK /);
    } finally {
      for (const raw of open) raw.close();
      await server.close();
    }
  });

  it('bounds a whole command with its literals, and ends the session for a LITERAL+ beyond the bound', async () => {
    const server = await startInboxServer({ env: IMAP_ENV });
    try {
      const raw = await RawImap.open(imapPort(server));
      // Synchronizing literals: each fits, together they do not; the client is told before sending more.
      raw.send('a SEARCH TEXT {60000}\r\n');
      let reply = await raw.until(/^(\+ |a BAD).*\r\n/m);
      let literals = 0;
      while (reply.startsWith('+')) {
        literals++;
        raw.send(`${'x'.repeat(60_000)} TEXT {60000}\r\n`);
        reply = await raw.until(/^(\+ |a BAD).*\r\n/m);
      }
      expect(literals).toBe(4);
      expect(reply).toMatch(/^a BAD \[TOOBIG\]/m);
      expect(await raw.command('b', 'NOOP')).toMatch(/^b OK/m);
      // A non-synchronizing literal cannot be refused before its bytes arrive: the session ends.
      raw.send('c LOGIN {99999999+}\r\n');
      expect(await raw.until(/^\* BYE .*\r\n/m)).toMatch(/^\* BYE Literal too large/m);
      raw.close();
      const after = await RawImap.open(imapPort(server));
      expect(await after.command('d', 'CAPABILITY')).toMatch(/^d OK/m);
      after.close();
    } finally {
      await server.close();
    }
  });

  it('cuts off a client that reads none of its answers for INBOX_IMAP_WRITE_TIMEOUT_MS', async () => {
    const server = await startInboxServer({
      jobPollMs: 20,
      env: { ...IMAP_ENV, INBOX_IMAP_WRITE_TIMEOUT_MS: '200', INBOX_IMAP_MAX_CONNECTIONS_PER_IP: '1' },
    });
    try {
      const org = await organization(server, [unique('reader'), unique('peer')]);
      const [inbox, peer] = org.inboxes as [string, string];
      await org.client.inboxes.messages.send(peer, { to: inbox, subject: 'big', text: 'big body '.repeat(120_000) });
      const port = imapPort(server);
      const socket = net.connect(port, '127.0.0.1');
      socket.setEncoding('latin1');
      let received = '';
      const selected = new Promise<void>((resolve) =>
        socket.on('data', (d: string) => {
          received += d;
          if (/^s OK/m.test(received)) resolve();
        }),
      );
      socket.write(`l LOGIN ${inbox} ${org.key}\r\ns SELECT INBOX\r\n`);
      await selected;
      // From here on the client reads nothing and asks for 30 copies of a 1 MB message.
      socket.pause();
      for (let i = 0; i < 30; i++) socket.write(`f${i} UID FETCH 1:* BODY.PEEK[]\r\n`);
      // The one connection this address may hold is free again once the server cut the reader off.
      while ((await greeting(port)).startsWith('* BYE')) await new Promise((r) => setTimeout(r, 20));
      const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      socket.resume();
      await ended;
      expect(received).not.toMatch(/^f29 OK/m);
    } finally {
      await server.close();
    }
  });

  it('logs out a client that sends nothing for INBOX_IMAP_IDLE_TIMEOUT_MS', async () => {
    const server = await startInboxServer({ env: { ...IMAP_ENV, INBOX_IMAP_IDLE_TIMEOUT_MS: '1000' } });
    try {
      const raw = await RawImap.open(imapPort(server));
      expect(await raw.until(/^\* BYE Idle for too long/m, 3000)).toMatch(/BYE/);
      raw.close();
    } finally {
      await server.close();
    }
  });
});
