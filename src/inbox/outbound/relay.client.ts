import { readFileSync } from 'node:fs';
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { rootCertificates } from 'node:tls';
import nodemailer, { type NodemailerError } from 'nodemailer';
import { redactUrl } from '../../platform/config/config.js';
import { addressKey } from '../mail/domains.js';

/**
 * The SMTP relay as the outbound worker sees it: a pooled nodemailer transport that takes an
 * envelope and the finished message bytes, and an outcome that says, per recipient, whether the
 * relay took the message, refused it for good, or may take it later.
 */

export interface RelayConfig {
  readonly smtpRelayUrl: string | undefined;
  readonly smtpRelayTimeoutMs: number;
  readonly smtpRelayMaxConnections: number;
  readonly smtpRelayTlsCa: string | undefined;
  /** INBOX_SMTP_RELAY_ALLOW_PLAINTEXT_AUTH: credentials may go to a relay without STARTTLS. */
  readonly smtpRelayAllowPlaintextAuth: boolean;
}

export interface RelaySettings {
  readonly host: string;
  readonly port: number;
  /** Implicit TLS (`smtps:`); otherwise STARTTLS whenever the relay offers it. */
  readonly secure: boolean;
  /** STARTTLS or nothing: a relay that does not offer it never sees the credentials (see `requiresTls`). */
  readonly requireTls: boolean;
  readonly auth: { readonly user: string; readonly pass: string } | undefined;
  readonly timeoutMs: number;
  readonly maxConnections: number;
  /** Trusted certificate authorities: the system's plus INBOX_SMTP_RELAY_TLS_CA; undefined = Node's default. */
  readonly ca: readonly string[] | undefined;
  /** The URL without its password, for log lines. */
  readonly display: string;
}

export interface RelayEnvelope {
  readonly from: string;
  readonly to: readonly string[];
  /** RFC 3461 ENVID, returned in delivery status notifications (when the relay speaks DSN). */
  readonly envid?: string | undefined;
}

/** How the relay answered for one recipient it did not take. */
export interface Refusal {
  readonly address: string;
  /** A later attempt may succeed (4xx, connection trouble), as opposed to a permanent refusal (5xx). */
  readonly temporary: boolean;
  /** RFC 3463 enhanced status code, e.g. `5.1.1` (derived from the reply code when the relay sent none). */
  readonly status: string;
  /** What the relay said (`smtp; 550 5.1.1 …`), or what went wrong on the way to it. */
  readonly diagnostic: string;
}

/**
 * Either the relay took the message (for `accepted`, maybe for nobody when it refused every
 * recipient at RCPT) and refused the rest one by one, or the whole transaction failed before the
 * message was taken: `failure` then applies to every recipient of the envelope.
 */
export type RelayOutcome =
  | {
      readonly kind: 'recipients';
      readonly accepted: readonly string[];
      readonly refused: readonly Refusal[];
      readonly response: string | undefined;
    }
  | {
      readonly kind: 'failed';
      readonly temporary: boolean;
      readonly status: string;
      readonly diagnostic: string;
      readonly configurationProblem: boolean;
    };

export interface RelayClient {
  /** Host and port, for log lines. */
  readonly display: string;
  send(envelope: RelayEnvelope, raw: Buffer, signal?: AbortSignal): Promise<RelayOutcome>;
  close(): void;
}

const DEFAULT_PORT = { 'smtp:': 587, 'smtps:': 465 } as const;

/** The relay URL's parts, adding every problem to `problems`; undefined when no relay is set. */
export function relaySettingsFrom(config: RelayConfig, problems: string[]): RelaySettings | undefined {
  const raw = config.smtpRelayUrl;
  if (raw === undefined) {
    if (config.smtpRelayTlsCa !== undefined)
      problems.push('INBOX_SMTP_RELAY_TLS_CA is set, but INBOX_SMTP_RELAY_URL is not');
    return undefined;
  }
  // The config loader already checked that it parses and uses smtp: or smtps:.
  const url = new URL(raw);
  const shown = redactUrl(raw);
  const before = problems.length;
  if (!url.hostname) problems.push(`INBOX_SMTP_RELAY_URL needs a host, got "${shown}"`);
  if (url.pathname && url.pathname !== '/') problems.push(`INBOX_SMTP_RELAY_URL takes no path, got "${shown}"`);
  if (url.search || url.hash) problems.push(`INBOX_SMTP_RELAY_URL takes no query or fragment, got "${shown}"`);
  if (url.password && !url.username) problems.push('INBOX_SMTP_RELAY_URL has a password without a user name');
  const ca = config.smtpRelayTlsCa === undefined ? undefined : readCa(config.smtpRelayTlsCa, problems);
  if (problems.length > before) return undefined;
  const protocol = url.protocol as keyof typeof DEFAULT_PORT;
  // URL keeps an IPv6 host in brackets; sockets want it bare.
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const secure = protocol === 'smtps:';
  const auth = url.username
    ? { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) }
    : undefined;
  return {
    host,
    port: url.port ? Number(url.port) : DEFAULT_PORT[protocol],
    secure,
    requireTls: requiresTls({ host, secure, auth }, config.smtpRelayAllowPlaintextAuth),
    auth,
    timeoutMs: config.smtpRelayTimeoutMs,
    maxConnections: config.smtpRelayMaxConnections,
    ca,
    display: `${protocol}//${url.host}`,
  };
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** 127.0.0.0/8, ::1 (IPv4-mapped forms too) and `localhost`: traffic that never leaves the machine. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  if (h === 'localhost') return true;
  if (isIPv4(h)) return LOOPBACK.check(h, 'ipv4');
  if (isIPv6(h)) return LOOPBACK.check(h, 'ipv6');
  return false;
}

