import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';
import { listenOnFreePort } from './ports.js';

/**
 * An SMTP relay over a real socket for the outbound suites: nodemailer's `smtp-server`, with
 * optional AUTH, STARTTLS or implicit TLS, that records what it accepts and answers from a
 * script (per MAIL FROM, per recipient, per DATA), as a real smarthost would.
 */

export interface RelayAnswer {
  readonly code: number;
  /** The text after the code, enhanced status included, e.g. `5.1.1 No such user`. */
  readonly message: string;
}

export interface RelayedMessage {
  readonly mailFrom: string;
  readonly rcptTo: readonly string[];
  /** ENVID of MAIL FROM (RFC 3461), null without one. */
  readonly envid: string | null;
  readonly ret: string | null;
  readonly notify: readonly (readonly string[] | null)[];
  readonly raw: Buffer;
  /** Whether the session ran over TLS (STARTTLS or implicit). */
  readonly secure: boolean;
  /** The authenticated user, if any. */
  readonly user: string | undefined;
}

export interface RelayScript {
  /** Answers for the next MAIL FROM commands, in order; then 250. */
  readonly mail: RelayAnswer[];
  /** Answers for the next RCPT TO of an address (lower-case key), in order; then 250. */
  readonly rcpt: Map<string, RelayAnswer[]>;
  /** Answers for the next messages at the end of DATA, in order; then 250. */
  readonly data: RelayAnswer[];
}

export interface SmtpRelay {
  readonly port: number;
  /** `smtp[s]://[user:pass@]<host>:<port>` */
  url(options?: { user?: string; pass?: string }): string;
  readonly received: RelayedMessage[];
  /** Every command answered with an error, e.g. `RCPT bad@example.org 550`. */
  readonly refusals: string[];
  /** Login attempts, successful or not. */
  readonly logins: { user: string; ok: boolean }[];
  readonly script: RelayScript;
  /** Resolves when at least `n` messages were accepted. */
  waitFor(n: number, timeoutMs?: number): Promise<void>;
  /**
   * Holds the answer to the next messages' final dot until the returned function is called (a
   * relay that takes its time, or hangs); `held()` resolves once a message is waiting on it.
   */
  holdData(): { release: () => void; held: () => Promise<void> };
  /** Closes the listener and every connection: connections are refused until `start()`. */
  stop(): Promise<void>;
  start(): Promise<void>;
}

export interface TestCertificate {
  readonly keyPem: string;
  readonly certPem: string;
  /** Path of the certificate file (self-signed: it is its own CA). */
  readonly certPath: string;
  remove(): void;
}

