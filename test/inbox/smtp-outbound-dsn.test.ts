import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleDeliveryStatusNotification, parseDeliveryStatusNotification } from '../../src/inbox/outbound/dsn.js';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { startSmtpRelay, type SmtpRelay } from '../support/smtp-relay.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { eventsOf, isoTimestamp, organization, unique } from './fixtures.js';
import { delivered, hookAll } from './smtp-outbound.helpers.js';

/**
 * Delivery status notifications (RFC 3464) that come back for mail the relay took: matched to
 * the sender's copy by ENVID or by the returned Message-ID, and turned into message.bounced.
 * Fixtures in test/fixtures/dsn/ are reports as Postfix and Exim write them, with placeholders.
 */

const FAILED = 'failed@example.org';
const OTHER = 'other@example.org';

function fixture(name: string, vars: Record<string, string>, crlf = false): Buffer {
  let text = readFileSync(new URL(`../fixtures/dsn/${name}`, import.meta.url), 'utf8');
  for (const [key, value] of Object.entries(vars)) text = text.replaceAll(`{{${key}}}`, value);
  return Buffer.from(crlf ? text.replace(/\r?\n/g, '\r\n') : text);
}

describe.each(dialects)('%s: delivery status notifications', (dialect) => {
  let relay: SmtpRelay;
  let server: InboxTestServer;
  let receiver: WebhookReceiver;
  let org: Awaited<ReturnType<typeof organization>>;
  let sender: string;
  let sent: { messageId: string; threadId: string };
  let vars: Record<string, string>;

  beforeAll(async () => {
    relay = await startSmtpRelay();
    receiver = await startWebhookReceiver();
    server = await startInboxServer({
      dialect,
      env: { INBOX_SMTP_RELAY_URL: relay.url(), INBOX_SMTP_RELAY_TIMEOUT_MS: '5000' },
    });
    org = await organization(server, [{ username: unique('dsn'), displayName: 'Outbound Agent' }, unique('other')]);
    sender = org.inboxes[0] as string;
    await hookAll(server, receiver, org.key, '/all');
    sent = await org.client.inboxes.messages.send(sender, {
      to: [FAILED, OTHER],
      subject: 'Outbound check',
      text: 'Hello over SMTP.',
    });
    await relay.waitFor(1);
    await receiver.waitFor(2);
    vars = { SENDER: sender, FAILED, OTHER, ENVID: sent.messageId.slice(1, -1), MESSAGE_ID: sent.messageId };
  });
  afterAll(async () => {
    await server?.close();
    await receiver?.stop();
    await relay?.stop();
  });

  /** Hands a report to the function the inbound pipeline calls, in a transaction, and wakes the webhooks. */
  async function handle(raw: Buffer, options: { inboxId?: string } = {}): Promise<boolean> {
    const { services, runner } = server.service.runtime;
    const handled = await services.db
      .transaction()
      .execute((trx) =>
        handleDeliveryStatusNotification(trx, { events: services.events, clock: services.clock }, raw, options),
      );
    runner.notify();
    return handled;
  }

  const bounces = async () =>
    (await eventsOf(server, { type: 'message.bounced', inboxId: sender })).map((e) => e.bounce);

  it('turns a Postfix report (ENVID, returned headers, CRLF) into message.bounced for the sender, delivered to its webhook', async () => {
    const before = receiver.received.length;
    expect(await handle(fixture('postfix-user-unknown.eml', vars, true), { inboxId: sender.toUpperCase() })).toBe(true);
    await receiver.waitFor(before + 1);
    const [event] = delivered(receiver, '/all').slice(-1);
    expect(event).toMatchObject({ event_type: 'message.bounced' });
    expect(event?.bounce).toEqual({
      inbox_id: sender,
      thread_id: sent.threadId,
      message_id: sent.messageId,
      timestamp: isoTimestamp,
      type: 'Permanent',
      sub_type: 'NoEmail',
      recipients: [
        {
          address: FAILED,
          status: '5.1.1',
          diagnostic_code: `smtp; 550 5.1.1 <${FAILED}>: Recipient address rejected: User unknown`,
        },
      ],
    });
  });

  it('matches by ENVID alone when the returned Message-ID is unknown, and by Message-ID alone without an ENVID', async () => {
    const count = (await bounces()).length;
    expect(
      await handle(fixture('postfix-user-unknown.eml', { ...vars, MESSAGE_ID: '<unknown@elsewhere.example>' })),
    ).toBe(true);
    expect(await handle(fixture('postfix-user-unknown.eml', { ...vars, ENVID: 'unknown@elsewhere.example' }))).toBe(
      true,
    );
    expect((await bounces()).length).toBe(count + 2);
  });

  it('reads an Exim report: quoted-printable status, the returned message, a delayed recipient left alone', async () => {
    const raw = fixture('exim-mailbox-full.eml', vars);
    expect(parseDeliveryStatusNotification(raw)).toEqual({
      envelopeId: undefined,
      reportingMta: 'smtp.example.com',
      originalMessageId: sent.messageId,
      originalFrom: sender,
      notified: [sender],
      recipients: [
        {
          address: FAILED,
          originalAddress: undefined,
          action: 'failed',
          status: '5.2.2',
          diagnosticCode: 'smtp; 552 5.2.2 Mailbox full – quota exceeded',
        },
        { address: OTHER, originalAddress: undefined, action: 'delayed', status: '4.4.1', diagnosticCode: undefined },
      ],
    });
    expect(await handle(raw)).toBe(true);
    expect((await bounces()).at(-1)).toMatchObject({
      type: 'Permanent',
      sub_type: 'MailboxFull',
      recipients: [
        { address: FAILED, status: '5.2.2', diagnostic_code: 'smtp; 552 5.2.2 Mailbox full – quota exceeded' },
      ],
    });
  });

  it('reports a remote that gave up after its own retries (4.x.x, failed) as Transient, also from a report nested in a forward with a base64 status and an xtext ENVID', async () => {
    const status = [
      `Reporting-MTA: dns; relay.example.net`,
      `Original-Envelope-Id: ${vars.ENVID?.replace('@', '+40')}`,
      '',
      `Final-Recipient: rfc822; ${OTHER}`,
      'Action: failed',
      'Status: 4.4.7',
      'Diagnostic-Code: X-Postfix; delivery temporarily suspended',
      '',
    ].join('\r\n');
    const raw = fixture('gave-up-after-retries.eml', {
      ...vars,
      MESSAGE_ID: '<not-ours@example.org>',
      STATUS_BASE64: Buffer.from(status).toString('base64').replace(/.{76}/g, '$&\n'),
    });
    expect(await handle(raw)).toBe(true);
    expect((await bounces()).at(-1)).toMatchObject({
      type: 'Transient',
      sub_type: 'General',
      recipients: [{ address: OTHER, status: '4.4.7', diagnostic_code: 'X-Postfix; delivery temporarily suspended' }],
    });
  });

  it('leaves a delay report and one about a recipient the message never had to the caller (no event: ordinary mail)', async () => {
    const count = (await bounces()).length;
    expect(await handle(fixture('delayed.eml', vars))).toBe(false);
    expect(await handle(fixture('postfix-user-unknown.eml', { ...vars, FAILED: 'stranger@example.org' }))).toBe(false);
    expect((await bounces()).length).toBe(count);
  });

  it('reads a report in time linear in its size: 100,000 header lines, a status part past 64 KiB, at most 1000 recipient groups', () => {
    const groups = Array.from(
      { length: 5000 },
      (_, i) => `Final-Recipient: rfc822; r${i}@x.example\r\nAction: failed\r\nStatus: 5.1.1\r\n`,
    ).join('\r\n');
    const raw = Buffer.from(
      `From: MAILER-DAEMON@relay.example.net\r\nTo: ${sender}\r\n${'X-A: b\r\n'.repeat(100_000)}Content-Type: multipart/report; report-type=delivery-status; boundary="B"\r\n\r\n` +
        `--B\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; relay.example.net\r\n${'X-B: c\r\n'.repeat(20_000)}\r\n${groups}\r\n--B--\r\n`,
    );
    const started = performance.now();
    const dsn = parseDeliveryStatusNotification(raw);
    expect(performance.now() - started).toBeLessThan(2_000);
    // The 64 KiB of the status part hold its per-message group (160 kB of X-B lines, cut) and nothing else.
    expect(dsn).toMatchObject({ reportingMta: 'relay.example.net', notified: [sender], recipients: [] });
    const short = Array.from({ length: 1400 }, (_, i) => `Final-Recipient: r${i}@x\r\nAction: failed\r\n`).join('\r\n');
    const many = Buffer.from(
      `To: ${sender}\r\nContent-Type: multipart/report; report-type=delivery-status; boundary="B"\r\n\r\n--B\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; relay.example.net\r\n\r\n${short}\r\n--B--\r\n`,
    );
    expect(parseDeliveryStatusNotification(many)?.recipients).toHaveLength(1000);
  });

  it('leaves ordinary mail, reports about messages we did not send, and reports to another inbox to the caller', async () => {
    const count = (await bounces()).length;
    expect(await handle(fixture('ordinary-reply.eml', vars))).toBe(false);
    expect(
      await handle(
        fixture('postfix-user-unknown.eml', { ...vars, ENVID: 'nope@inbox.test', MESSAGE_ID: '<nope@inbox.test>' }),
      ),
    ).toBe(false);
    expect(await handle(fixture('postfix-user-unknown.eml', vars), { inboxId: org.inboxes[1] as string })).toBe(false);
    // A report whose addresses name another inbox than the sender's matches nothing, even with our ENVID.
    expect(await handle(fixture('postfix-user-unknown.eml', { ...vars, SENDER: 'nobody@inbox.test' }))).toBe(false);
    expect((await bounces()).length).toBe(count);
  });
});
