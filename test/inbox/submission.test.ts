import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import nodemailer from 'nodemailer';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { SmtpTestClient } from '../support/smtp-client.js';
import { organization, unique } from './fixtures.js';
import { connect } from '../support/imap.js';
import { testCertificate, type TestCertificate } from '../support/tls.js';
import { startSmtpRelay } from '../support/smtp-relay.js';

/**
 * SMTP submission for mail clients (decision 0045), on both dialects: AUTH with an inbox address
 * and an API key, only over TLS (538 before STARTTLS), the envelope sender and From must be the
 * inbox (553), and the message goes the way of an API send: the copy in Sent, local delivery,
 * Bcc kept off the source, the events. Python's smtplib and nodemailer as clients.
 */

const run = promisify(execFile);

describe.each(dialects)('SMTP submission (%s)', (dialect) => {
  let pem: TestCertificate;
  let server: InboxTestServer;
  let org: Awaited<ReturnType<typeof organization>>;
  let inbox: string;
  let peer: string;
  let hidden: string;

  beforeAll(async () => {
    pem = testCertificate('smtp.inbox.test');
    server = await startInboxServer({
      dialect,
      jobPollMs: 20,
      env: {
        INBOX_ROLES: 'api,worker,submission,imap',
        INBOX_IMAP_PORT: '0',
        INBOX_IMAPS_PORT: '0',
        INBOX_IMAP_ALLOW_PLAINTEXT_LOOPBACK: 'true',
        INBOX_SUBMISSION_PORT: '0',
        INBOX_SUBMISSIONS_PORT: '0',
        INBOX_SMTP_TLS_KEY: pem.key,
        INBOX_SMTP_TLS_CERT: pem.cert,
        INBOX_SUBMISSION_MAX_MESSAGE_BYTES: '65536',
      },
    });
    org = await organization(server, [unique('sub'), unique('peer'), unique('hidden')]);
    [inbox, peer, hidden] = org.inboxes as [string, string, string];
  });

  afterAll(async () => {
    await server?.close();
    pem?.remove();
  });

  const ports = () => ({
    starttls: server.service.submission?.port as number,
    implicit: server.service.submission?.tlsPort as number,
  });

  it('answers 538 to AUTH before STARTTLS and 530 to MAIL before AUTH', async () => {
    const { client, greeting } = await SmtpTestClient.connect(ports().starttls);
    try {
      expect(greeting.code).toBe(220);
      const ehlo = await client.command('EHLO client.example');
      expect(ehlo.text).toContain('STARTTLS');
      const plain = Buffer.from(`\0${inbox}\0${org.key}`).toString('base64');
      expect((await client.command(`AUTH PLAIN ${plain}`)).code).toBe(538);
      expect((await client.command(`MAIL FROM:<${inbox}>`)).code).toBe(530);
    } finally {
      client.close();
    }
  });

  it("sends with Python's smtplib over STARTTLS and over implicit TLS, as an API send: Sent, local delivery, Bcc kept off the source", async () => {
    const script = new URL('./imap/smtplib-submit.py', import.meta.url).pathname;
    for (const mode of ['starttls', 'implicit'] as const) {
      const { stdout } = await run('python3', [
        script,
        mode,
        '127.0.0.1',
        String(ports()[mode]),
        inbox,
        org.key,
        peer,
        hidden,
        pem.cert,
      ]);
      expect(JSON.parse(stdout)).toEqual({ login: 235, refused: {} });
    }
    const sent = await org.client.inboxes.messages.list(inbox, { labels: ['sent'] });
    expect(sent.messages.map((m) => m.subject).sort()).toEqual(['smtplib implicit', 'smtplib starttls']);
    const received = await org.client.inboxes.messages.list(peer, {});
    expect(received.messages.map((m) => m.subject).sort()).toEqual(['smtplib implicit', 'smtplib starttls']);
    const bcc = await org.client.inboxes.messages.list(hidden, {});
    expect(bcc.messages).toHaveLength(2);
    const stored = sent.messages[0];
    const raw = Buffer.from(
      await (
        await fetch((await org.client.inboxes.messages.getRaw(inbox, stored?.messageId as string)).downloadUrl)
      ).arrayBuffer(),
    ).toString();
    expect(raw).toContain(`From: ${inbox}`);
    expect(raw).not.toMatch(/^bcc:/im);
    expect(raw).toMatch(/^Message-ID: /im);
    expect(stored?.bcc).toEqual([hidden]);
  });

  it('sends with curl over STARTTLS', async () => {
    const file = path.join(pem.dir, 'curl.eml');
    writeFileSync(file, `From: ${inbox}\r\nTo: ${peer}\r\nSubject: curl submission\r\n\r\nSent with curl.\r\n`);
    await run('curl', [
      '-sS',
      '--fail',
      `smtp://127.0.0.1:${ports().starttls}`,
      '--ssl-reqd',
      '--cacert',
      pem.cert,
      '--resolve',
      `smtp.inbox.test:${ports().starttls}:127.0.0.1`,
      '-u',
      `${inbox}:${org.key}`,
      '--mail-from',
      inbox,
      '--mail-rcpt',
      peer,
      '-T',
      file,
      '-k',
    ]);
    const received = await org.client.inboxes.messages.list(peer, {});
    expect(received.messages.map((m) => m.subject)).toContain('curl submission');
  });

  it('refuses another envelope sender or From with 553, a message beyond the size limit with 552, and a key that may not send with 535', async () => {
    const transport = (auth: { user: string; pass: string }) =>
      nodemailer.createTransport({
        host: '127.0.0.1',
        port: ports().starttls,
        secure: false,
        requireTLS: true,
        tls: { ca: readFileSync(pem.cert), servername: 'smtp.inbox.test' },
        auth,
      });
    const ok = transport({ user: inbox, pass: org.key });
    await expect(
      ok.sendMail({ envelope: { from: peer, to: [peer] }, from: inbox, to: peer, subject: 'x', text: 'x' }),
    ).rejects.toMatchObject({ responseCode: 553 });
    await expect(
      ok.sendMail({ from: peer, to: peer, subject: 'x', text: 'x', envelope: { from: inbox, to: [peer] } }),
    ).rejects.toMatchObject({
      responseCode: 553,
    });
    const info = await ok.sendMail({ from: `Agent <${inbox}>`, to: peer, subject: 'nodemailer', text: 'hello' });
    expect(info.response).toMatch(/^250 /);
    await expect(
      ok.sendMail({ from: inbox, to: peer, subject: 'too big', text: 'x'.repeat(100_000) }),
    ).rejects.toMatchObject({ responseCode: 552 });
    const readOnly = (await org.client.apiKeys.create({
      name: unique('ro'),
      permissions: { messageRead: true, inboxRead: true },
    })) as { apiKey: string };
    ok.close();
    const refused = transport({ user: inbox, pass: readOnly.apiKey });
    await expect(refused.verify()).rejects.toMatchObject({ responseCode: 535 });
    refused.close();
    const wrong = transport({ user: inbox, pass: 'am_wrong' });
    await expect(wrong.verify()).rejects.toMatchObject({ responseCode: 535 });
    wrong.close();
    // A paused inbox refuses every send, submission included (550), and sends again once active.
    const setStatus = async (status: string) =>
      expect(
        (
          await fetch(`${server.url}/v0/inboxes/${encodeURIComponent(inbox)}`, {
            method: 'PATCH',
            headers: { authorization: `Bearer ${org.key}`, 'content-type': 'application/json' },
            body: JSON.stringify({ status }),
          })
        ).status,
      ).toBe(200);
    await setStatus('paused');
    const paused = transport({ user: inbox, pass: org.key });
    await expect(paused.sendMail({ from: inbox, to: peer, subject: 'while paused', text: 'x' })).rejects.toMatchObject({
      responseCode: 550,
      response: expect.stringMatching(/paused/i),
    });
    await setStatus('active');
    expect((await paused.sendMail({ from: inbox, to: peer, subject: 'active again', text: 'x' })).response).toMatch(
      /^250 /,
    );
    paused.close();
  });

  it('refuses, as the API does, what an unverified agent sign-up submits to anyone but its human (550), and sends to the human', async () => {
    const relay = await startSmtpRelay();
    const signUps = await startInboxServer({
      dialect,
      env: {
        INBOX_ROLES: 'api,worker,submission',
        INBOX_SUBMISSION_PORT: '0',
        INBOX_SUBMISSIONS_PORT: '0',
        INBOX_SMTP_TLS_KEY: pem.key,
        INBOX_SMTP_TLS_CERT: pem.cert,
        INBOX_AGENT_SIGNUP: 'true',
        INBOX_SMTP_RELAY_URL: relay.url(),
        INBOX_SMTP_RELAY_TIMEOUT_MS: '5000',
      },
    });
    try {
      const human = `${unique('human')}@example.org`;
      const agent = await signUps.client('am_unused').agent.signUp({ humanEmail: human, username: unique('agent') });
      const transport = nodemailer.createTransport({
        host: '127.0.0.1',
        port: signUps.service.submission?.port as number,
        secure: false,
        requireTLS: true,
        tls: { ca: readFileSync(pem.cert), servername: 'smtp.inbox.test' },
        auth: { user: agent.inboxId, pass: agent.apiKey },
      });
      try {
        await expect(
          transport.sendMail({ from: agent.inboxId, to: 'stranger@example.net', subject: 'no', text: 'x' }),
        ).rejects.toMatchObject({
          responseCode: 550,
          response: expect.stringContaining(
            `stranger@example.net is not allowed before the organization is verified; only ${human} is`,
          ),
        });
        // One stranger among the recipients refuses the whole message.
        await expect(
          transport.sendMail({ from: agent.inboxId, to: [human, 'stranger@example.net'], subject: 'no', text: 'x' }),
        ).rejects.toMatchObject({ responseCode: 550 });
        const sent = await transport.sendMail({ from: agent.inboxId, to: human, subject: 'to my human', text: 'hi' });
        expect(sent.response).toMatch(/^250 /);
      } finally {
        transport.close();
      }
    } finally {
      await signUps.close();
      await relay.stop();
    }
  });

  it('takes the copy a mail client APPENDs to Sent after sending as the message already there', async () => {
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: ports().starttls,
      requireTLS: true,
      tls: { ca: readFileSync(pem.cert), servername: 'smtp.inbox.test' },
      auth: { user: inbox, pass: org.key },
    });
    const mail = { from: inbox, to: peer, subject: unique('copy-'), text: 'kept once' };
    const info = await transport.sendMail(mail);
    transport.close();
    const imap = await connect(server, inbox, org.key);
    try {
      const sent = await imap.mailboxOpen('Sent');
      const copy = `Message-ID: ${info.messageId}\r\nFrom: ${inbox}\r\nTo: ${peer}\r\nSubject: ${mail.subject}\r\n\r\n${'x'.repeat(300_000)}\r\n`;
      const appended = await imap.append('Sent', copy, ['\\Seen']);
      expect(appended && appended.uid).toBe(sent.uidNext - 1);
      expect((await imap.status('Sent', { messages: true })) || undefined).toMatchObject({ messages: sent.exists });
      // Anything else has no place: refused, and the session goes on.
      await expect(imap.append('Sent', copy.replace(info.messageId, '<unknown@example.org>'))).rejects.toMatchObject({
        serverResponseCode: 'CANNOT',
      });
      await expect(imap.append('INBOX', copy)).rejects.toMatchObject({ serverResponseCode: 'CANNOT' });
      expect((await imap.status('INBOX', { messages: true })) || undefined).toMatchObject({ messages: 0 });
    } finally {
      await imap.logout();
    }
  });
});