/** A self-signed certificate for 127.0.0.1 (and localhost), made with the system's openssl. */
export function createTestCertificate(): TestCertificate {
  const dir = mkdtempSync(path.join(tmpdir(), 'relay-tls-'));
  const keyPath = path.join(dir, 'key.pem');
  const certPath = path.join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyPath,
      '-out',
      certPath,
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ],
    { stdio: 'ignore' },
  );
  return {
    keyPem: readFileSync(keyPath, 'utf8'),
    certPem: readFileSync(certPath, 'utf8'),
    certPath,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

function smtpError(answer: RelayAnswer): Error {
  return Object.assign(new Error(answer.message), { responseCode: answer.code });
}

/** `host`: the IPv4 address to listen on and to name in `url()` (default 127.0.0.1). */
export async function startSmtpRelay(
  options: { tls?: TestCertificate; implicitTls?: boolean; auth?: { user: string; pass: string }; host?: string } = {},
): Promise<SmtpRelay> {
  const host = options.host ?? '127.0.0.1';
  const received: RelayedMessage[] = [];
  const refusals: string[] = [];
  const logins: { user: string; ok: boolean }[] = [];
  const script: RelayScript = { mail: [], rcpt: new Map(), data: [] };
  const scheme = options.implicitTls ? 'smtps' : 'smtp';
  let port = 0;
  let server: SMTPServer | undefined;
  let hold: { gate: Promise<void>; waiting: number } | undefined;

  const create = () =>
    new SMTPServer({
      secure: options.implicitTls ?? false,
      ...(options.tls ? { key: options.tls.keyPem, cert: options.tls.certPem } : {}),
      disabledCommands: [...(options.tls ? [] : ['STARTTLS']), ...(options.auth ? [] : ['AUTH'])],
      authOptional: !options.auth,
      // Takes credentials without TLS, as a careless relay would: the client has to refuse.
      allowInsecureAuth: true,
      // Our own enhanced status codes, exactly as scripted; DSN parameters (ENVID, NOTIFY) accepted.
      hideENHANCEDSTATUSCODES: true,
      hideDSN: false,
      closeTimeout: 200,
      logger: false,
      onAuth(auth, _session, callback) {
        const ok = auth.username === options.auth?.user && auth.password === options.auth?.pass;
        logins.push({ user: auth.username ?? '', ok });
        if (!ok)
          return callback(Object.assign(new Error('5.7.8 Authentication credentials invalid'), { responseCode: 535 }));
        callback(null, { user: auth.username });
      },
      onMailFrom(address, _session, callback) {
        const answer = script.mail.shift();
        if (answer) refusals.push(`MAIL ${address.address} ${answer.code}`);
        callback(answer ? smtpError(answer) : null);
      },
      onRcptTo(address, _session, callback) {
        const answer = script.rcpt.get(address.address.toLowerCase())?.shift();
        if (answer) refusals.push(`RCPT ${address.address} ${answer.code}`);
        callback(answer ? smtpError(answer) : null);
      },
      onData(stream, session: SMTPServerSession, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', async () => {
          if (hold) {
            hold.waiting++;
            await hold.gate;
          }
          const answer = script.data.shift();
          if (answer) {
            refusals.push(`DATA ${answer.code}`);
            return callback(smtpError(answer));
          }
          const envelope = session.envelope;
          received.push({
            mailFrom: envelope.mailFrom ? envelope.mailFrom.address : '',
            rcptTo: envelope.rcptTo.map((r) => r.address),
            envid: envelope.dsn?.envid ?? null,
            ret: envelope.dsn?.ret ?? null,
            notify: envelope.rcptTo.map((r) => r.dsn?.notify ?? null),
            raw: Buffer.concat(chunks),
            secure: session.secure,
            user: session.user as string | undefined,
          });
          callback(null, '2.0.0 Queued');
        });
      },
    });

  async function bind(at: number): Promise<void> {
    const s = create();
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.listen(at, host, () => resolve());
    });
    s.on('error', () => {});
    server = s;
  }
  // The first start picks a port that no other test's listen(0) can take while this relay is down.
  async function start(): Promise<void> {
    if (port) await bind(port);
    else port = await listenOnFreePort(bind);
  }

  await start();
  return {
    get port() {
      return port;
    },
    url: (o = {}) =>
      `${scheme}://${o.user !== undefined ? `${encodeURIComponent(o.user)}:${encodeURIComponent(o.pass ?? '')}@` : ''}${host}:${port}`,
    received,
    refusals,
    logins,
    script,
    async waitFor(n, timeoutMs = 10_000) {
      const until = Date.now() + timeoutMs;
      while (received.length < n) {
        if (Date.now() > until)
          throw new Error(
            `expected ${n} relayed messages, got ${received.length} (refusals: ${refusals.join('; ') || 'none'})`,
          );
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    holdData() {
      let open = () => {};
      const current = { gate: new Promise<void>((resolve) => (open = resolve)), waiting: 0 };
      hold = current;
      return {
        release: () => {
          if (hold === current) hold = undefined;
          open();
        },
        async held() {
          for (let i = 0; i < 1000 && !current.waiting; i++) await new Promise((r) => setTimeout(r, 10));
          if (!current.waiting) throw new Error('no message reached the held DATA');
        },
      };
    },
    async stop() {
      const s = server;
      server = undefined;
      if (!s) return;
      await new Promise<void>((resolve) => s.close(() => resolve()));
    },
    start,
  };
}
