import { generateKeyPairSync } from 'node:crypto';
import { dkimSign } from 'mailauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { deliver, storedMessageId } from '../support/smtp-client.js';
import { organization, unique } from './fixtures.js';
import { downloadRaw, getMessage, simpleMessage, smtpPort } from './smtp-inbound.helpers.js';

/**
 * SPF, DKIM and DMARC of inbound mail with mailauth, offline: the DNS answers come from a table
 * handed to the service's resolver hook, as a zone would publish them.
 */

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const dkimRecord = `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`;

/** TXT records by name; every other name does not exist. */
const zone: Record<string, string> = {
  'signed.example': 'v=spf1 ip4:127.0.0.1 -all',
  'sel._domainkey.signed.example': dkimRecord,
  '_dmarc.signed.example': 'v=DMARC1; p=reject',
  'bank.example': 'v=spf1 ip4:192.0.2.1 -all',
  '_dmarc.bank.example': 'v=DMARC1; p=reject',
  'testing.example': 'v=spf1 ip4:192.0.2.1 -all',
  '_dmarc.testing.example': 'v=DMARC1; p=quarantine; pct=10',
  'nodmarc.example': 'v=spf1 -all',
  'sel._domainkey.nodmarc.example': dkimRecord,
};

async function fakeDns(name: string, rrtype: string): Promise<unknown> {
  const record = rrtype === 'TXT' ? zone[name.toLowerCase()] : undefined;
  if (record === undefined) throw Object.assign(new Error(`query${rrtype} ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
  return [[record]];
}

async function signed(message: string, domain: string): Promise<string> {
  const key = {
    signingDomain: domain,
    selector: 'sel',
    privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
  };
  // mailauth signs for each entry of signatureData (its types also ask for the fields on top).
  const { signatures, errors } = await dkimSign(message, { ...key, signatureData: [key] });
  if (errors.length) throw errors[0];
  return signatures + message;
}

describe.each(dialects)('%s: inbound SMTP authentication results', (dialect) => {
  let server: InboxTestServer;
  let org: Awaited<ReturnType<typeof organization>>;
  let inbox: string;
  let port: number;

  beforeAll(async () => {
    server = await startInboxServer({
      dialect,
      env: { INBOX_SMTP_VERIFY_AUTH: 'true', INBOX_SMTP_HOSTNAME: 'mx.inbox.test' },
      dnsResolver: fakeDns,
    });
    org = await organization(server, [unique('auth')]);
    inbox = org.inboxes[0] as string;
    port = smtpPort(server);
  });
  afterAll(async () => {
    await server.close();
  });

  async function receive(from: string, message: string) {
    const result = await deliver(port, { from, to: [inbox], message });
    const got = await getMessage(server, org.key, inbox, storedMessageId(result.data));
    expect(got.status).toBe(200);
    return got.body;
  }

  it('passes a DKIM-signed message from an SPF-authorized address with a DMARC policy: no auth label, the verdict in Authentication-Results', async () => {
    const message = await signed(
      simpleMessage({
        from: 'Signer <news@signed.example>',
        to: inbox,
        subject: 'Signed',
        messageId: `<signed.${unique('s')}@signed.example>`,
      }),
      'signed.example',
    );
    const m = await receive('bounce@signed.example', message);
    expect(m.labels).toEqual(['received', 'unread']);
    const results = m.headers['Authentication-Results'] as string;
    expect(results).toMatch(/^mx\.inbox\.test;/);
    expect(results).toMatch(/dkim=pass [^;]*header\.i=@signed\.example/);
    expect(results).toMatch(/spf=pass [^;]*smtp\.mailfrom=bounce@signed\.example/);
    expect(results).toMatch(/dmarc=pass [^;]*header\.from=signed\.example/);
    expect(m.headers['Received-SPF']).toMatch(/^pass /);
    const raw = (await downloadRaw(server, org.key, inbox, m.message_id)).toString('latin1');
    expect(raw).toMatch(
      /^Return-Path: <bounce@signed\.example>\r\nReceived: [^]*?\r\nReceived-SPF: pass [^]*?\r\nAuthentication-Results: mx\.inbox\.test;\r\n dkim=pass/,
    );
  });

  it('labels mail from a domain with p=reject that fails DMARC `unauthenticated` and `spam`', async () => {
    const m = await receive(
      'ceo@bank.example',
      simpleMessage({ from: 'Bank <ceo@bank.example>', to: inbox, subject: 'Urgent wire transfer' }),
    );
    expect(m.labels).toEqual(['received', 'unread', 'unauthenticated', 'spam']);
    expect(m.headers['Authentication-Results']).toMatch(/spf=fail/);
    expect(m.headers['Authentication-Results']).toMatch(/dmarc=fail/);
  });

  it('does not call spam what a policy only samples (pct below 100): `unauthenticated` only', async () => {
    const m = await receive(
      'a@testing.example',
      simpleMessage({ from: 'a@testing.example', to: inbox, subject: 'Sampled' }),
    );
    expect(m.labels).toEqual(['received', 'unread', 'unauthenticated']);
  });

  it('counts a broken DKIM signature as a failure: a body changed after signing is `unauthenticated`', async () => {
    const message = await signed(
      simpleMessage({ from: 'news@signed.example', to: inbox, subject: 'Tampered', body: 'original body' }),
      'signed.example',
    );
    // Sent from an address SPF does not cover, so only DKIM could have passed DMARC.
    const m = await receive('other@unknown.example', message.replace('original body', 'changed body'));
    expect(m.labels).toEqual(['received', 'unread', 'unauthenticated', 'spam']);
    expect(m.headers['Authentication-Results']).toMatch(/dkim=(neutral|fail) \(body hash did not verify\)/);
  });

  it('accepts an aligned DKIM pass as authentication when the domain publishes no DMARC record', async () => {
    const message = await signed(
      simpleMessage({ from: 'hello@nodmarc.example', to: inbox, subject: 'No DMARC' }),
      'nodmarc.example',
    );
    const m = await receive('hello@nodmarc.example', message);
    expect(m.labels).toEqual(['received', 'unread']);
    expect(m.headers['Authentication-Results']).toMatch(/dmarc=none/);
    // Without DMARC and without a signature nothing proves the From domain.
    const unsigned = await receive(
      'hello@nodmarc.example',
      simpleMessage({ from: 'hello@nodmarc.example', to: inbox, subject: 'No DMARC, unsigned' }),
    );
    expect(unsigned.labels).toEqual(['received', 'unread', 'unauthenticated']);
  });

  it('removes Authentication-Results that claim our name and keeps those of other hosts', async () => {
    const forged = simpleMessage({
      from: 'ceo@bank.example',
      to: inbox,
      subject: 'Forged verdict',
      headers:
        'Authentication-Results: mx.inbox.test; dkim=pass header.d=bank.example; dmarc=pass\r\nAuthentication-Results: relay.elsewhere.example; spf=pass smtp.mailfrom=ceo@bank.example',
    });
    const m = await receive('ceo@bank.example', forged);
    const values = (m.headers['Authentication-Results'] as string).split('\n');
    expect(values[0]).toMatch(/^mx\.inbox\.test; dkim=none/);
    expect(values.slice(1)).toEqual(['relay.elsewhere.example; spf=pass smtp.mailfrom=ceo@bank.example']);
    const raw = (await downloadRaw(server, org.key, inbox, m.message_id)).toString('latin1');
    expect(raw).not.toContain('mx.inbox.test; dkim=pass');
    expect(m.labels).toContain('unauthenticated');
  });
});

describe.each(dialects)('%s: inbound SMTP authentication without DNS', (dialect) => {
  it('answers 250 within the time budget when DNS does not answer, with temperror results and `unauthenticated`', async () => {
    const silentDns = () => new Promise<never>(() => undefined);
    const server = await startInboxServer({
      dialect,
      env: { INBOX_SMTP_VERIFY_AUTH: 'true', INBOX_SMTP_AUTH_TIMEOUT_MS: '400', INBOX_SMTP_HOSTNAME: 'mx.inbox.test' },
      dnsResolver: silentDns,
    });
    try {
      const org = await organization(server, [unique('nodns')]);
      const inbox = org.inboxes[0] as string;
      const started = Date.now();
      const result = await deliver(smtpPort(server), {
        from: 'a@sender.example',
        to: [inbox],
        message: simpleMessage({ to: inbox, subject: 'DNS is down' }),
      });
      expect(result.data?.code).toBe(250);
      expect(Date.now() - started).toBeLessThan(3_000);
      const m = (await getMessage(server, org.key, inbox, storedMessageId(result.data))).body;
      expect(m.labels).toEqual(['received', 'unread', 'unauthenticated']);
      expect(m.headers['Authentication-Results']).toBe(
        'mx.inbox.test; dkim=temperror (DNS lookups took over 400 ms); spf=temperror (DNS lookups took over 400 ms); dmarc=temperror (DNS lookups took over 400 ms)',
      );
    } finally {
      await server.close();
    }
  });
});
