import { readFileSync, statSync } from 'node:fs';
import type { AddressInfo, Socket } from 'node:net';
import { createSecureContext, type TLSSocket } from 'node:tls';
import {
  SMTPServer,
  type SMTPServerAddress,
  type SMTPServerDataStream,
  type SMTPServerOptions,
  type SMTPServerSession,
} from 'smtp-server';
import { SMTPConnection } from 'smtp-server/lib/smtp-connection.js';
import { NoRecipientInboxError, UnparseableMessageError } from './inbound.errors.js';
import type { InboundEnvelope, InboundService } from './inbound.service.js';

/**
 * The inbound SMTP listener: a thin protocol adapter over the inbound service. It speaks SMTP
 * only: limits, the recipient check at RCPT, reading DATA, and turning outcomes into replies
 * (`replyFor` is the one mapper of errors to reply codes). docs/decisions/0005-inbound-smtp.md.
 */

export interface SmtpListenerConfig {
  readonly host: string;
  readonly port: number;
  /** Name in the greeting. */
  readonly hostname: string;
  /** PEM file paths or PEM text; STARTTLS is offered only with both. */
  readonly tlsKey: string | undefined;
  readonly tlsCert: string | undefined;
  readonly maxMessageBytes: number;
  readonly maxRecipients: number;
  readonly maxConnections: number;
  /** Concurrent connections from one client address (421 beyond). */
  readonly maxConnectionsPerIp: number;
  readonly maxMessagesPerConnection: number;
  readonly greetingDelayMs: number;
  /**
   * DATA bytes that all sessions together may hold in memory (message sources being received,
   * parsed and stored); a message that would go beyond gets 452 and is retried by its sender.
   */
  readonly maxBufferedBytes: number;
  /** Time from DATA to the final dot; beyond it the session gets 421 and is closed. */
  readonly dataTimeoutMs: number;
}

export interface SmtpLog {
  info(o: object, m: string): void;
  warn(o: object, m: string): void;
  error(o: object, m: string): void;
}

export interface RunningSmtpServer {
  readonly host: string;
  readonly port: number;
  /** Stops accepting, lets DATA in flight finish (up to CLOSE_GRACE_MS), then closes every session. */
  close(): Promise<void>;
}

/** How long a shutdown waits for messages in flight; within the process's 10 s close budget. */
const CLOSE_GRACE_MS = 5_000;
/** smtp-server's own fixed pause before the greeting (SMTPConnection#init). */
const LIBRARY_GREETING_DELAY_MS = 100;
/**
 * Refused RCPT commands (5xx) a session may collect before it is closed with 421: a
 * directory harvest (guessing addresses) or a confused client gets nowhere by going on. Postfix's
 * smtpd_hard_error_limit is 20 too.
 */
export const MAX_REFUSALS_PER_SESSION = 20;

interface SmtpReplyError extends Error {
  responseCode: number;
}

function reply(code: number, message: string): SmtpReplyError {
  return Object.assign(new Error(message), { responseCode: code });
}

