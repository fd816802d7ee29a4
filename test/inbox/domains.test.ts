import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { AgentMailError } from 'agentmail';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDnsResolver } from '../../src/inbox/smtp/auth-results.js';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.js';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { deliver } from '../support/smtp-client.js';
import { startSmtpRelay, type SmtpRelay } from '../support/smtp-relay.js';
import { call, enc, expectError, isoTimestamp, organization, secretOf, unique } from './fixtures.js';

/**
 * Custom domains through agentmail 0.5.27 (`domains.*`, `pods.domains.*`): DNS records to publish,
 * verification against a real DNS server on loopback, inboxes on verified domains, inbound mail
 * for them and outbound mail signed with the domain's own DKIM key (checked by mailauth over the
 * same DNS server).
 */

const MX_HOST = 'mx.inbox.test';
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- wire bodies are checked key by key
type Wire = Record<string, any>;

/** Publishes every record a domain asks for (or those `which` picks) on the DNS server. */
function publish(dns: TestDnsServer, domain: Wire, which: (r: Wire) => boolean = () => true): void {
  for (const r of domain.records as Wire[]) {
    if (!which(r)) continue;
    if (r.type === 'MX') dns.add(r.name, { type: 'MX', priority: r.priority, exchange: r.value });
    else dns.add(r.name, { type: 'TXT', value: r.value });
  }
}

const statuses = (d: Wire) =>
  Object.fromEntries(
    (d.records as Wire[]).map((r) => [
      `${r.type} ${r.name}${r.value.startsWith('v=spf1') ? ' spf' : ''}`,
      r.reason ? `${r.status}:${r.reason}` : r.status,
    ]),
  );

async function sdkError(promise: Promise<unknown>): Promise<{ statusCode: number | undefined; body: Wire }> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof AgentMailError) return { statusCode: err.statusCode, body: err.body as Wire };
    throw err;
  }
  throw new Error('expected the call to fail');
}

