import { SMTPServer } from 'smtp-server';
import { SMTPConnection } from 'smtp-server/lib/smtp-connection.js';

/**
 * The ceiling of the SMTP benchmark: a bare smtp-server that accepts every recipient, reads DATA
 * and throws it away, then answers 250. Nothing is parsed, verified or stored. It has the same
 * protocol settings as the inbox service's listener (src/inbox/smtp/smtp.server.ts): SIZE and
 * rejection of oversized messages, recipients per message, connections, messages per connection
 * (421 beyond), no AUTH or STARTTLS, no reverse DNS, and the same greeting delay, so that what is
 * measured against it is what the service does with a message, not protocol differences.
 *
 * Env, read as the service reads it: HOST (or INBOX_SMTP_HOST), INBOX_SMTP_PORT,
 * INBOX_SMTP_HOSTNAME, INBOX_SMTP_MAX_MESSAGE_BYTES, INBOX_SMTP_MAX_RECIPIENTS,
 * INBOX_SMTP_MAX_CONNECTIONS, INBOX_SMTP_MAX_MESSAGES_PER_CONNECTION,
 * INBOX_SMTP_GREETING_DELAY_MS. Prints one line once it listens.
 */

const env = process.env;
const int = (name, fallback) => (env[name] === undefined || env[name] === '' ? fallback : Number(env[name]));
const config = {
  host: env.INBOX_SMTP_HOST ?? env.HOST ?? '127.0.0.1',
  port: int('INBOX_SMTP_PORT', 2525),
  hostname: env.INBOX_SMTP_HOSTNAME ?? 'localhost',
  maxMessageBytes: int('INBOX_SMTP_MAX_MESSAGE_BYTES', 25 * 1024 * 1024),
  maxRecipients: int('INBOX_SMTP_MAX_RECIPIENTS', 100),
  maxConnections: int('INBOX_SMTP_MAX_CONNECTIONS', 500),
  maxMessagesPerConnection: int('INBOX_SMTP_MAX_MESSAGES_PER_CONNECTION', 1000),
  greetingDelayMs: int('INBOX_SMTP_GREETING_DELAY_MS', 100),
};
/** smtp-server's own fixed pause before the greeting. */
const LIBRARY_GREETING_DELAY_MS = 100;

/** The same greeting-delay override as the service's InboundSmtpServer (only used when not 100). */
class CeilingServer extends SMTPServer {
  connect(socket, socketOptions) {
    if (config.greetingDelayMs === LIBRARY_GREETING_DELAY_MS) return super.connect(socket, socketOptions);
    const connection = new SMTPConnection(this, socket, socketOptions);
    this.connections.add(connection);
    connection.on('error', (err) => this._onError(err));
    connection.on('connect', (data) => this._onClientConnect(data));
    const ready = connection.connectionReady.bind(connection);
    connection.connectionReady = () => undefined;
    const timer = setTimeout(() => {
      if (this.connections.has(connection)) ready();
    }, config.greetingDelayMs);
    timer.unref();
    connection.init();
  }
}

const reply = (code, message) => Object.assign(new Error(message), { responseCode: code });

const server = new CeilingServer({
  name: config.hostname,
  banner: 'smtp ceiling',
  size: config.maxMessageBytes,
  rejectOversized: true,
  maxRecipients: config.maxRecipients,
  maxClients: config.maxConnections,
  authOptional: true,
  disabledCommands: ['AUTH', 'STARTTLS'],
  disableReverseLookup: true,
  logger: false,
  onMailFrom(_address, session, callback) {
    if (session.transaction > config.maxMessagesPerConnection)
      return callback(reply(421, 'Too many messages in this connection; please reconnect'));
    callback();
  },
  onData(stream, _session, callback) {
    stream.on('data', () => {});
    stream.once('end', () =>
      stream.sizeExceeded
        ? callback(reply(552, 'Message exceeds fixed maximum message size'))
        : callback(null, 'OK: message discarded'),
    );
  },
});
server.on('error', () => {});

server.listen(config.port, config.host, () => {
  process.stdout.write(
    `SMTP ceiling: smtp://${config.host}:${config.port} (greeting delay ${config.greetingDelayMs} ms)\n`,
  );
});

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.once(signal, () => {
    server.close(() => process.exit(0));
    setTimeout(() => process.exit(0), 2000).unref();
  });
}
