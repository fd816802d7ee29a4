import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerOptions, type SMTPServerSession } from 'smtp-server';
import { AppError } from '../../platform/errors/app-error.js';
import type { LoginBudget } from '../../platform/login-budget.js';
import type { KeyOwner } from '../core/scope.js';
import type { InboxLogin } from '../inboxes/inbox-login.js';
import type { SubmittedMessage } from '../outgoing/send.service.js';
import { UnparseableMessageError } from './inbound.errors.js';
import { inboundContent, parseMessage } from './parse.js';
import { type SmtpLog, tlsOptions, watchTls } from './smtp.server.js';

/**
 * SMTP submission (RFC 6409; decision 0045): mail clients send as an inbox, with its address as
 * the user name and an API key as the password. A protocol adapter as smtp.server.ts is: AUTH is
 * the shared inbox login (with `messageSend`), the message is parsed here (smtp/parse.ts) and
 * sent by the send service's `submit`, the same path as an API send. Two listeners: STARTTLS (as
 * port 587) and, with a certificate, implicit TLS (as port 465).
 */

export interface SubmissionListenerConfig {
  readonly host: string;
  readonly port: number;
  readonly tlsPort: number;
  readonly hostname: string;
  readonly tlsKey: string | undefined;
  readonly tlsCert: string | undefined;
  /** AUTH without TLS from loopback clients (tests, local use). */
  readonly allowPlaintextLoopback: boolean;
  readonly maxMessageBytes: number;
  readonly maxRecipients: number;
  readonly maxSessionMs: number;
  readonly maxConnections: number;
  /** Failed logins (login-budget.ts): shared with IMAP, and through Redis with other instances. */
  readonly logins: LoginBudget;
}

export interface SubmissionDeps {
  login(address: string, key: string): Promise<InboxLogin>;
  submit(owner: KeyOwner, inboxId: string, message: SubmittedMessage): Promise<{ messageId: string }>;
}

export interface RunningSubmissionServer {
  readonly host: string;
  readonly port: number;
  readonly tlsPort: number | undefined;
  dropKey(apiKeyId: string): void;
  close(): Promise<void>;
}

interface Account {
  readonly owner: KeyOwner;
  readonly inboxId: string;
}

const reply = (code: number, message: string) => Object.assign(new Error(message), { responseCode: code });