/** The SMTP reply for a failed DATA: permanent only when the same bytes would fail again. */
/** `90 s`, `10 min`, or `1500 ms` when not whole seconds. */
function duration(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

/** A DATA transaction that ran past `dataTimeoutMs`; its session is closed. */
class DataTimeoutError extends Error {}

export function replyFor(err: unknown): SmtpReplyError {
  if (err instanceof UnparseableMessageError) return reply(554, 'Message could not be parsed; it was not stored');
  if (err instanceof NoRecipientInboxError) return reply(550, 'No such recipient here any more');
  // The database, a bug, a shutdown: nothing was stored and the sender should try again.
  return reply(451, 'Local error, message not stored; try again later');
}

/** A setting's value without the quotes an environment file may put around it. */
const unquoted = (value: string) =>
  value
    .trim()
    .replace(/^(["'])([\s\S]*)\1$/, '$2')
    .trim();
const isPemText = (text: string) => text.includes('-----BEGIN');

/**
 * PEM text, or the path of a PEM file. Text may come quoted and on one line with `\n` escapes
 * (as environment files and secret stores hand it over). `setting` names the variable in errors,
 * which never repeat the value: it may be a private key, and a path that does not exist may be
 * a mangled one.
 */
export function readPem(value: string, setting: string): Buffer {
  const text = unquoted(value);
  if (isPemText(text)) return Buffer.from(text.replace(/\\r/g, '').replace(/\\n/g, '\n'));
  try {
    return readFileSync(text);
  } catch (err) {
    throw new Error(
      `${setting} is neither PEM text nor a readable PEM file (${(err as NodeJS.ErrnoException).code ?? 'unreadable'})`,
    );
  }
}

export function tlsOptions(config: Pick<SmtpListenerConfig, 'tlsKey' | 'tlsCert'>): { key?: Buffer; cert?: Buffer } {
  if (!config.tlsKey !== !config.tlsCert)
    throw new Error('INBOX_SMTP_TLS_KEY and INBOX_SMTP_TLS_CERT must be set together');
  if (!config.tlsKey || !config.tlsCert) return {};
  return { key: readPem(config.tlsKey, 'INBOX_SMTP_TLS_KEY'), cert: readPem(config.tlsCert, 'INBOX_SMTP_TLS_CERT') };
}

/** How often certificate files are checked for a renewal (certbot and the like replace them in place). */
const TLS_RELOAD_CHECK_MS = 60_000;

/**
 * Keeps STARTTLS on the current key and certificate without a restart: on SIGHUP, and when the
 * files (if the settings name files rather than PEM text) change, both are read again and serve
 * the sessions that start TLS from then on. A pair that cannot be read or does not match keeps
 * the previous one (and says so in the log). Returns the function that stops watching.
 */
export function watchTls(
  config: Pick<SmtpListenerConfig, 'tlsKey' | 'tlsCert'>,
  apply: (options: { key: Buffer; cert: Buffer }) => void,
  log: SmtpLog,
  listener = 'smtp',
): () => void {
  if (!config.tlsKey || !config.tlsCert) return () => undefined;
  const key = config.tlsKey;
  const cert = config.tlsCert;
  const files = [key, cert].map(unquoted).filter((v) => !isPemText(v));
  const stamp = () =>
    files
      .map((f) => {
        try {
          const st = statSync(f);
          return `${st.mtimeMs}:${st.size}`;
        } catch {
          return 'missing';
        }
      })
      .join('|');
  let seen = stamp();
  const reload = (why: string) => {
    try {
      const options = { key: readPem(key, 'INBOX_SMTP_TLS_KEY'), cert: readPem(cert, 'INBOX_SMTP_TLS_CERT') };
      // Proves the pair before it replaces the one in use: a key that does not match throws here.
      createSecureContext(options);
      apply(options);
      log.info({ why }, `${listener}: TLS key and certificate reloaded`);
    } catch (err) {
      log.warn(
        { why, err: err instanceof Error ? err.message : String(err) },
        `${listener}: TLS key and certificate not reloaded; the previous ones stay in use`,
      );
    }
  };
  const onSignal = () => {
    seen = stamp();
    reload('SIGHUP');
  };
  process.on('SIGHUP', onSignal);
  const timer = files.length
    ? setInterval(() => {
        const now = stamp();
        if (now === seen) return;
        seen = now;
        reload('files changed');
      }, TLS_RELOAD_CHECK_MS)
    : undefined;
  timer?.unref();
  return () => {
    process.off('SIGHUP', onSignal);
    if (timer) clearInterval(timer);
  };
}

/**
 * smtp-server with a configurable greeting delay. The library waits a fixed 100 ms before each
 * greeting (refusing clients that talk first); for another delay, `connect()` mirrors the
 * library's own and replaces the connection's `connectionReady`, which that fixed timer calls, so
 * the greeting follows our timer instead. At the default the library runs untouched.
 */
class InboundSmtpServer extends SMTPServer {
  constructor(
    options: SMTPServerOptions,
    private readonly greetingDelayMs: number,
  ) {
    super(options);
  }

  override connect(socket: Socket | TLSSocket, socketOptions?: ConstructorParameters<typeof SMTPConnection>[2]): void {
    if (this.greetingDelayMs === LIBRARY_GREETING_DELAY_MS) return super.connect(socket, socketOptions);
    const connection = new SMTPConnection(this, socket, socketOptions);
    this.connections.add(connection);
    connection.on('error', (err: Error) => this._onError(err));
    connection.on('connect', (data: Parameters<SMTPServer['_onClientConnect']>[0]) => this._onClientConnect(data));
    const ready = connection.connectionReady.bind(connection);
    connection.connectionReady = () => undefined;
    const timer = setTimeout(() => {
      // Refused meanwhile (too many clients) or gone: nothing to greet.
      if (this.connections.has(connection)) ready();
    }, this.greetingDelayMs);
    timer.unref();
    connection.init();
  }
}

export async function startSmtpServer(
  config: SmtpListenerConfig,
  inbound: InboundService,
  log: SmtpLog,
): Promise<RunningSmtpServer> {
  if (config.maxBufferedBytes < config.maxMessageBytes) {
    throw new Error(
      `INBOX_SMTP_MAX_BUFFERED_BYTES (${config.maxBufferedBytes}) must be at least INBOX_SMTP_MAX_MESSAGE_BYTES (${config.maxMessageBytes}), or the largest messages could never be taken`,
    );
  }
  let closing = false;
  /**
   * DATA bytes held by all sessions, from the first chunk until the message is stored or refused.
   * Without a bound, maxConnections senders of maxMessageBytes each could hold gigabytes at once.
   */
  let buffered = 0;
  let refusedForBudget = 0;
  let budgetLoggedAt = 0;
  /** DATA transactions between the first byte and the reply, for a graceful close. */
  const inFlight = new Map<string, Promise<unknown>>();
  /** Refused commands per session (the library reuses one session object per connection). */
  const refusals = new WeakMap<SMTPServerSession, number>();

  /** A 5xx refusal, or 421 and the end of the session once it collected too many. */
  function refuse(session: SMTPServerSession, code: number, message: string): SmtpReplyError {
    const count = (refusals.get(session) ?? 0) + 1;
    refusals.set(session, count);
    if (count > MAX_REFUSALS_PER_SESSION)
      return reply(421, `Too many refused commands in this session (${MAX_REFUSALS_PER_SESSION}); closing`);
    return reply(code, message);
  }

  function onConnect(session: SMTPServerSession, callback: (err?: Error | null) => void): void {
    // The library's connection set holds every open session, this one included.
    let fromThere = 0;
    for (const connection of server.connections) if (connection.remoteAddress === session.remoteAddress) fromThere += 1;
    if (fromThere > config.maxConnectionsPerIp)
      return callback(
        reply(421, `Too many connections from your address (at most ${config.maxConnectionsPerIp}); try again later`),
      );
    callback();
  }

  function onMailFrom(
    _address: SMTPServerAddress,
    session: SMTPServerSession,
    callback: (err?: Error | null) => void,
  ): void {
    if (closing) return callback(reply(421, 'Server shutting down, try again later'));
    // 421 closes the connection; a sender reconnects for the rest (as Exim's limit does).
    if (session.transaction > config.maxMessagesPerConnection)
      return callback(
        reply(
          421,
          `Too many messages in this connection (at most ${config.maxMessagesPerConnection}); please reconnect`,
        ),
      );
    callback();
  }

  function onRcptTo(
    address: SMTPServerAddress,
    session: SMTPServerSession,
    callback: (err?: Error | null) => void,
  ): void {
    if (closing) return callback(reply(421, 'Server shutting down, try again later'));
    inbound.checkRecipient(address.address).then(
      (check) => {
        if (check === 'relay')
          return callback(
            refuse(session, 554, `Relay access denied: <${address.address}> is not a domain of this server`),
          );
        if (check === 'unknown') return callback(refuse(session, 550, `No such user here: <${address.address}>`));
        if (check === 'no-postmaster')
          return callback(
            refuse(session, 550, 'No postmaster mailbox here: this server has no inbox named postmaster'),
          );
        callback();
      },
      (err: unknown) => {
        log.error({ err }, 'smtp: recipient check failed');
        callback(reply(451, 'Local error while checking the recipient; try again later'));
      },
    );
  }

  function envelopeOf(session: SMTPServerSession): InboundEnvelope {
    const mailFrom = session.envelope.mailFrom;
    return {
      mailFrom: mailFrom ? mailFrom.address : '',
      recipients: [...new Set(session.envelope.rcptTo.map((r) => r.address.toLowerCase()))],
      remoteAddress: session.remoteAddress,
      clientHostname: session.clientHostname,
      helo: session.hostNameAppearsAs || '',
      // RFC 6531 §3.7.3: mail sent with SMTPUTF8 is received "with UTF8SMTP" (UTF8SMTPS over TLS).
      protocol: session.envelope.smtpUtf8
        ? (session.transmissionType || 'ESMTP').replace(/^ESMTP/, 'UTF8SMTP')
        : session.transmissionType || 'SMTP',
      sessionId: session.id,
    };
  }

  /**
   * The message bytes, counted against the process-wide budget until `release()`: `over-size`
   * past the message size limit (the library answers 552 then), `over-budget` when the sessions
   * together hold too much (nothing of it is kept). Rejects when the session is closed meanwhile
   * or DATA runs past its deadline.
   */
  function readMessage(
    stream: SMTPServerDataStream,
    session: SMTPServerSession,
  ): Promise<{ source: Buffer; release: () => void } | 'over-size' | 'over-budget'> {
    return new Promise((resolve, reject) => {
      let chunks: Buffer[] = [];
      let held = 0;
      let overBudget = false;
      let settled = false;
      const release = () => {
        buffered -= held;
        held = 0;
      };
      const drop = () => {
        release();
        chunks = [];
      };
      const deadline = setTimeout(() => {
        if (settled) return;
        settled = true;
        drop();
        reject(new DataTimeoutError(`DATA took longer than ${config.dataTimeoutMs} ms`));
        // The rest of the message is not waited for: the session goes, and its socket with it.
        for (const connection of server.connections) {
          if (connection.session.id !== session.id) continue;
          connection.send(
            421,
            `${config.hostname} Timeout: the message was not complete within ${duration(config.dataTimeoutMs)}; closing`,
          );
          connection.close();
        }
      }, config.dataTimeoutMs);
      deadline.unref();
      stream.on('data', (chunk: Buffer) => {
        if (settled || stream.sizeExceeded || overBudget) return;
        if (buffered + chunk.length > config.maxBufferedBytes) {
          overBudget = true;
          drop();
          return;
        }
        chunks.push(chunk);
        held += chunk.length;
        buffered += chunk.length;
      });
      stream.once('error', (err) => {
        clearTimeout(deadline);
        if (settled) return;
        settled = true;
        drop();
        reject(err);
      });
      stream.once('end', () => {
        clearTimeout(deadline);
        if (settled) return;
        settled = true;
        if (stream.sizeExceeded || overBudget) {
          drop();
          return resolve(overBudget ? 'over-budget' : 'over-size');
        }
        const source = Buffer.concat(chunks, held);
        chunks = [];
        resolve({ source, release });
      });
    });
  }

  async function handleData(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<string> {
    const read = await readMessage(stream, session);
    if (read === 'over-size') throw reply(552, `Message exceeds fixed maximum message size ${config.maxMessageBytes}`);
    if (read === 'over-budget') {
      // Many senders can be refused at once: one line a second at most, with the count.
      refusedForBudget += 1;
      const now = Date.now();
      if (now - budgetLoggedAt >= 1000) {
        log.warn(
          { refused: refusedForBudget, bufferedBytes: buffered, maxBufferedBytes: config.maxBufferedBytes },
          'smtp: DATA refused (452), the sessions hold too much; the senders retry',
        );
        budgetLoggedAt = now;
        refusedForBudget = 0;
      }
      throw reply(452, 'Insufficient system storage for this message now; try again later');
    }
    try {
      const result = await inbound.receive(envelopeOf(session), read.source);
      // One text whether stored, already held or turned into bounces: the reply must not tell a
      // sender what an inbox holds (a probe with a guessed Message-ID, say).
      return `OK: message accepted as ${result.messageId}`;
    } finally {
      read.release();
    }
  }

  function onData(
    stream: SMTPServerDataStream,
    session: SMTPServerSession,
    callback: (err?: Error | null, message?: string) => void,
  ): void {
    if (closing) {
      stream.resume();
      return callback(reply(421, 'Server shutting down, try again later'));
    }
    const work = handleData(stream, session).then(
      (message) => callback(null, message),
      (err: unknown) => {
        if (err instanceof Error && 'responseCode' in err) return callback(err);
        if (err instanceof DataTimeoutError) {
          log.warn(
            { session: session.id, dataTimeoutMs: config.dataTimeoutMs },
            'smtp: DATA timed out; session closed',
          );
          return callback(reply(421, 'Timeout; closing'));
        }
        const answer = replyFor(err);
        if (answer.responseCode === 451) log.error({ err, session: session.id }, 'smtp: message not stored');
        else
          log.warn(
            { err: err instanceof Error ? err.message : String(err), session: session.id },
            'smtp: message refused',
          );
        callback(answer);
      },
    );
    inFlight.set(session.id, work);
    void work.finally(() => inFlight.delete(session.id));
  }

  const server = new InboundSmtpServer(
    {
      name: config.hostname,
      banner: 'agent-services inbox',
      size: config.maxMessageBytes,
      rejectOversized: true,
      maxRecipients: config.maxRecipients,
      maxClients: config.maxConnections,
      // A receiving MX: no AUTH, and STARTTLS only with our own certificate (never the library's
      // built-in one, whose private key is public).
      authOptional: true,
      disabledCommands: ['AUTH', ...(config.tlsKey ? [] : ['STARTTLS'])],
      // Reverse DNS would delay every greeting (up to 1.5 s on a dead DNS) for a name that only
      // decorates the Received field.
      disableReverseLookup: true,
      logger: false,
      // Bounds close(): sessions still open a second after the grace period are cut.
      closeTimeout: CLOSE_GRACE_MS + 1_000,
      ...tlsOptions(config),
      onConnect,
      onMailFrom,
      onRcptTo,
      onData,
    },
    config.greetingDelayMs,
  );
  server.on('error', (err: Error) => log.warn({ err: err.message }, 'smtp: connection error'));

  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(config.port, config.host, () => {
      server.server.off('error', reject);
      resolve();
    });
  });
  const address = server.server.address() as AddressInfo;
  const stopTlsReload = watchTls(config, (options) => server.updateSecureContext(options), log);

  return {
    host: config.host,
    port: address.port,
    async close() {
      if (closing) return;
      closing = true;
      stopTlsReload();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Idle sessions go now; sessions in DATA get their reply first, then go too.
      for (const connection of [...server.connections]) {
        if (!inFlight.has(connection.session.id)) connection.send(421, `${config.hostname} Server shutting down`);
      }
      const grace = new Promise((resolve) => setTimeout(resolve, CLOSE_GRACE_MS).unref());
      await Promise.race([Promise.allSettled([...inFlight.values()]), grace]);
      for (const connection of [...server.connections]) connection.send(421, `${config.hostname} Server shutting down`);
      await closed;
    },
  };
}
