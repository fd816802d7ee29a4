import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { authenticate } from 'mailauth';
import { pino } from 'pino';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/platform/config/config.js';
import { loggerOptions } from '../../src/platform/log/logger.js';
import { inboxConfigSpec } from '../../src/inbox/inbox.config.js';
import { dkimDnsRecord, dkimSignerFrom, type DkimConfig } from '../../src/inbox/outbound/dkim.js';
import {
  enhancedStatusOf,
  isLoopbackHost,
  outcomeOfError,
  relaySettingsFrom,
  requiresTls,
} from '../../src/inbox/outbound/relay.client.js';
import { bounceSubType } from '../../src/inbox/core/message-events.js';
import { startInboxServer } from '../support/inbox-server.js';
import { txtResolver } from './smtp-outbound.helpers.js';

/** Relay and DKIM settings, checked at boot; DKIM signatures as mailauth verifies them; the bounce vocabulary. */

const dir = mkdtempSync(path.join(tmpdir(), 'dkim-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
const ed25519 = generateKeyPairSync('ed25519').privateKey;
const pem = (key: typeof rsa, type: 'pkcs8' | 'pkcs1' = 'pkcs8') => key.export({ type, format: 'pem' }).toString();

const MESSAGE = Buffer.from(
  [
    'From: Agent <agent@inbox.test>',
    'To: someone@example.org',
    'Subject: Signed',
    'Date: Sat, 21 Nov 2026 12:00:00 +0000',
    'Message-ID: <0193-signed@inbox.test>',
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'Hello, with a signature.',
    '',
  ].join('\r\n'),
);

function config(overrides: Partial<DkimConfig>): DkimConfig {
  return {
    domains: ['inbox.test', 'agents.test'],
    dkimSelector: undefined,
    dkimPrivateKey: undefined,
    dkimDomains: [],
    ...overrides,
  };
}

function signer(overrides: Partial<DkimConfig>) {
  const problems: string[] = [];
  const s = dkimSignerFrom(config(overrides), problems);
  expect(problems).toEqual([]);
  if (!s) throw new Error('no signer');
  return s;
}

describe('DKIM signing, verified by mailauth', () => {
  it.each([
    ['an RSA key as PEM text', () => pem(rsa), 'rsa-sha256', rsa],
    ['a PKCS#1 RSA key on one line with \\n escapes', () => pem(rsa, 'pkcs1').replace(/\n/g, '\\n'), 'rsa-sha256', rsa],
    [
      'an Ed25519 key from a file',
      () => {
        const file = path.join(dir, 'ed25519.pem');
        writeFileSync(file, pem(ed25519));
        return file;
      },
      'ed25519-sha256',
      ed25519,
    ],
  ] as const)('signs with %s, and dkimVerify passes it', async (_name, key, algorithm, privateKey) => {
    const s = signer({ dkimSelector: 'sel1', dkimPrivateKey: key() });
    expect(s.algorithm).toBe(algorithm);
    const signed = await s.sign(MESSAGE, 'Inbox.Test', new Date('2026-11-21T12:00:00Z'));
    expect(signed.subarray(signed.length - MESSAGE.length).equals(MESSAGE)).toBe(true);
    const resolver = txtResolver({ 'sel1._domainkey.inbox.test': dkimDnsRecord(privateKey, algorithm) });
    const result = await dkimVerify(signed, { resolver });
    expect(result.results).toHaveLength(1);
    expect(result.results[0]).toMatchObject({
      signingDomain: 'inbox.test',
      selector: 'sel1',
      status: { result: 'pass' },
    });

    // An altered body no longer verifies: the check above is a real one.
    const tampered = Buffer.from(signed.toString('utf8').replace('Hello, with', 'Hello, without'));
    expect((await dkimVerify(tampered, { resolver })).results[0]?.status).toMatchObject({
      result: 'neutral',
      comment: 'body hash did not verify',
    });
  });

  it('passes DMARC through mailauth authenticate: the signature is aligned with From', async () => {
    const s = signer({ dkimSelector: 'sel1', dkimPrivateKey: pem(rsa) });
    const signed = await s.sign(MESSAGE, 'inbox.test', new Date());
    const resolver = txtResolver({
      'sel1._domainkey.inbox.test': dkimDnsRecord(rsa, 'rsa-sha256'),
      '_dmarc.inbox.test': 'v=DMARC1; p=reject',
    });
    const result = await authenticate(signed, {
      ip: '192.0.2.1',
      helo: 'relay.example.net',
      sender: 'agent@inbox.test',
      mta: 'mx.example.org',
      resolver,
      disableArc: true,
      disableBimi: true,
    });
    expect(result.dkim.results[0]?.status.result).toBe('pass');
    expect(result.dmarc && result.dmarc.status.result).toBe('pass');
  });

  it('signs only for INBOX_DKIM_DOMAINS when it is set, and for every local domain otherwise', async () => {
    const some = signer({ dkimSelector: 'sel1', dkimPrivateKey: pem(ed25519), dkimDomains: ['agents.test'] });
    expect(some.domains).toEqual(['agents.test']);
    expect((await some.sign(MESSAGE, 'inbox.test', new Date())).equals(MESSAGE)).toBe(true);
    expect(signer({ dkimSelector: 'sel1', dkimPrivateKey: pem(ed25519) }).domains).toEqual([
      'inbox.test',
      'agents.test',
    ]);
    expect(dkimSignerFrom(config({}), [])).toBeUndefined();
  });

  it('never echoes a key that is not recognised as PEM text: quoted, without its BEGIN line, or on one line', () => {
    const text = pem(rsa);
    const body = text
      .split('\n')
      .filter((l) => l && !l.startsWith('-----'))
      .join('');
    for (const value of [`"${text}"`, body, text.split('\n').slice(1).join('\n'), body.slice(0, 200)]) {
      const problems: string[] = [];
      expect(dkimSignerFrom(config({ dkimSelector: 's', dkimPrivateKey: value }), problems)).toBeUndefined();
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(
        /^INBOX_DKIM_PRIVATE_KEY is neither PEM text .* nor the path of a readable file \((ENOENT|ENAMETOOLONG); a value of \d+ characters, not shown\)$/,
      );
      // Not a single 8-character run of the key's base64.
      for (let i = 0; i + 8 <= body.length; i += 8) expect(problems[0]).not.toContain(body.slice(i, i + 8));
    }
  });

  it('names every problem of the DKIM settings at once, without echoing a key', () => {
    const weak = generateKeyPairSync('rsa', { modulusLength: 512 }).privateKey;
    const cases: [Partial<DkimConfig>, string[]][] = [
      [{ dkimSelector: 'sel1' }, ['INBOX_DKIM_SELECTOR is set without INBOX_DKIM_PRIVATE_KEY']],
      [{ dkimPrivateKey: pem(rsa) }, ['INBOX_DKIM_PRIVATE_KEY is set without INBOX_DKIM_SELECTOR']],
      [
        { dkimDomains: ['inbox.test'] },
        ['INBOX_DKIM_DOMAINS is set, but INBOX_DKIM_SELECTOR and INBOX_DKIM_PRIVATE_KEY are not'],
      ],
      [
        { dkimSelector: 'bad selector', dkimPrivateKey: '/nonexistent/dkim.pem', dkimDomains: ['example.com'] },
        [
          'INBOX_DKIM_SELECTOR must be a DNS label or dot-separated labels, got "bad selector"',
          'INBOX_DKIM_PRIVATE_KEY is neither PEM text (starting with -----BEGIN) nor the path of a readable file (ENOENT; a value of 21 characters, not shown)',
          'INBOX_DKIM_DOMAINS names "example.com", which is not one of INBOX_DOMAINS',
        ],
      ],
      [
        { dkimSelector: 's', dkimPrivateKey: '-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----' },
        ['INBOX_DKIM_PRIVATE_KEY is not a PEM private key'],
      ],
      [
        { dkimSelector: 's', dkimPrivateKey: pem(weak) },
        ['INBOX_DKIM_PRIVATE_KEY is a 512-bit RSA key; verifiers refuse keys under 1024 bits (use 2048)'],
      ],
      [
        { dkimSelector: 's', dkimPrivateKey: pem(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey) },
        ['INBOX_DKIM_PRIVATE_KEY must be an RSA or Ed25519 key, got ec'],
      ],
    ];
    for (const [overrides, expected] of cases) {
      const problems: string[] = [];
      expect(dkimSignerFrom(config(overrides), problems)).toBeUndefined();
      expect(problems).toEqual(expected);
      expect(problems.join('\n')).not.toContain('MII');
    }
  });
});

describe('relay settings at boot', () => {
  it('refuses a relay URL that is not smtp: or smtps: when the configuration loads', () => {
    let error: unknown;
    try {
      loadConfig(inboxConfigSpec, {
        INBOX_SMTP_RELAY_URL: 'http://relay.example:25',
        INBOX_SMTP_RELAY_RETRY_HOURS: '-1',
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      'INBOX_SMTP_RELAY_URL must use smtp: or smtps:, got "http:"',
      'INBOX_SMTP_RELAY_RETRY_HOURS must be an integer from 0 to 720, got "-1"',
    ]);
  });

  it('does not start with a relay URL or DKIM settings it cannot use, and lists every problem without the password', async () => {
    const error = await startInboxServer({
      env: {
        INBOX_SMTP_RELAY_URL: 'smtp://user:hunter2@relay.example:2525/outbound?tls=off',
        INBOX_SMTP_RELAY_TLS_CA: '/nonexistent/ca.pem',
        INBOX_DKIM_SELECTOR: 'sel1',
        INBOX_DKIM_PRIVATE_KEY: pem(rsa),
        INBOX_DKIM_DOMAINS: 'elsewhere.example',
      },
    }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      'INBOX_SMTP_RELAY_URL takes no path, got "smtp://user:***@relay.example:2525/outbound?tls=off"',
      'INBOX_SMTP_RELAY_URL takes no query or fragment, got "smtp://user:***@relay.example:2525/outbound?tls=off"',
      'INBOX_SMTP_RELAY_TLS_CA cannot be read ("/nonexistent/ca.pem": ENOENT)',
      'INBOX_DKIM_DOMAINS names "elsewhere.example", which is not one of INBOX_DOMAINS',
    ]);
    expect((error as Error).message).not.toContain('hunter2');
  });

  it('never prints the relay password or the DKIM key, should the configuration reach a log line', () => {
    const lines: string[] = [];
    const log = pino(loggerOptions('info', 'test'), { write: (line: string) => void lines.push(line) });
    const key = pem(rsa);
    log.info(
      {
        config: loadConfig(inboxConfigSpec, {
          INBOX_SMTP_RELAY_URL: 'smtp://user:hunter2@relay.example',
          INBOX_DKIM_SELECTOR: 's',
          INBOX_DKIM_PRIVATE_KEY: key,
        }),
      },
      'settings',
    );
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain('hunter2');
    expect(lines[0]).not.toContain('PRIVATE KEY');
    expect(JSON.parse(lines[0] as string).config).toMatchObject({
      smtpRelayUrl: '[redacted]',
      dkimPrivateKey: '[redacted]',
      dkimSelector: 's',
    });
  });

  it('requires STARTTLS before credentials go to a relay off this machine, unless INBOX_SMTP_RELAY_ALLOW_PLAINTEXT_AUTH', () => {
    expect(
      ['127.0.0.1', '127.1.2.3', '::1', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1', 'localhost', 'LOCALHOST.'].map(
        isLoopbackHost,
      ),
    ).toEqual([true, true, true, true, true, true, true]);
    expect(
      [
        '10.0.0.1',
        '192.0.2.2',
        '::ffff:10.0.0.1',
        'fd00::2',
        'relay.example',
        'localhost.evil.example',
        '128.0.0.1',
      ].map(isLoopbackHost),
    ).toEqual([false, false, false, false, false, false, false]);
    const auth = { user: 'u', pass: 'p' };
    const cases: [{ host: string; secure: boolean; auth: unknown }, boolean, boolean][] = [
      [{ host: 'relay.example', secure: false, auth }, false, true],
      [{ host: '10.0.0.1', secure: false, auth }, false, true],
      [{ host: 'relay.example', secure: false, auth }, true, false], // the operator's explicit choice
      [{ host: 'relay.example', secure: true, auth }, false, false], // smtps: TLS from the first byte
      [{ host: 'relay.example', secure: false, auth: undefined }, false, false], // nothing to protect
      [{ host: '127.0.0.1', secure: false, auth }, false, false],
      [{ host: '::1', secure: false, auth }, false, false],
      [{ host: 'localhost', secure: false, auth }, false, false],
    ];
    for (const [relay, allow, expected] of cases)
      expect([relay, allow, requiresTls(relay, allow)]).toEqual([relay, allow, expected]);

    const settings = (url: string, allow = false) =>
      relaySettingsFrom(
        {
          smtpRelayUrl: url,
          smtpRelayTimeoutMs: 1000,
          smtpRelayMaxConnections: 1,
          smtpRelayTlsCa: undefined,
          smtpRelayAllowPlaintextAuth: allow,
        },
        [],
      )?.requireTls;
    expect([
      settings('smtp://u:p@relay.example:587'),
      settings('smtp://u:p@relay.example:587', true),
      settings('smtp://u:p@[::1]:25'),
      settings('smtps://u:p@relay.example'),
      settings('smtp://relay.example'),
    ]).toEqual([true, false, false, false, false]);
    expect(loadConfig(inboxConfigSpec, {}).smtpRelayAllowPlaintextAuth).toBe(false);
  });

  it('needs a host in the relay URL', async () => {
    const error = await startInboxServer({ env: { INBOX_SMTP_RELAY_URL: 'smtp://' } }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect((error as ConfigError).problems).toEqual(['INBOX_SMTP_RELAY_URL needs a host, got "smtp://"']);
  });
});

describe('the bounce vocabulary', () => {
  it('takes the enhanced status code from the reply, or the reply class', () => {
    expect(enhancedStatusOf('550 5.1.1 <x@example.org>: user unknown', 550)).toBe('5.1.1');
    expect(enhancedStatusOf('450-4.2.1 busy', 450)).toBe('4.2.1');
    expect(enhancedStatusOf('554 Transaction failed', 554)).toBe('5.0.0');
    expect(enhancedStatusOf(undefined, undefined)).toBeUndefined();
  });

  it('retries connection trouble, 4xx, 503 and refused credentials; bounces 5xx', () => {
    const err = (fields: Record<string, unknown>) => Object.assign(new Error('x'), fields);
    expect(outcomeOfError(err({ code: 'ECONNECTION', originalCode: 'ECONNREFUSED' }))).toMatchObject({
      kind: 'failed',
      temporary: true,
      status: '4.4.1',
    });
    expect(outcomeOfError(err({ code: 'ETIMEDOUT' }))).toMatchObject({
      kind: 'failed',
      temporary: true,
      status: '4.4.2',
    });
    expect(outcomeOfError(err({ code: 'EENVELOPE', responseCode: 451, response: '451 4.3.0 later' }))).toMatchObject({
      kind: 'failed',
      temporary: true,
      status: '4.3.0',
    });
    expect(
      outcomeOfError(err({ code: 'EPROTOCOL', responseCode: 503, response: '503 5.5.1 bad sequence' })),
    ).toMatchObject({ kind: 'failed', temporary: true });
    expect(outcomeOfError(err({ code: 'EAUTH', responseCode: 535, response: '535 5.7.8 no' }))).toMatchObject({
      kind: 'failed',
      temporary: true,
      status: '4.7.8',
      configurationProblem: true,
    });
    expect(
      outcomeOfError(err({ code: 'EENVELOPE', responseCode: 530, response: '530 5.7.0 Authentication required' })),
    ).toMatchObject({ kind: 'failed', temporary: true, configurationProblem: true });
    expect(
      outcomeOfError(err({ code: 'EMESSAGE', responseCode: 554, response: '554 5.6.0 bad content' })),
    ).toMatchObject({ kind: 'failed', temporary: false, status: '5.6.0' });
    expect(outcomeOfError(err({ code: 'EMESSAGE' }))).toMatchObject({
      kind: 'failed',
      temporary: false,
      status: '5.3.4',
    });
    const all = err({
      code: 'EENVELOPE',
      rejected: ['a@x.org', 'b@x.org'],
      rejectedErrors: [
        err({ recipient: 'a@x.org', responseCode: 550, response: '550 5.1.1 no' }),
        err({ recipient: 'b@x.org', responseCode: 452, response: '452 4.2.2 full' }),
      ],
    });
    expect(outcomeOfError(all)).toEqual({
      kind: 'recipients',
      accepted: [],
      refused: [
        { address: 'a@x.org', temporary: false, status: '5.1.1', diagnostic: 'smtp; 550 5.1.1 no' },
        { address: 'b@x.org', temporary: true, status: '4.2.2', diagnostic: 'smtp; 452 4.2.2 full' },
      ],
      response: undefined,
    });
  });

  it("maps enhanced status codes to SES's bounce sub-types", () => {
    expect(['5.1.1', '5.1.10', '5.2.2', '4.2.2', '5.3.4', '5.2.3', '5.7.1', '4.4.1'].map(bounceSubType)).toEqual([
      'NoEmail',
      'NoEmail',
      'MailboxFull',
      'MailboxFull',
      'MessageTooLarge',
      'MessageTooLarge',
      'General',
      'General',
    ]);
  });
});