const isLoopback = (address: string | undefined) =>
  !!address && (address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.'));

/** The reply for a submission that failed: the send path's refusals are permanent, the rest temporary. */
function replyFor(err: unknown) {
  if (err instanceof UnparseableMessageError) return reply(554, 'Message could not be parsed; it was not sent');
  if (err instanceof AppError) {
    if (err.code === 'SENDER_NOT_ALLOWED') return reply(553, `5.7.1 ${err.message}`);
    if (err.kind === 'rate_limited') return reply(452, `4.7.0 ${err.message}`);
    if (err.kind === 'validation' || err.kind === 'forbidden' || err.kind === 'not_found')
      return reply(550, `5.7.1 ${err.message}`);
  }
  return reply(451, '4.3.0 Local error, message not sent; try again later');
}

export async function startSubmissionServer(
  config: SubmissionListenerConfig,
  deps: SubmissionDeps,
  log: SmtpLog,
): Promise<RunningSubmissionServer> {
  const budget = config.logins;
  const accounts = new WeakMap<SMTPServerSession, Account>();
  /** When each session began: a sweep ends those past `maxSessionMs`. */
  const started = new Map<string, number>();

  const options = (secure: boolean): SMTPServerOptions => ({
    name: config.hostname,
    banner: 'agent-services inbox submission',
    secure,
    size: config.maxMessageBytes,
    // smtp-server answers 530 to MAIL before AUTH, and 538 to AUTH before TLS unless allowed.
    authOptional: false,
    authMethods: ['PLAIN', 'LOGIN'],
    allowInsecureAuth: config.allowPlaintextLoopback,
    disabledCommands: config.tlsKey ? [] : ['STARTTLS'],
    maxClients: config.maxConnections,
    disableReverseLookup: true,
    logger: false,
    ...tlsOptions(config),
    onConnect(session, callback) {
      started.set(session.id, Date.now());
      callback();
    },
    onClose(session) {
      started.delete(session.id);
    },
    onAuth(auth, session, callback) {
      const ip = session.remoteAddress;
      // Plaintext AUTH only from loopback even when allowed (allowInsecureAuth is per server).
      if (!session.secure && !isLoopback(ip))
        return callback(reply(538, '5.7.11 Encryption required: issue STARTTLS first'));
      const user = auth.username ?? '';
      budget
        .blocked(user, ip)
        .then(async (blocked) => {
          if (blocked) {
            log.warn({ user, ip }, 'submission: login refused, too many failures');
            return callback(reply(454, '4.7.0 Too many failed logins; try again later'));
          }
          const login = await deps.login(user, auth.password ?? '');
          if (!login.ok) {
            await budget.failed(user, ip);
            log.warn({ user, ip, reason: login.reason }, 'submission: login failed');
            return callback(
              reply(
                535,
                login.reason === 'permission' ? '5.7.8 This API key may not send' : '5.7.8 Invalid credentials',
              ),
            );
          }
          accounts.set(session, { owner: login.owner, inboxId: login.inbox.inboxId });
          log.info({ user, ip, apiKeyId: login.owner.apiKeyId }, 'submission: logged in');
          callback(null, { user: login.inbox.inboxId });
        })
        .catch(() => callback(reply(454, '4.7.0 Temporary authentication failure')));
    },
    onMailFrom(address, session, callback) {
      const account = accounts.get(session);
      if (!account) return callback(reply(530, '5.7.0 Authentication required'));
      if (address.address.toLowerCase() !== account.inboxId)
        return callback(reply(553, `5.7.1 The envelope sender must be ${account.inboxId}`));
      callback();
    },
    onRcptTo(_address, session, callback) {
      if (session.envelope.rcptTo.length >= config.maxRecipients)
        return callback(reply(452, `4.5.3 At most ${config.maxRecipients} recipients per message`));
      callback();
    },
    onData(stream, session, callback) {
      const account = accounts.get(session);
      const chunks: Buffer[] = [];
      let bytes = 0;
      // Beyond the limit the rest is read and dropped, never held.
      stream.on('data', (c: Buffer) => {
        bytes += c.length;
        if (bytes <= config.maxMessageBytes) chunks.push(c);
      });
      stream.on('end', () => {
        if (!account) return callback(reply(530, '5.7.0 Authentication required'));
        if (bytes > config.maxMessageBytes || (stream as unknown as { sizeExceeded?: boolean }).sizeExceeded)
          return callback(reply(552, `5.3.4 Message larger than ${config.maxMessageBytes} bytes`));
        const source = Buffer.concat(chunks);
        const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
        parseMessage(source)
          .then((parsed) =>
            deps.submit(account.owner, account.inboxId, {
              mailFrom,
              recipients: session.envelope.rcptTo.map((r) => r.address),
              source,
              content: inboundContent(parsed),
            }),
          )
          .then((sent) => callback(null, `2.0.0 Sent as ${sent.messageId}`))
          .catch((err: unknown) => {
            const answer = replyFor(err);
            if (answer.responseCode === 451) log.error({ err, session: session.id }, 'submission: message not sent');
            else log.warn({ err: err instanceof Error ? err.message : String(err) }, 'submission: message refused');
            callback(answer);
          });
      });
    },
  });

  const servers = [new SMTPServer(options(false)), ...(config.tlsKey ? [new SMTPServer(options(true))] : [])];
  for (const server of servers)
    server.on('error', (err: Error) => log.warn({ err: err.message }, 'submission: connection error'));
  const connectionsOf = (server: SMTPServer) =>
    (server as unknown as { connections: Set<SessionConnection> }).connections;
  const listen = (server: SMTPServer, port: number) =>
    new Promise<number>((resolve, reject) => {
      server.server.once('error', reject);
      server.listen(port, config.host, () => {
        server.server.off('error', reject);
        resolve((server.server.address() as AddressInfo).port);
      });
    });
  const port = await listen(servers[0] as SMTPServer, config.port);
  let tlsPort: number | undefined;
  try {
    tlsPort = servers[1] ? await listen(servers[1], config.tlsPort) : undefined;
  } catch (err) {
    await new Promise<void>((resolve) => (servers[0] as SMTPServer).close(() => resolve()));
    throw err;
  }
  const stopTlsReload = watchTls(
    config,
    (tls) => {
      for (const s of servers) s.updateSecureContext(tls);
    },
    log,
    'submission',
  );
  // Sessions end at their time limit, as the hosted service's do (30 minutes by default).
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const server of servers)
        for (const connection of connectionsOf(server)) {
          const since = started.get(connection.session.id);
          if (since !== undefined && now - since > config.maxSessionMs) {
            started.delete(connection.session.id);
            connection.send(421, `${config.hostname} Session time limit reached`);
            connection.close();
          }
        }
    },
    Math.min(30_000, Math.max(100, config.maxSessionMs / 2)),
  );
  sweep.unref();

  return {
    host: config.host,
    port,
    tlsPort,
    dropKey(apiKeyId) {
      for (const server of servers)
        for (const connection of connectionsOf(server))
          if (accounts.get(connection.session)?.owner.apiKeyId === apiKeyId) {
            connection.send(421, `${config.hostname} The API key was deleted or changed`);
            connection.close();
          }
    },
    async close() {
      stopTlsReload();
      clearInterval(sweep);
      await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    },
  };
}

interface SessionConnection {
  session: SMTPServerSession;
  send(code: number, message: string): void;
  close(): void;
}
