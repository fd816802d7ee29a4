import { generateKeyPairSync } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../src/platform/clock.js';
import { dkimDnsRecord } from '../../src/inbox/outbound/dkim.js';
import { createInboxTestDatabase, dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { createTestCertificate, startSmtpRelay, type SmtpRelay, type TestCertificate } from '../support/smtp-relay.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { call, enc, eventsOf, isoTimestamp, organization, unique } from './fixtures.js';
import {
  delivered,
  firstAttempt,
  hookAll,
  inOrder,
  nextAttempt,
  outboundJobs,
  rawSource,
  txtResolver,
} from './smtp-outbound.helpers.js';

/**
 * Outbound mail over real sockets: the inbox service hands mail for other domains to an
 * `smtp-server` relay started here, and reports the outcome as events that reach a real webhook
 * receiver. Retry timing runs on the service's clock, advanced by the test.
 */

const BASE_ENV = { INBOX_SMTP_RELAY_TIMEOUT_MS: '5000' };

/** An IPv4 address of this machine that is not loopback, if it has one. */
const offLoopback = Object.values(networkInterfaces())
  .flat()
  .find((i) => i?.family === 'IPv4' && !i.internal)?.address;

let cert: TestCertificate;
beforeAll(() => {
  cert = createTestCertificate();
});
afterAll(() => cert?.remove());

/** The relay, the service and a receiver, closed in the right order (the service's pool first). */
async function withRelay(
  options: {
    relay?: Parameters<typeof startSmtpRelay>[0];
    env?: (relay: SmtpRelay) => Record<string, string>;
    clock?: ReturnType<typeof fixedClock>;
    dialect: 'sqlite' | 'postgres';
  },
  body: (ctx: { relay: SmtpRelay; server: InboxTestServer; receiver: WebhookReceiver }) => Promise<void>,
): Promise<void> {
  const relay = await startSmtpRelay(options.relay);
  const receiver = await startWebhookReceiver(
    options.clock ? { now: () => options.clock?.now().getTime() ?? Date.now() } : {},
  );
  let server: InboxTestServer | undefined;
  try {
    server = await startInboxServer({
      dialect: options.dialect,
      env: { ...BASE_ENV, INBOX_SMTP_RELAY_URL: relay.url(), ...options.env?.(relay) },
      ...(options.clock ? { clock: options.clock } : {}),
    });
    await body({ relay, server, receiver });
  } finally {
    await server?.close();
    await receiver.stop();
    await relay.stop();
  }
}

describe.each(dialects)('%s: outbound mail through an SMTP relay', (dialect) => {
  it('hands mail for other domains to an authenticated STARTTLS relay, DKIM-signed, and reports the local and the relayed leg', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const auth = { user: 'relay-user', pass: 'p@ss:w/rd' };
    await withRelay(
      {
        dialect,
        relay: { tls: cert, auth },
        env: (relay) => ({
          INBOX_SMTP_RELAY_URL: relay.url(auth),
          INBOX_SMTP_RELAY_TLS_CA: cert.certPath,
          INBOX_DKIM_SELECTOR: 'mail2026',
          INBOX_DKIM_PRIVATE_KEY: pem,
        }),
      },
      async ({ relay, server, receiver }) => {
        const org = await organization(server, [
          { username: unique('out'), displayName: 'Outbound Agent' },
          unique('local'),
        ]);
        const [sender, local] = org.inboxes as [string, string];
        await hookAll(server, receiver, org.key, '/all');

        const sent = await org.client.inboxes.messages.send(sender, {
          to: ['Ext Person <Person@Example.org>', local],
          cc: 'cc@other.example',
          bcc: 'hidden@third.example',
          subject: 'Outbound check',
          text: 'Hello over SMTP.',
        });
        await relay.waitFor(1);
        const [relayed] = relay.received;
        const external = ['Person@Example.org', 'cc@other.example', 'hidden@third.example'];
        // The envelope: the inbox as sender, every external recipient (bcc included), the ENVID of DSNs.
        // (nodemailer lower-cases the domain in the envelope; the events keep the sender's spelling.)
        expect(relayed).toMatchObject({
          mailFrom: sender,
          rcptTo: ['Person@example.org', 'cc@other.example', 'hidden@third.example'],
          secure: true,
          user: 'relay-user',
          envid: sent.messageId.slice(1, -1),
          ret: 'HDRS',
        });
        expect(relayed?.notify.every((n) => n?.includes('FAILURE'))).toBe(true);
        expect(relay.logins).toEqual([{ user: 'relay-user', ok: true }]);

        // The stored source, byte for byte, behind one DKIM-Signature header; never a Bcc header.
        const wire = relayed?.raw.toString('utf8') ?? '';
        const stored = (await rawSource(server, org.key, sender, sent.messageId)).toString('utf8');
        const start = wire.lastIndexOf(stored.replace(/\r\n$/, ''));
        expect(start).toBeGreaterThan(0);
        expect(wire.slice(start).replace(/\r\n$/, '')).toBe(stored.replace(/\r\n$/, ''));
        const added = wire
          .slice(0, start)
          .replace(/\r\n[ \t]+/g, ' ')
          .trim()
          .split('\r\n');
        expect(added).toEqual([expect.stringMatching(/^DKIM-Signature: /)]);
        expect(wire).not.toMatch(/^bcc:/im);
        const verified = await dkimVerify(relayed?.raw ?? Buffer.alloc(0), {
          resolver: txtResolver({ 'mail2026._domainkey.inbox.test': dkimDnsRecord(privateKey, 'rsa-sha256') }),
        });
        expect(verified.results).toHaveLength(1);
        expect(verified.results[0]).toMatchObject({
          signingDomain: 'inbox.test',
          selector: 'mail2026',
          status: { result: 'pass' },
        });

        // Local leg at once (sent, received, delivered); the relayed leg once the relay took it.
        await receiver.waitFor(5);
        const events = inOrder(delivered(receiver, '/all'));
        const ref = { inbox_id: sender, thread_id: sent.threadId, message_id: sent.messageId, timestamp: isoTimestamp };
        expect(events.filter((e) => e.event_type === 'message.sent').map((e) => e.send)).toEqual([
          { ...ref, recipients: [local] },
          { ...ref, recipients: external },
        ]);
        expect(events.filter((e) => e.event_type === 'message.delivered').map((e) => e.delivery)).toEqual([
          { ...ref, recipients: [local] },
          { ...ref, recipients: external },
        ]);
        expect(events.filter((e) => e.event_type === 'message.received').map((e) => e.message.inbox_id)).toEqual([
          local,
        ]);
        expect(
          events.filter(
            (e) => !['message.sent', 'message.delivered', 'message.received'].includes(e.event_type as string),
          ),
        ).toEqual([]);
        expect((await outboundJobs(server)).map((j) => [j.status, j.attempts])).toEqual([['done', 1]]);
        // The REST face is unchanged: the sender's copy, sent, with its bcc.
        const copy = await call(
          server.url,
          org.key,
          'GET',
          `/v0/inboxes/${enc(sender)}/messages/${enc(sent.messageId)}`,
        );
        expect(copy.body).toMatchObject({ labels: expect.arrayContaining(['sent']), bcc: ['hidden@third.example'] });
      },
    );
  });

  it('retries a relay that defers (451) on the backoff schedule, and reports message.sent only when it accepts', async () => {
    const clock = fixedClock(new Date());
    await withRelay({ dialect, clock }, async ({ relay, server, receiver }) => {
      relay.script.data.push({ code: 451, message: '4.3.0 Queue full, try again later' });
      const org = await organization(server, [unique('defer')]);
      const [sender] = org.inboxes as [string];
      await hookAll(server, receiver, org.key, '/all');
      const sent = await org.client.inboxes.messages.send(sender, { to: 'later@example.org', text: 'Patience.' });

      const job = await firstAttempt(server);
      expect(job).toMatchObject({ status: 'pending', last_error: expect.stringContaining('451 4.3.0 Queue full') });
      const wait = Date.parse(job.run_at) - clock.now().getTime();
      expect(wait).toBeGreaterThanOrEqual(54_000);
      expect(wait).toBeLessThanOrEqual(66_000);
      expect(relay.refusals).toEqual(['DATA 451']);
      expect(await eventsOf(server, { inboxId: sender })).toEqual([]);

      // Not before its time, then once.
      clock.advance(30_000);
      expect(await server.service.runtime.runner.drain()).toBe(0);
      clock.advance(40_000);
      await nextAttempt(server);
      await relay.waitFor(1);
      await receiver.waitFor(2);
      const ref = {
        inbox_id: sender,
        thread_id: sent.threadId,
        message_id: sent.messageId,
        timestamp: clock.now().toISOString(),
      };
      expect(inOrder(delivered(receiver, '/all')).map((e) => [e.event_type, e.send ?? e.delivery])).toEqual([
        ['message.sent', { ...ref, recipients: ['later@example.org'] }],
        ['message.delivered', { ...ref, recipients: ['later@example.org'] }],
      ]);
      expect((await outboundJobs(server)).map((j) => [j.status, j.attempts])).toEqual([['done', 2]]);
    });
  });

  it('bounces what a relay refuses for good (5xx), over implicit TLS: per recipient at RCPT, or the whole message at DATA', async () => {
    const auth = { user: 'tls-user', pass: 'secret' };
    await withRelay(
      {
        dialect,
        relay: { tls: cert, implicitTls: true, auth },
        env: (relay) => ({ INBOX_SMTP_RELAY_URL: relay.url(auth), INBOX_SMTP_RELAY_TLS_CA: cert.certPath }),
      },
      async ({ relay, server, receiver }) => {
        const org = await organization(server, [unique('hard')]);
        const [sender] = org.inboxes as [string];
        await hookAll(server, receiver, org.key, '/all');

        relay.script.rcpt.set('gone@example.org', [{ code: 550, message: '5.1.1 <gone@example.org>: user unknown' }]);
        relay.script.rcpt.set('full@example.org', [{ code: 552, message: '5.2.2 mailbox full' }]);
        const first = await org.client.inboxes.messages.send(sender, {
          to: ['gone@example.org', 'full@example.org'],
          text: 'Anyone?',
        });
        await receiver.waitFor(2);
        const bounces = delivered(receiver, '/all', 'message.bounced')
          .map((e) => e.bounce)
          .sort((a, b) => String(a.sub_type).localeCompare(String(b.sub_type)));
        const ref = {
          inbox_id: sender,
          thread_id: first.threadId,
          message_id: first.messageId,
          timestamp: isoTimestamp,
        };
        expect(bounces).toEqual([
          {
            ...ref,
            type: 'Permanent',
            sub_type: 'MailboxFull',
            recipients: [
              { address: 'full@example.org', status: '5.2.2', diagnostic_code: 'smtp; 552 5.2.2 mailbox full' },
            ],
          },
          {
            ...ref,
            type: 'Permanent',
            sub_type: 'NoEmail',
            recipients: [
              {
                address: 'gone@example.org',
                status: '5.1.1',
                diagnostic_code: 'smtp; 550 5.1.1 <gone@example.org>: user unknown',
              },
            ],
          },
        ]);

        relay.script.data.push({ code: 554, message: '5.7.1 Message refused by policy' });
        const second = await org.client.inboxes.messages.send(sender, {
          to: 'a@example.org',
          cc: 'b@example.net',
          text: 'Spammy?',
        });
        await receiver.waitFor(3);
        const [whole] = delivered(receiver, '/all', 'message.bounced').filter(
          (e) => e.bounce.message_id === second.messageId,
        );
        expect(whole?.bounce).toMatchObject({
          type: 'Permanent',
          sub_type: 'General',
          recipients: [
            { address: 'a@example.org', status: '5.7.1', diagnostic_code: 'smtp; 554 5.7.1 Message refused by policy' },
            { address: 'b@example.net', status: '5.7.1', diagnostic_code: 'smtp; 554 5.7.1 Message refused by policy' },
          ],
        });

        expect(delivered(receiver, '/all').filter((e) => e.event_type !== 'message.bounced')).toEqual([]);
        expect(relay.received).toEqual([]);
        expect(relay.logins.every((l) => l.ok)).toBe(true);
        expect((await outboundJobs(server)).map((j) => [j.status, j.attempts])).toEqual([
          ['dead', 1],
          ['dead', 1],
        ]);
      },
    );
  });

  // message.delivered per accepted recipient, not only when every recipient was accepted: decision 0006, "Per recipient, not per message".
  it('delivers to the recipients a relay takes, bounces the refused ones and retries the deferred ones in a follow-up', async () => {
    const clock = fixedClock(new Date());
    await withRelay({ dialect, clock }, async ({ relay, server, receiver }) => {
      relay.script.rcpt.set('gone@example.org', [{ code: 550, message: '5.1.1 no such user' }]);
      relay.script.rcpt.set('busy@example.org', [{ code: 450, message: '4.2.1 mailbox busy' }]);
      const org = await organization(server, [unique('part')]);
      const [sender] = org.inboxes as [string];
      await hookAll(server, receiver, org.key, '/all');
      const recipients = ['ok@example.org', 'gone@example.org', 'busy@example.org'];
      const sent = await org.client.inboxes.messages.send(sender, { to: recipients, text: 'Some of you.' });

      await relay.waitFor(1);
      await receiver.waitFor(3);
      const ref = {
        inbox_id: sender,
        thread_id: sent.threadId,
        message_id: sent.messageId,
        timestamp: clock.now().toISOString(),
      };
      expect(inOrder(delivered(receiver, '/all')).map((e) => [e.event_type, e.send ?? e.delivery ?? e.bounce])).toEqual(
        [
          ['message.sent', { ...ref, recipients }],
          ['message.delivered', { ...ref, recipients: ['ok@example.org'] }],
          [
            'message.bounced',
            {
              ...ref,
              type: 'Permanent',
              sub_type: 'NoEmail',
              recipients: [
                { address: 'gone@example.org', status: '5.1.1', diagnostic_code: 'smtp; 550 5.1.1 no such user' },
              ],
            },
          ],
        ],
      );
      const jobs = await outboundJobs(server);
      expect(jobs.map((j) => j.status)).toEqual(['done', 'pending']);
      expect(jobs[1]?.payload).toMatchObject({
        message_id: sent.messageId,
        recipients: ['busy@example.org'],
        prior_attempts: 1,
      });

      clock.advance(70_000);
      await nextAttempt(server, 1);
      await relay.waitFor(2);
      expect(relay.received[1]?.rcptTo).toEqual(['busy@example.org']);
      await receiver.waitFor(5);
      const later = { ...ref, timestamp: clock.now().toISOString() };
      expect(
        inOrder(delivered(receiver, '/all'))
          .slice(3)
          .map((e) => [e.event_type, e.send ?? e.delivery]),
      ).toEqual([
        ['message.sent', { ...later, recipients: ['busy@example.org'] }],
        ['message.delivered', { ...later, recipients: ['busy@example.org'] }],
      ]);
      expect((await outboundJobs(server)).map((j) => j.status)).toEqual(['done', 'done']);
    });
  });

  it('reports an internationalized recipient as the sender wrote it, though the relay got its xn-- form', async () => {
    const clock = fixedClock(new Date());
    await withRelay({ dialect, clock }, async ({ relay, server, receiver }) => {
      const org = await organization(server, [unique('idn')]);
      const [sender] = org.inboxes as [string];
      await hookAll(server, receiver, org.key, '/all');
      const recipients = ['leser@bücher.example', 'plain@example.org'];
      const sent = await org.client.inboxes.messages.send(sender, { to: recipients, text: 'Grüße' });
      await relay.waitFor(1);
      await receiver.waitFor(2);
      const ref = {
        inbox_id: sender,
        thread_id: sent.threadId,
        message_id: sent.messageId,
        timestamp: clock.now().toISOString(),
      };
      expect(inOrder(delivered(receiver, '/all')).map((e) => [e.event_type, e.send ?? e.delivery])).toEqual([
        ['message.sent', { ...ref, recipients }],
        ['message.delivered', { ...ref, recipients }],
      ]);
    });
  });

  it('retries while the relay is down (connection refused) and delivers once it is back', async () => {
    const clock = fixedClock(new Date());
    await withRelay({ dialect, clock }, async ({ relay, server, receiver }) => {
      await relay.stop();
      const org = await organization(server, [unique('down')]);
      const [sender] = org.inboxes as [string];
      await hookAll(server, receiver, org.key, '/all');
      await org.client.inboxes.messages.send(sender, { to: 'someone@example.org', text: 'Are you up?' });
      const job = await firstAttempt(server);
      expect(job.last_error).toMatch(/^4\.4\.1 .*ECONNREFUSED/);
      expect(await eventsOf(server, { inboxId: sender })).toEqual([]);

      await relay.start();
      clock.advance(70_000);
      await nextAttempt(server);
      await relay.waitFor(1);
      await receiver.waitFor(2);
      expect(inOrder(delivered(receiver, '/all')).map((e) => e.event_type)).toEqual([
        'message.sent',
        'message.delivered',
      ]);
      expect((await outboundJobs(server)).map((j) => [j.status, j.attempts])).toEqual([['done', 2]]);
    });
  });

  it('bounces as Transient when the relay stays down for the whole retry period', async () => {
    const clock = fixedClock(new Date());
    await withRelay(
      { dialect, clock, env: () => ({ INBOX_SMTP_RELAY_RETRY_HOURS: '1' }) },
      async ({ relay, server, receiver }) => {
        await relay.stop();
        const org = await organization(server, [unique('gone')]);
        const [sender] = org.inboxes as [string];
        await hookAll(server, receiver, org.key, '/all');
        const queuedAt = clock.now().getTime();
        const sent = await org.client.inboxes.messages.send(sender, {
          to: 'someone@example.org',
          cc: 'other@example.net',
          text: 'Hello?',
        });
        await firstAttempt(server);

        // Attempts at 0, 20, 40 and 60 minutes (each after its pause of 1, 5 and 15 minutes); the last one is past the hour.
        const runs: string[] = [];
        for (let i = 0; i < 10 && (await outboundJobs(server))[0]?.status === 'pending'; i++) {
          clock.advance(20 * 60_000);
          const job = await nextAttempt(server);
          runs.push(job.status);
        }
        expect(runs).toEqual(['pending', 'pending', 'dead']);
        const [job] = await outboundJobs(server);
        expect(job?.attempts).toBe(4);
        await receiver.waitFor(1);
        const [bounce] = delivered(receiver, '/all', 'message.bounced');
        expect(bounce?.bounce).toEqual({
          inbox_id: sender,
          thread_id: sent.threadId,
          message_id: sent.messageId,
          timestamp: isoTimestamp,
          type: 'Transient',
          sub_type: 'General',
          recipients: [
            {
              address: 'someone@example.org',
              status: '4.4.1',
              diagnostic_code: expect.stringContaining('ECONNREFUSED'),
            },
            { address: 'other@example.net', status: '4.4.1', diagnostic_code: expect.stringContaining('ECONNREFUSED') },
          ],
        });
        expect(Date.parse(bounce?.bounce.timestamp as string) - queuedAt).toBe(60 * 60_000);
        expect(delivered(receiver, '/all').map((e) => e.event_type)).toEqual(['message.bounced']);
      },
    );
  });

  it('makes the last attempt, and bounces, at the end of the retry period, not a backoff step later', async () => {
    const clock = fixedClock(new Date());
    await withRelay(
      { dialect, clock, env: () => ({ INBOX_SMTP_RELAY_RETRY_HOURS: '2' }) },
      async ({ relay, server, receiver }) => {
        // A relay that defers every message, every time.
        for (let i = 0; i < 20; i++)
          relay.script.data.push({ code: 451, message: '4.3.0 Queue full, try again later' });
        const org = await organization(server, [unique('late')]);
        const [sender] = org.inboxes as [string];
        await hookAll(server, receiver, org.key, '/all');
        const queuedAt = clock.now().getTime();
        const deadline = queuedAt + 2 * 3600_000;
        await org.client.inboxes.messages.send(sender, { to: 'patient@example.org', text: 'Eventually?' });
        let job = await firstAttempt(server);
        const attemptsAt = [clock.now().getTime()];
        // Each attempt when the job is due: 0, ~1, ~6, ~21, ~51 and ~111 minutes, then the end of the period.
        for (let i = 0; i < 12 && job.status === 'pending'; i++) {
          const due = Date.parse(job.run_at);
          expect(due).toBeLessThanOrEqual(deadline);
          clock.advance(due - clock.now().getTime());
          job = await nextAttempt(server);
          attemptsAt.push(clock.now().getTime());
        }
        expect(job.status).toBe('dead');
        expect(attemptsAt.at(-1)).toBe(deadline);
        expect(relay.refusals.length).toBe(attemptsAt.length);
        await receiver.waitFor(1);
        const [bounce] = delivered(receiver, '/all', 'message.bounced');
        expect(bounce?.bounce).toMatchObject({
          type: 'Transient',
          timestamp: new Date(deadline).toISOString(),
          recipients: [{ address: 'patient@example.org', status: '4.3.0' }],
        });
      },
    );
  });

  it("stops retrying failures of its own (not the relay's) at the end of the retry period, and bounces them as Transient", async () => {
    const clock = fixedClock(new Date());
    await withRelay(
      { dialect, clock, env: () => ({ INBOX_SMTP_RELAY_RETRY_HOURS: '1' }) },
      async ({ relay, server, receiver }) => {
        await relay.stop();
        const org = await organization(server, [unique('ours')]);
        const [sender] = org.inboxes as [string];
        await hookAll(server, receiver, org.key, '/all');
        const queuedAt = clock.now().getTime();
        const sent = await org.client.inboxes.messages.send(sender, {
          to: 'someone@example.org',
          text: 'Stuck on our side.',
        });
        await firstAttempt(server);
        // The sender's copy can no longer be read: every attempt now fails before it reaches the relay.
        await server.service.database.db
          .updateTable('messages')
          .set({ labels: 'not json' })
          .where('message_id', '=', sent.messageId)
          .execute();

        clock.advance(58 * 60_000);
        let job = await nextAttempt(server);
        expect(job).toMatchObject({ status: 'pending', last_error: expect.stringContaining('JSON') });
        // The rest of the period, not a whole backoff step: a last attempt at its end.
        expect(Date.parse(job.run_at)).toBe(queuedAt + 3600_000);
        clock.advance(2 * 60_000);
        job = await nextAttempt(server);
        expect(job).toMatchObject({ status: 'dead', last_error: expect.stringContaining('JSON') });
        await receiver.waitFor(1);
        expect(delivered(receiver, '/all').map((e) => e.bounce)).toEqual([
          {
            inbox_id: sender,
            thread_id: sent.threadId,
            message_id: sent.messageId,
            timestamp: new Date(queuedAt + 3600_000).toISOString(),
            type: 'Transient',
            sub_type: 'General',
            recipients: [
              {
                address: 'someone@example.org',
                status: '4.3.0',
                diagnostic_code: expect.stringContaining('retry period'),
              },
            ],
          },
        ]);
      },
    );
  });

  it("records nothing when another run took the job over while the relay answered: the events commit only with the job's end", async () => {
    await withRelay({ dialect }, async ({ relay, server, receiver }) => {
      const org = await organization(server, [unique('fence')]);
      const [sender] = org.inboxes as [string];
      await hookAll(server, receiver, org.key, '/all');
      const slow = relay.holdData();
      await org.client.inboxes.messages.send(sender, { to: 'slow@example.org', text: 'Take your time.' });
      await slow.held();
      // Another worker claims the job, as it would once this run's lease had run out (a claim raises the attempt).
      const theirs = new Date(Date.now() + 3600_000).toISOString();
      await server.service.database.db
        .updateTable('jobs')
        .set((eb) => ({ locked_until: theirs, attempts: eb('attempts', '+', 1) }))
        .where('queue', '=', 'mail.outbound')
        .execute();
      slow.release();
      await relay.waitFor(1);
      await server.service.runtime.runner.stop(); // waits for the attempt to end
      expect(await eventsOf(server, { inboxId: sender })).toEqual([]);
      expect((await outboundJobs(server)).map((j) => [j.status, j.locked_until])).toEqual([['pending', theirs]]);
    });
  });

  it('delivers webhooks while a relay send hangs: outbound mail does not hold up the other jobs', async () => {
    // Timeouts long enough for the hang to last until the test ends it (a blackholed relay takes minutes).
    await withRelay(
      { dialect, env: (relay) => ({ INBOX_SMTP_RELAY_URL: relay.url(), INBOX_SMTP_RELAY_TIMEOUT_MS: '60000' }) },
      async ({ relay, server, receiver }) => {
        const org = await organization(server, [unique('hang'), unique('near')]);
        const [sender, local] = org.inboxes as [string, string];
        await hookAll(server, receiver, org.key, '/all');
        const stuck = relay.holdData();
        await org.client.inboxes.messages.send(sender, { to: 'far@example.org', text: 'Slowly.' });
        await stuck.held();
        try {
          // Meanwhile, mail between two local inboxes: its events reach the webhook at once.
          await org.client.inboxes.messages.send(sender, { to: local, text: 'Quickly.' });
          await receiver.waitFor(3, 3_000);
          expect(inOrder(delivered(receiver, '/all')).map((e) => e.event_type)).toEqual([
            'message.sent',
            'message.received',
            'message.delivered',
          ]);
          expect((await outboundJobs(server)).map((j) => [j.status, j.attempts, j.locked_until !== null])).toEqual([
            ['pending', 1, true],
          ]);
          expect(relay.received).toEqual([]);
        } finally {
          stuck.release();
        }
        await relay.waitFor(1);
        await receiver.waitFor(5);
      },
    );
  });

  it('authenticates without TLS to a relay on a loopback address, which offers no STARTTLS', async () => {
    const auth = { user: 'local-user', pass: 'local-pass' };
    await withRelay(
      { dialect, relay: { auth }, env: (relay) => ({ INBOX_SMTP_RELAY_URL: relay.url(auth) }) },
      async ({ relay, server }) => {
        const org = await organization(server, [unique('loop')]);
        await org.client.inboxes.messages.send(org.inboxes[0] as string, {
          to: 'someone@example.org',
          text: 'Next door.',
        });
        await relay.waitFor(1);
        expect(relay.received[0]).toMatchObject({ secure: false, user: 'local-user' });
        expect(relay.logins).toEqual([{ user: 'local-user', ok: true }]);
      },
    );
  });

  it.skipIf(!offLoopback)(
    'never sends credentials in clear text to a relay off this machine that offers no STARTTLS, unless told to',
    async () => {
      const auth = { user: 'far-user', pass: 'far-pass' };
      const relayOptions = { auth, host: offLoopback as string };
      await withRelay(
        { dialect, relay: relayOptions, env: (relay) => ({ INBOX_SMTP_RELAY_URL: relay.url(auth) }) },
        async ({ relay, server }) => {
          const org = await organization(server, [unique('far')]);
          const [sender] = org.inboxes as [string];
          await org.client.inboxes.messages.send(sender, { to: 'someone@example.org', text: 'Not in clear.' });
          const job = await firstAttempt(server);
          // A TLS problem of our configuration: retried, not bounced; the relay never saw AUTH.
          expect(job).toMatchObject({ status: 'pending', last_error: expect.stringMatching(/^4\./) });
          expect(relay.logins).toEqual([]);
          expect(relay.received).toEqual([]);
          expect(await eventsOf(server, { inboxId: sender })).toEqual([]);
        },
      );
      await withRelay(
        {
          dialect,
          relay: relayOptions,
          env: (relay) => ({ INBOX_SMTP_RELAY_URL: relay.url(auth), INBOX_SMTP_RELAY_ALLOW_PLAINTEXT_AUTH: 'true' }),
        },
        async ({ relay, server }) => {
          const org = await organization(server, [unique('far-ok')]);
          await org.client.inboxes.messages.send(org.inboxes[0] as string, {
            to: 'someone@example.org',
            text: 'In clear, as asked.',
          });
          await relay.waitFor(1);
          expect(relay.received[0]).toMatchObject({ secure: false, user: 'far-user' });
        },
      );
    },
  );

  it('retries, and logs, when the relay refuses our credentials: the message is not bounced for it', async () => {
    const auth = { user: 'relay-user', pass: 'right' };
    await withRelay(
      {
        dialect,
        relay: { tls: cert, auth },
        env: (relay) => ({
          INBOX_SMTP_RELAY_URL: relay.url({ user: 'relay-user', pass: 'wrong' }),
          INBOX_SMTP_RELAY_TLS_CA: cert.certPath,
        }),
      },
      async ({ relay, server }) => {
        const org = await organization(server, [unique('cred')]);
        const [sender] = org.inboxes as [string];
        await org.client.inboxes.messages.send(sender, { to: 'someone@example.org', text: 'x' });
        const job = await firstAttempt(server);
        expect(job).toMatchObject({ status: 'pending', last_error: expect.stringMatching(/^4\.7\.8 .*535/) });
        expect(relay.logins).toEqual([{ user: 'relay-user', ok: false }]);
        expect(await eventsOf(server, { inboxId: sender })).toEqual([]);
      },
    );
  });

  it('rejects (message.rejected) mail queued while a relay was configured, when the service runs without one', async () => {
    const database = createInboxTestDatabase(dialect);
    const relay = await startSmtpRelay();
    await relay.stop();
    const receiver = await startWebhookReceiver({ now: () => Date.now() + 120_000 });
    try {
      const first = await startInboxServer({ database, env: { ...BASE_ENV, INBOX_SMTP_RELAY_URL: relay.url() } });
      let org!: Awaited<ReturnType<typeof organization>>;
      let sent!: { messageId: string; threadId: string };
      try {
        org = await organization(first, [unique('orphan')]);
        await hookAll(first, receiver, org.key, '/all');
        sent = await org.client.inboxes.messages.send(org.inboxes[0] as string, {
          to: 'someone@example.org',
          text: 'x',
        });
        await firstAttempt(first);
      } finally {
        await first.close();
      }
      // Two minutes later, without INBOX_SMTP_RELAY_URL.
      const second = await startInboxServer({ database, clock: fixedClock(new Date(Date.now() + 120_000)) });
      try {
        second.service.runtime.runner.notify();
        await receiver.waitFor(1);
        const [event] = delivered(receiver, '/all');
        expect(event).toMatchObject({
          event_type: 'message.rejected',
          reject: {
            inbox_id: org.inboxes[0],
            thread_id: sent.threadId,
            message_id: sent.messageId,
            timestamp: isoTimestamp,
            reason: expect.stringContaining('INBOX_SMTP_RELAY_URL'),
          },
        });
        expect((await outboundJobs(second)).map((j) => j.status)).toEqual(['dead']);
      } finally {
        await second.close();
      }
    } finally {
      await receiver.stop();
      await database.drop();
    }
  });
});