describe.each(dialects)('%s: custom domains', (dialect) => {
  let dns: TestDnsServer;
  let relay: SmtpRelay;
  let server: InboxTestServer;

  beforeAll(async () => {
    dns = await startDnsServer();
    relay = await startSmtpRelay();
    server = await startInboxServer({
      dialect,
      env: {
        INBOX_DNS_SERVERS: dns.address,
        INBOX_SMTP_HOSTNAME: MX_HOST,
        INBOX_SMTP_RELAY_URL: relay.url(),
        INBOX_DOMAIN_KEY_SECRET: 'a-test-secret-of-at-least-32-characters!',
        INBOX_SMTP_GREETING_DELAY_MS: '0',
        INBOX_DOMAIN_SPF_INCLUDE: 'relay.example',
      },
    });
  });
  afterAll(async () => {
    await server?.close();
    await relay?.stop();
    await dns?.close();
  });
  beforeEach(() => dns.clear());

  it('creates a domain with its own DKIM key and the records to publish; get, list, zone file answer in the SDK shapes', async () => {
    const org = await organization(server);
    const name = `${unique('acme')}.example`;
    const created = await call(server.url, org.key, 'POST', '/v0/domains', { domain: name.toUpperCase() });
    expect(created.status).toBe(201);
    const selector = /^(am[a-z0-9]+)\._domainkey\./.exec((created.body.records as Wire[])[2]?.name)?.[1];
    expect(selector).toBeDefined();
    expect(created.body).toEqual({
      domain_id: name,
      domain: name,
      status: 'NOT_STARTED',
      feedback_enabled: true,
      subdomains_enabled: false,
      tracking_enabled: false,
      records: [
        { type: 'MX', name, value: MX_HOST, priority: 10, status: 'MISSING' },
        { type: 'TXT', name, value: 'v=spf1 mx include:relay.example ~all', status: 'MISSING' },
        {
          type: 'TXT',
          name: `${selector}._domainkey.${name}`,
          value: expect.stringMatching(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/]{300,}={0,2}$/),
          status: 'MISSING',
        },
        { type: 'TXT', name: `_dmarc.${name}`, value: 'v=DMARC1; p=none', status: 'MISSING' },
      ],
      created_at: isoTimestamp,
      updated_at: isoTimestamp,
    });
    // Through the SDK: the same domain, parsed by its schemas.
    const got = await org.client.domains.get(name);
    expect(got).toEqual({
      domainId: name,
      domain: name,
      status: 'NOT_STARTED',
      feedbackEnabled: true,
      subdomainsEnabled: false,
      trackingEnabled: false,
      records: created.body.records,
      createdAt: new Date(created.body.created_at),
      updatedAt: new Date(created.body.updated_at),
    });
    const list = await org.client.domains.list();
    expect(list).toEqual({
      count: 1,
      limit: 50,
      domains: [
        {
          domainId: name,
          domain: name,
          feedbackEnabled: true,
          subdomainsEnabled: false,
          trackingEnabled: false,
          createdAt: got.createdAt,
          updatedAt: got.updatedAt,
        },
      ],
    });
    // The previous SDK line reads it too.
    expect(await server.client049(org.key).domains.get(name)).toMatchObject({ domainId: name, status: 'NOT_STARTED' });

    const zone = await org.client.domains.getZoneFile(name);
    const text = Buffer.from(await zone.arrayBuffer()).toString('utf8');
    const raw = await call(server.url, org.key, 'GET', `/v0/domains/${name}/zone-file`);
    expect(raw.headers.get('content-type')).toBe('text/dns; charset=utf-8');
    const dkimValue = (created.body.records as Wire[])[2]?.value as string;
    const chunks = dkimValue.match(/.{1,255}/g) as string[];
    expect(text).toBe(
      [
        `; DNS records for ${name}: publish them, then call POST /v0/domains/${name}/verify.`,
        '$TTL 3600',
        `${name}.\tIN\tMX\t10 ${MX_HOST}.`,
        `${name}.\tIN\tTXT\t"v=spf1 mx include:relay.example ~all"`,
        `${selector}._domainkey.${name}.\tIN\tTXT\t( ${chunks.map((c) => `"${c}"`).join(' ')} )`,
        `_dmarc.${name}.\tIN\tTXT\t"v=DMARC1; p=none"`,
        '',
      ].join('\n'),
    );

    // The private key is stored encrypted, never as PEM.
    const row = await server.service.database.db
      .selectFrom('domains')
      .select(['dkim_private_key'])
      .where('domain', '=', name)
      .executeTakeFirstOrThrow();
    expect(row.dkim_private_key).toMatch(/^v1:env:/);
    expect(row.dkim_private_key).not.toContain('PRIVATE KEY');
  });

  it('verify: nothing published → PENDING, partly or wrongly published → INVALID per record, all published → VERIFIED', async () => {
    const org = await organization(server);
    const name = `${unique('verify')}.example`;
    const domain = (await call(server.url, org.key, 'POST', '/v0/domains', { domain: name })).body as Wire;
    const dkimName = (domain.records as Wire[])[2]?.name as string;

    await org.client.domains.verify(name);
    let now = await org.client.domains.get(name);
    expect(now.status).toBe('PENDING');
    expect(now.reason).toBe('dns_records_missing');
    expect(now.records.map((r) => r.status)).toEqual(['MISSING', 'MISSING', 'MISSING', 'MISSING']);

    // MX and SPF right; the DKIM record of another key; DMARC missing; an unrelated TXT at the apex.
    publish(dns, domain, (r) => r.type === 'MX' || r.value.startsWith('v=spf1'));
    dns.add(name, { type: 'TXT', value: 'google-site-verification=abc' });
    dns.add(dkimName, { type: 'TXT', value: 'v=DKIM1; k=rsa; p=AAAAnotourkey' });
    const partial = await call(server.url, org.key, 'POST', `/v0/domains/${name}/verify`);
    expect(partial.status).toBe(200);
    expect(partial.body.status).toBe('INVALID');
    expect(partial.body.reason).toBe('dns_records_invalid');
    expect(statuses(partial.body)).toEqual({
      [`MX ${name}`]: 'VALID',
      [`TXT ${name} spf`]: 'VALID',
      [`TXT ${dkimName}`]: 'INVALID:value_mismatch',
      [`TXT _dmarc.${name}`]: 'MISSING',
    });
    now = await org.client.domains.get(name);
    expect(now.status).toBe('INVALID');
    expect(now.records[2]).toEqual({
      type: 'TXT',
      name: dkimName,
      value: (domain.records as Wire[])[2]?.value,
      status: 'INVALID',
      reason: 'value_mismatch',
    });

    // Our key beside the stale one: duplicate; a second MX elsewhere: duplicate too.
    publish(dns, domain, (r) => r.name === dkimName);
    dns.add(name, { type: 'MX', priority: 20, exchange: 'mx.elsewhere.example' });
    const dup = await call(server.url, org.key, 'POST', `/v0/domains/${name}/verify`);
    expect(statuses(dup.body)).toMatchObject({
      [`MX ${name}`]: 'INVALID:duplicate_records',
      [`TXT ${dkimName}`]: 'INVALID:duplicate_records',
    });

    dns.remove(dkimName);
    dns.remove(name, 'MX');
    publish(dns, domain, (r) => r.name === dkimName || r.type === 'MX' || r.name.startsWith('_dmarc.'));
    await org.client.domains.verify(name);
    now = await org.client.domains.get(name);
    expect(now.status).toBe('VERIFIED');
    expect(now.reason).toBeUndefined();
    expect(now.records.map((r) => r.status)).toEqual(['VALID', 'VALID', 'VALID', 'VALID']);
    // Each record was looked up on the loopback server.
    expect(dns.queries.map((q) => `${q.type} ${q.name}`)).toEqual(
      expect.arrayContaining([`MX ${name}`, `TXT ${name}`, `TXT ${dkimName}`, `TXT _dmarc.${name}`]),
    );
  });

  it('verify falls back to TCP for answers too big for a datagram', async () => {
    const org = await organization(server);
    const name = `${unique('big')}.example`;
    const domain = (await call(server.url, org.key, 'POST', '/v0/domains', { domain: name })).body as Wire;
    publish(dns, domain);
    for (let i = 0; i < 8; i++) dns.add(name, { type: 'TXT', value: `site-verification-${i}=${'x'.repeat(200)}` });
    await org.client.domains.verify(name);
    expect((await org.client.domains.get(name)).status).toBe('VERIFIED');
    expect(dns.queries.some((q) => q.name === name && q.type === 'TXT' && q.transport === 'tcp')).toBe(true);
  });

  it('a DNS failure answers 503 and records nothing', async () => {
    const org = await organization(server);
    const name = `${unique('servfail')}.example`;
    await org.client.domains.create({ domain: name });
    dns.fail(name);
    const res = await call(server.url, org.key, 'POST', `/v0/domains/${name}/verify`);
    expectError(res, 503, 'service_unavailable', 'DNS_UNAVAILABLE');
    expect((await org.client.domains.get(name)).status).toBe('NOT_STARTED');
  });

  it('inboxes go on verified domains of the organization only; the configured domains stay', async () => {
    const org = await organization(server);
    const other = await organization(server);
    const name = `${unique('inboxes')}.example`;
    const domain = (await call(server.url, org.key, 'POST', '/v0/domains', { domain: name })).body as Wire;

    const early = await call(server.url, org.key, 'POST', '/v0/inboxes', { username: 'agent', domain: name });
    expectError(early, 400, 'validation_error', 'DOMAIN_NOT_VERIFIED', 'domain');
    publish(dns, domain);
    await org.client.domains.verify(name);

    const inbox = await org.client.inboxes.create({ username: 'Agent', domain: name.toUpperCase() });
    expect(inbox.inboxId).toBe(`agent@${name}`);
    expect((await org.client.inboxes.create({ username: 'plain' })).inboxId).toBe('plain@inbox.test');
    const foreign = await call(server.url, other.key, 'POST', '/v0/inboxes', { username: 'agent2', domain: name });
    expectError(foreign, 403, 'permission_error', 'DOMAIN_NOT_OWNED', 'domain');
    const unknown = await call(server.url, org.key, 'POST', '/v0/inboxes', {
      username: 'agent3',
      domain: 'nobody.example',
    });
    expectError(unknown, 400, 'validation_error', 'DOMAIN_NOT_ALLOWED', 'domain');
    // Subdomains need subdomains_enabled and the wildcard MX.
    const sub = await call(server.url, org.key, 'POST', '/v0/inboxes', { username: 'agent4', domain: `eu.${name}` });
    expectError(sub, 400, 'validation_error', 'DOMAIN_NOT_ALLOWED', 'domain');
    const updated = await org.client.domains.update(name, { subdomainsEnabled: true });
    expect(updated.status).toBe('PENDING');
    expect(updated.records.map((r) => `${r.type} ${r.name} ${r.status}`)).toContain(`MX *.${name} MISSING`);
    // The apex keeps working while the wildcard waits.
    expect((await org.client.inboxes.create({ username: 'apex2', domain: name })).inboxId).toBe(`apex2@${name}`);
    dns.add(`*.${name}`, { type: 'MX', priority: 10, exchange: MX_HOST });
    await org.client.domains.verify(name);
    expect((await org.client.domains.get(name)).status).toBe('VERIFIED');
    expect((await org.client.inboxes.create({ username: 'agent4', domain: `eu.${name}` })).inboxId).toBe(
      `agent4@eu.${name}`,
    );

    // A domain with inboxes is not deleted; without, it is.
    const busy = await call(server.url, org.key, 'DELETE', `/v0/domains/${name}`);
    expectError(busy, 409, 'conflict', 'DOMAIN_IN_USE');
    for (const id of [inbox.inboxId, `apex2@${name}`, `agent4@eu.${name}`]) await org.client.inboxes.delete(id);
    await org.client.domains.delete(name);
    expectError(await call(server.url, org.key, 'GET', `/v0/domains/${name}`), 404, 'not_found', 'DOMAIN_NOT_FOUND');
  });

  it('without a relay, mail to a verified custom domain is delivered here; other domains are refused EXTERNAL_DELIVERY_DISABLED', async () => {
    const alone = await startInboxServer({
      dialect,
      env: {
        INBOX_DNS_SERVERS: dns.address,
        INBOX_SMTP_HOSTNAME: MX_HOST,
        INBOX_DOMAIN_KEY_SECRET: 'a-test-secret-of-at-least-32-characters!',
      },
    });
    try {
      const org = await organization(alone, [unique('sender')]);
      const name = `${unique('norelay')}.example`;
      const domain = (await call(alone.url, org.key, 'POST', '/v0/domains', { domain: name })).body as Wire;
      publish(dns, domain);
      await org.client.domains.verify(name);
      const target = await org.client.inboxes.create({ username: 'desk', domain: name });
      const sent = await org.client.inboxes.messages.send(org.inboxes[0] as string, {
        to: [target.inboxId],
        subject: 'local',
        text: 'no relay needed',
      });
      expect((await org.client.inboxes.messages.list(target.inboxId)).messages.map((m) => m.subject)).toEqual([
        'local',
      ]);
      expect(sent.messageId).toBeTruthy();
      const refused = await call(
        alone.url,
        org.key,
        'POST',
        `/v0/inboxes/${enc(org.inboxes[0] as string)}/messages/send`,
        { to: 'someone@elsewhere.example', text: 'x' },
      );
      expectError(refused, 400, 'validation_error', 'EXTERNAL_DELIVERY_DISABLED', 'to');
    } finally {
      await alone.close();
    }
  });

  it('first verified wins: another organization cannot add or verify a domain someone verified', async () => {
    const first = await organization(server);
    const second = await organization(server);
    const name = `${unique('claim')}.example`;
    const a = (await call(server.url, first.key, 'POST', '/v0/domains', { domain: name })).body as Wire;
    const b = (await call(server.url, second.key, 'POST', '/v0/domains', { domain: name })).body as Wire;
    expect(b.domain_id).toBe(name);
    // Both publish their keys; the first to verify owns the domain.
    publish(dns, a);
    publish(dns, b, (r) => r.name.includes('._domainkey.'));
    await first.client.domains.verify(name);
    expect((await first.client.domains.get(name)).status).toBe('VERIFIED');
    const late = await call(server.url, second.key, 'POST', `/v0/domains/${name}/verify`);
    expectError(late, 409, 'conflict', 'DOMAIN_TAKEN', 'domain');
    expect(await second.client.domains.get(name)).toMatchObject({
      status: 'FAILED',
      reason: 'domain_claimed_by_another_organization',
    });
    const third = await organization(server);
    expectError(
      await call(server.url, third.key, 'POST', '/v0/domains', { domain: name }),
      409,
      'conflict',
      'DOMAIN_TAKEN',
      'domain',
    );
    // The same organization twice.
    expectError(
      await call(server.url, first.key, 'POST', '/v0/domains', { domain: name }),
      409,
      'conflict',
      'DOMAIN_EXISTS',
      'domain',
    );
  });

  it('refuses bad names, configured domains, tracking and empty updates in the spec error format; takes IDN names in their ASCII form', async () => {
    const org = await organization(server);
    for (const bad of [
      '',
      'localhost',
      'a..b.example',
      '-a.example',
      'a-.example',
      '1.2.3.4',
      'user@x.example',
      'https://x.example',
      'x.example:25',
      'ex ample.example',
      'xn--zz.example',
      `${'a'.repeat(64)}.example`,
      `${`${'a'.repeat(62)}.`.repeat(4)}example`,
      'a_b.example',
    ]) {
      const res = await call(server.url, org.key, 'POST', '/v0/domains', { domain: bad });
      expect({ bad, status: res.status }).toEqual({ bad, status: 400 });
      expectError(res, 400, 'validation_error', bad === '' ? 'INVALID_VALUE' : 'INVALID_DOMAIN', 'domain');
    }
    expectError(
      await call(server.url, org.key, 'POST', '/v0/domains', { domain: 'nul\u0000.example' }),
      400,
      'validation_error',
      'NUL_CHARACTER',
      'domain',
    );
    expectError(
      await call(server.url, org.key, 'POST', '/v0/domains', {}),
      400,
      'validation_error',
      'REQUIRED',
      'domain',
    );
    expectError(
      await call(server.url, org.key, 'POST', '/v0/domains', { domain: 42 }),
      400,
      'validation_error',
      'INVALID_VALUE',
      'domain',
    );
    for (const reserved of ['inbox.test', 'sub.agents.test', 'INBOX.TEST.'])
      expectError(
        await call(server.url, org.key, 'POST', '/v0/domains', { domain: reserved }),
        400,
        'validation_error',
        'DOMAIN_RESERVED',
        'domain',
      );
    expectError(
      await call(server.url, org.key, 'POST', '/v0/domains', {
        domain: `${unique('t')}.example`,
        tracking_enabled: true,
      }),
      400,
      'validation_error',
      'TRACKING_NOT_SUPPORTED',
      'tracking_enabled',
    );

    const idn = `bücher-${unique('x')}.example`;
    const created = await org.client.domains.create({ domain: idn });
    const ascii = new URL(`http://${idn}`).hostname;
    expect(created.domainId).toBe(ascii);
    expect(ascii.startsWith('xn--')).toBe(true);
    expect((await call(server.url, org.key, 'GET', `/v0/domains/${enc(idn)}`)).body.domain_id).toBe(ascii);
    expectError(
      await call(server.url, org.key, 'POST', '/v0/domains', { domain: ascii }),
      409,
      'conflict',
      'DOMAIN_EXISTS',
      'domain',
    );

    expectError(
      await call(server.url, org.key, 'PATCH', `/v0/domains/${ascii}`, {}),
      400,
      'validation_error',
      'EMPTY_UPDATE',
    );
    expectError(
      await call(server.url, org.key, 'PATCH', `/v0/domains/${ascii}`, { tracking_enabled: true }),
      400,
      'validation_error',
      'TRACKING_NOT_SUPPORTED',
      'tracking_enabled',
    );
    expectError(
      await call(server.url, org.key, 'PATCH', `/v0/domains/${ascii}`, { feedback_enabled: 'no' }),
      400,
      'validation_error',
      'INVALID_VALUE',
      'feedback_enabled',
    );
    const updated = await org.client.domains.update(ascii, { feedbackEnabled: false });
    expect(updated).toMatchObject({ feedbackEnabled: false, status: 'NOT_STARTED' });
    expectError(
      await call(server.url, org.key, 'GET', '/v0/domains?page_token=nope'),
      400,
      'validation_error',
      'INVALID_PAGE_TOKEN',
      'page_token',
    );
    expectError(
      await call(server.url, org.key, 'GET', '/v0/domains?limit=0'),
      400,
      'validation_error',
      'INVALID_VALUE',
      'limit',
    );
    // The SDK's create maps 400 to its ValidationError.
    expect((await sdkError(org.client.domains.create({ domain: 'not a domain' }))).statusCode).toBe(400);
  });

  it('pages through domains with cursors, newest first or oldest first', async () => {
    const org = await organization(server);
    const names = [];
    for (let i = 0; i < 3; i++)
      names.push((await org.client.domains.create({ domain: `${unique(`p${i}`)}.example` })).domainId);
    const first = await org.client.domains.list({ limit: 2 });
    expect(first.domains.map((d) => d.domainId)).toEqual([names[2], names[1]]);
    expect(first.nextPageToken).toBeDefined();
    const second = await org.client.domains.list({ limit: 2, pageToken: first.nextPageToken as string });
    expect(second).toMatchObject({ count: 1, domains: [{ domainId: names[0] }] });
    expect(second.nextPageToken).toBeUndefined();
    expect((await org.client.domains.list({ ascending: true })).domains.map((d) => d.domainId)).toEqual(names);
  });

  it('keeps organizations and pods apart: foreign domains and pods answer 404 on every route', async () => {
    const org = await organization(server);
    const other = await organization(server);
    const name = `${unique('own')}.example`;
    await org.client.domains.create({ domain: name });
    const routes: [string, string, unknown?][] = [
      ['GET', `/v0/domains/${name}`],
      ['PATCH', `/v0/domains/${name}`, { feedback_enabled: false }],
      ['DELETE', `/v0/domains/${name}`],
      ['POST', `/v0/domains/${name}/verify`],
      ['GET', `/v0/domains/${name}/zone-file`],
    ];
    for (const [method, path, body] of routes)
      expectError(
        await call(server.url, other.key, method, path, body),
        404,
        'not_found',
        'DOMAIN_NOT_FOUND',
        'domain_id',
      );
    expect((await other.client.domains.list()).domains).toEqual([]);
    expectError(
      await call(server.url, org.key, 'GET', `/v0/domains/${enc('bad name')}`),
      404,
      'not_found',
      'DOMAIN_NOT_FOUND',
    );

    // Pod routes: the organization's pods only; a pod shows only its own domains.
    const podA = (await org.client.pods.create({ name: 'a' })).podId;
    const podB = (await org.client.pods.create({ name: 'b' })).podId;
    const inPod = `${unique('pod')}.example`;
    const created = await org.client.pods.domains.create(podB, { domain: inPod });
    expect(created).toMatchObject({ podId: podB, domainId: inPod, status: 'NOT_STARTED' });
    expect((await org.client.pods.domains.list(podB)).domains.map((d) => d.domainId)).toEqual([inPod]);
    expect((await org.client.pods.domains.list(podA)).domains).toEqual([]);
    expect((await org.client.pods.domains.get(podB, inPod)).podId).toBe(podB);
    expectError(
      await call(server.url, org.key, 'GET', `/v0/pods/${podA}/domains/${inPod}`),
      404,
      'not_found',
      'DOMAIN_NOT_FOUND',
    );
    expectError(
      await call(server.url, org.key, 'GET', `/v0/pods/${podB}/domains/${name}`),
      404,
      'not_found',
      'DOMAIN_NOT_FOUND',
    );
    // The organization's routes see the pod's domain.
    expect((await org.client.domains.list()).domains.map((d) => d.domainId).sort()).toEqual([name, inPod].sort());
    for (const path of [`/v0/pods/${podB}/domains`, `/v0/pods/${podB}/domains/${inPod}`, `/v0/pods/nope/domains`])
      expectError(await call(server.url, other.key, 'GET', path), 404, 'not_found', 'POD_NOT_FOUND', 'pod_id');
    // A pod's verified domain takes inboxes of that pod only.
    publish(dns, (await call(server.url, org.key, 'GET', `/v0/pods/${podB}/domains/${inPod}`)).body as Wire);
    await org.client.pods.domains.verify(podB, inPod);
    expect((await org.client.pods.domains.get(podB, inPod)).status).toBe('VERIFIED');
    expectError(
      await call(server.url, org.key, 'POST', '/v0/inboxes', { username: 'x', domain: inPod }),
      400,
      'validation_error',
      'DOMAIN_NOT_ALLOWED',
      'domain',
    );
    expectError(
      await call(server.url, org.key, 'POST', `/v0/pods/${podA}/inboxes`, { username: 'x', domain: inPod }),
      400,
      'validation_error',
      'DOMAIN_NOT_ALLOWED',
      'domain',
    );
    const podInbox = await org.client.pods.inboxes.create(podB, { username: 'x', domain: inPod });
    expect(podInbox).toMatchObject({ inboxId: `x@${inPod}`, podId: podB });
    await org.client.inboxes.delete(podInbox.inboxId);
    const zone = await org.client.pods.domains.getZoneFile(podB, inPod);
    expect(Buffer.from(await zone.arrayBuffer()).toString('utf8')).toContain(`${inPod}.\tIN\tMX\t10 ${MX_HOST}.`);
    await org.client.pods.domains.update(podB, inPod, { feedbackEnabled: false });
    await org.client.pods.domains.delete(podB, inPod);
    expect((await org.client.pods.domains.list(podB)).domains).toEqual([]);
  });

  it('applies pod keys, inbox keys and permissions to every domain route', async () => {
    const org = await organization(server);
    const podA = (await org.client.pods.create({ name: 'a' })).podId;
    const podB = (await org.client.pods.create({ name: 'b' })).podId;
    const orgWide = (await org.client.domains.create({ domain: `${unique('wide')}.example` })).domainId;
    const inB = (await org.client.pods.domains.create(podB, { domain: `${unique('inb')}.example` })).domainId;
    const podKey = secretOf(await org.client.pods.apiKeys.create(podA, { name: 'pod a' }));
    const a = server.client(podKey);
    expect((await a.domains.list()).domains).toEqual([]);
    for (const id of [orgWide, inB]) {
      for (const [method, path, body] of [
        ['GET', `/v0/domains/${id}`],
        ['PATCH', `/v0/domains/${id}`, { feedback_enabled: false }],
        ['DELETE', `/v0/domains/${id}`],
        ['POST', `/v0/domains/${id}/verify`],
        ['GET', `/v0/domains/${id}/zone-file`],
      ] as const) {
        expectError(await call(server.url, podKey, method, path, body), 404, 'not_found', 'DOMAIN_NOT_FOUND');
      }
    }
    expectError(await call(server.url, podKey, 'GET', `/v0/pods/${podB}/domains`), 404, 'not_found', 'POD_NOT_FOUND');
    expectError(
      await call(server.url, podKey, 'POST', `/v0/pods/${podB}/domains`, { domain: `${unique('x')}.example` }),
      404,
      'not_found',
      'POD_NOT_FOUND',
    );
    // What a pod key adds belongs to its pod.
    const mine = await a.domains.create({ domain: `${unique('mine')}.example` });
    expect(mine.podId).toBe(podA);
    expect((await a.pods.domains.list(podA)).domains.map((d) => d.domainId)).toEqual([mine.domainId]);
    expect((await org.client.pods.domains.get(podA, mine.domainId)).domainId).toBe(mine.domainId);

    // A key limited to one inbox sees no domains and adds none.
    const inbox = await org.client.pods.inboxes.create(podA, { username: unique('scoped') });
    const inboxKey = secretOf(await org.client.inboxes.apiKeys.create(inbox.inboxId, { name: 'inbox' }));
    expect((await server.client(inboxKey).domains.list()).domains).toEqual([]);
    expectError(
      await call(server.url, inboxKey, 'GET', `/v0/domains/${mine.domainId}`),
      404,
      'not_found',
      'DOMAIN_NOT_FOUND',
    );
    expectError(
      await call(server.url, inboxKey, 'POST', '/v0/domains', { domain: `${unique('i')}.example` }),
      403,
      'permission_error',
      'PERMISSION_DENIED',
    );

    // Permissions: read only; create only.
    const reader = secretOf(await org.client.apiKeys.create({ name: 'reader', permissions: { domainRead: true } }));
    expect((await server.client(reader).domains.get(orgWide)).domainId).toBe(orgWide);
    expect((await server.client(reader).domains.list()).count).toBe(3);
    const denied: [string, string, unknown?][] = [
      ['POST', '/v0/domains', { domain: `${unique('r')}.example` }],
      ['PATCH', `/v0/domains/${orgWide}`, { feedback_enabled: false }],
      ['POST', `/v0/domains/${orgWide}/verify`],
      ['DELETE', `/v0/domains/${orgWide}`],
      ['POST', `/v0/pods/${podB}/domains/${inB}/verify`],
    ];
    for (const [method, path, body] of denied)
      expectError(await call(server.url, reader, method, path, body), 403, 'permission_error', 'PERMISSION_DENIED');
    const creator = secretOf(await org.client.apiKeys.create({ name: 'creator', permissions: { domainCreate: true } }));
    expect((await call(server.url, creator, 'POST', '/v0/domains', { domain: `${unique('c')}.example` })).status).toBe(
      201,
    );
    for (const path of ['/v0/domains', `/v0/domains/${orgWide}`, `/v0/domains/${orgWide}/zone-file`])
      expectError(await call(server.url, creator, 'GET', path), 403, 'permission_error', 'PERMISSION_DENIED');
  });

  it("accepts inbound SMTP for verified domains only, and signs outbound mail with the domain's own DKIM key", async () => {
    const org = await organization(server);
    const name = `${unique('mail')}.example`;
    const domain = (await call(server.url, org.key, 'POST', '/v0/domains', { domain: name })).body as Wire;
    const port = server.service.smtp?.port as number;
    const message = (to: string) =>
      `From: Someone <someone@sender.example>\r\nTo: ${to}\r\nSubject: Hello custom domain\r\nMessage-ID: <${unique('m')}@sender.example>\r\n\r\nHi.\r\n`;

    // Not verified: not a domain of this server.
    const refused = await deliver(port, {
      from: 'someone@sender.example',
      to: [`agent@${name}`],
      message: message(`agent@${name}`),
    });
    expect(refused.rcpt[0]?.code).toBe(554);

    publish(dns, domain);
    await org.client.domains.verify(name);
    const inbox = await org.client.inboxes.create({ username: 'agent', domain: name });
    const accepted = await deliver(port, {
      from: 'someone@sender.example',
      to: [`Agent@${name.toUpperCase()}`],
      message: message(inbox.inboxId),
    });
    expect(accepted.rcpt[0]?.code).toBe(250);
    expect(accepted.data?.code).toBe(250);
    const received = await org.client.inboxes.messages.list(inbox.inboxId);
    expect(received.messages.map((m) => m.subject)).toEqual(['Hello custom domain']);
    const unknownUser = await deliver(port, {
      from: 'someone@sender.example',
      to: [`nobody@${name}`],
      message: message(`nobody@${name}`),
    });
    expect(unknownUser.rcpt[0]?.code).toBe(550);

    // Outbound: signed d=<domain>, s=<its selector>, verified by mailauth through the loopback DNS server.
    const before = relay.received.length;
    await org.client.inboxes.messages.send(inbox.inboxId, {
      to: ['partner@elsewhere.example'],
      subject: 'Signed',
      text: 'With our own key.',
    });
    await relay.waitFor(before + 1);
    const relayed = relay.received[before];
    expect(relayed?.mailFrom).toBe(inbox.inboxId);
    const selector = /^([^.]+)\._domainkey\./.exec((domain.records as Wire[])[2]?.name)?.[1];
    const resolver = createDnsResolver([dns.address], 4000);
    const verdict = await dkimVerify(relayed?.raw ?? Buffer.alloc(0), { resolver: resolver as never });
    expect(verdict.results).toHaveLength(1);
    expect(verdict.results[0]).toMatchObject({
      signingDomain: name,
      selector,
      status: { result: 'pass', aligned: name },
    });

    // A mail of the configured domain is not signed with a custom key (no INBOX_DKIM_* here).
    const plain = await org.client.inboxes.create({ username: unique('plain') });
    await org.client.inboxes.messages.send(plain.inboxId, {
      to: ['partner@elsewhere.example'],
      subject: 'Plain',
      text: 'No key.',
    });
    await relay.waitFor(before + 2);
    expect((relay.received[before + 1] as { raw: Buffer }).raw.toString('utf8')).not.toMatch(/^DKIM-Signature:/im);

    // Mail to a verified custom domain stays here: delivered in the sending transaction, not relayed.
    await org.client.inboxes.messages.send(plain.inboxId, {
      to: [`AGENT@${name.toUpperCase()}`],
      subject: 'Local leg',
      text: 'Stays here.',
    });
    expect((await org.client.inboxes.messages.list(inbox.inboxId)).messages.map((m) => m.subject)).toEqual([
      'Local leg',
      'Signed',
      'Hello custom domain',
    ]);
    expect(relay.received).toHaveLength(before + 2);
  });
});