/**
 * Whether the relay must upgrade to TLS before we authenticate: `smtp://` with credentials to a
 * host off this machine, unless INBOX_SMTP_RELAY_ALLOW_PLAINTEXT_AUTH says otherwise. Without it,
 * nodemailer would send AUTH in clear text to a relay that does not offer STARTTLS (or to anyone
 * on the path who strips the offer). With it, such a relay fails the send as a TLS problem:
 * retried and logged as our configuration (`configurationProblem`), never bounced for it.
 */
export function requiresTls(
  relay: { readonly host: string; readonly secure: boolean; readonly auth: unknown },
  allowPlaintextAuth: boolean,
): boolean {
  return !relay.secure && relay.auth !== undefined && !allowPlaintextAuth && !isLoopbackHost(relay.host);
}

function readCa(path: string, problems: string[]): string[] | undefined {
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch (err) {
    problems.push(
      `INBOX_SMTP_RELAY_TLS_CA cannot be read ("${path}": ${(err as NodeJS.ErrnoException).code ?? 'unreadable'})`,
    );
    return undefined;
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
    problems.push(`INBOX_SMTP_RELAY_TLS_CA holds no PEM certificate ("${path}")`);
    return undefined;
  }
  // Node's `ca` replaces the system list; keep it, so that a public relay still verifies.
  return [...rootCertificates, pem];
}

export function createRelayClient(settings: RelaySettings): RelayClient {
  const transport = nodemailer.createTransport({
    pool: true,
    host: settings.host,
    port: settings.port,
    secure: settings.secure,
    requireTLS: settings.requireTls,
    ...(settings.auth ? { auth: { user: settings.auth.user, pass: settings.auth.pass } } : {}),
    maxConnections: settings.maxConnections,
    maxMessages: 100,
    // A connection that drops mid-message fails the send: the job runner retries it, durably.
    maxRequeues: 0,
    connectionTimeout: settings.timeoutMs,
    greetingTimeout: settings.timeoutMs,
    socketTimeout: settings.timeoutMs,
    // The relay is the operator's choice, often a local MTA on a loopback address.
    allowInternalNetworkInterfaces: true,
    logger: false,
    ...(settings.ca ? { tls: { ca: [...settings.ca] } } : {}),
  });
  return {
    display: settings.display,
    async send(envelope, raw, signal) {
      try {
        const info = await transport.sendMail({
          envelope: { from: envelope.from, to: [...envelope.to] },
          raw,
          // Failures only: AgentMail has no event for a delay, and headers are enough to match.
          ...(envelope.envid ? { dsn: { envid: envelope.envid, ret: 'HDRS', notify: ['FAILURE'] } } : {}),
          ...(signal ? { signal } : {}),
        });
        const refused = (info.rejectedErrors ?? []).map((e) => refusalOf(e, e.recipient ?? ''));
        return inOurSpelling(
          {
            kind: 'recipients',
            accepted: info.accepted.map(String),
            refused: withMissingRefusals(refused, info.rejected.map(String)),
            response: info.response,
          },
          envelope.to,
        );
      } catch (err) {
        return inOurSpelling(outcomeOfError(err as NodemailerError), envelope.to);
      }
    },
    close() {
      transport.close();
    },
  };
}

/**
 * Addresses as the envelope spelled them: nodemailer lower-cases domains (`A@Example.org` →
 * `A@example.org`) and writes internationalized ones in their xn-- form.
 */
function inOurSpelling(outcome: RelayOutcome, to: readonly string[]): RelayOutcome {
  if (outcome.kind !== 'recipients') return outcome;
  const ours = new Map(to.map((a) => [addressKey(a), a]));
  const spell = (a: string) => ours.get(addressKey(a)) ?? a;
  return {
    ...outcome,
    accepted: outcome.accepted.map(spell),
    refused: outcome.refused.map((r) => ({ ...r, address: spell(r.address) })),
  };
}

/** Recipients nodemailer lists as rejected without an error of their own. */
function withMissingRefusals(refused: Refusal[], rejected: readonly string[]): Refusal[] {
  const known = new Set(refused.map((r) => r.address.toLowerCase()));
  const missing = rejected
    .filter((a) => !known.has(a.toLowerCase()))
    .map((address) => ({
      address,
      temporary: true,
      status: '4.0.0',
      diagnostic: 'refused by the relay without a reply',
    }));
  return [...refused, ...missing];
}

// ---------------------------------------------------------------------------------------------
// Errors → outcomes. Exported for tests of the vocabulary.

/** The RFC 3463 code of a reply (`550 5.1.1 …` → `5.1.1`), else the reply class's generic one. */
export function enhancedStatusOf(response: string | undefined, responseCode: number | undefined): string | undefined {
  const match = response ? /^\d{3}[ -]([245]\.\d{1,3}\.\d{1,3})\b/.exec(response) : null;
  if (match) return match[1];
  if (responseCode && responseCode >= 400 && responseCode < 600) return `${Math.floor(responseCode / 100)}.0.0`;
  return undefined;
}

function refusalOf(err: NodemailerError, address: string): Refusal {
  const verdict = judgeError(err);
  return { address, temporary: verdict.temporary, status: verdict.status, diagnostic: verdict.diagnostic };
}

export function outcomeOfError(err: NodemailerError): RelayOutcome {
  // Every recipient refused at RCPT: not a failure of the transaction but one refusal per address.
  if (err.code === 'EENVELOPE' && err.rejectedErrors?.length) {
    const refused = err.rejectedErrors.map((e) => refusalOf(e, e.recipient ?? ''));
    return {
      kind: 'recipients',
      accepted: [],
      refused: withMissingRefusals(refused, err.rejected ?? []),
      response: undefined,
    };
  }
  return { kind: 'failed', ...judgeError(err) };
}

interface Verdict {
  readonly temporary: boolean;
  readonly status: string;
  readonly diagnostic: string;
  /** Our side is misconfigured (credentials, TLS): retried, but worth an error in the log. */
  readonly configurationProblem: boolean;
}

const CONNECT_FAILURES = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EADDRNOTAVAIL',
]);

/**
 * Retry versus bounce, as RFC 5321 §4.2.1 has it: 5xx refuses for good (but 503, a session out of
 * step), everything else may pass later. Two refusals are ours, not the recipient's, and so are
 * retried however the relay phrased them, as Postfix does: failed authentication and TLS.
 */
function judgeError(err: NodemailerError): Verdict {
  const diagnostic = err.response ? `smtp; ${err.response}` : err.message;
  const status = enhancedStatusOf(err.response, err.responseCode);
  const code = err.code ?? '';
  // 530: the relay wants credentials we did not give (RFC 4954).
  if (code === 'EAUTH' || code === 'ENOAUTH' || code === 'ETLS' || code === 'EREQUIRETLS' || err.responseCode === 530) {
    return { temporary: true, status: status?.replace(/^5/, '4') ?? '4.7.0', diagnostic, configurationProblem: true };
  }
  if (err.responseCode) {
    const permanent = err.responseCode >= 500 && err.responseCode !== 503;
    return {
      temporary: !permanent,
      status: status ?? (permanent ? '5.0.0' : '4.0.0'),
      diagnostic,
      configurationProblem: false,
    };
  }
  // Refused by nodemailer before the relay saw it: the relay's SIZE limit, an address it cannot send.
  if (code === 'EMESSAGE') return { temporary: false, status: '5.3.4', diagnostic, configurationProblem: false };
  if (code === 'EENVELOPE') return { temporary: false, status: '5.1.3', diagnostic, configurationProblem: false };
  if (CONNECT_FAILURES.has(err.originalCode ?? code))
    return { temporary: true, status: '4.4.1', diagnostic, configurationProblem: false };
  if (code === 'EDNS') return { temporary: true, status: '4.4.3', diagnostic, configurationProblem: false };
  // Timeouts, dropped connections, our own deadline (EABORT), anything unforeseen: try again later.
  return { temporary: true, status: '4.4.2', diagnostic, configurationProblem: false };
}
