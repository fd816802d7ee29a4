import net from 'node:net';
import tls from 'node:tls';

/**
 * A raw SMTP client over a real socket, as a foreign MTA talks to us: one command, one reply.
 * Every reply is kept, so that a test can check the exact codes of a dialogue.
 */

export interface SmtpReply {
  readonly code: number;
  readonly lines: readonly string[];
  /** The lines joined with '\n', without the codes. */
  readonly text: string;
}

export class SmtpTestClient {
  private buffer = '';
  private readonly replies: SmtpReply[] = [];
  private readonly waiting: { resolve: (r: SmtpReply) => void; reject: (e: Error) => void }[] = [];
  private ended = false;
  /** Resolves when the server closed the connection. */
  readonly closed: Promise<void>;
  private markClosed!: () => void;

  private constructor(private socket: net.Socket | tls.TLSSocket) {
    this.closed = new Promise((resolve) => (this.markClosed = resolve));
    this.attach(socket);
  }

  static async connect(port: number, host = '127.0.0.1'): Promise<{ client: SmtpTestClient; greeting: SmtpReply }> {
    const socket = net.connect(port, host);
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const client = new SmtpTestClient(socket);
    return { client, greeting: await client.read() };
  }

  private attach(socket: net.Socket | tls.TLSSocket): void {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => this.onData(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.ended = true;
      for (const w of this.waiting.splice(0)) w.reject(new Error('connection closed by the server'));
      this.markClosed();
    });
  }

  private onData(chunk: string): void {
    this.buffer += chunk;
    for (;;) {
      const m = /^((?:\d{3}-[^\r\n]*\r?\n)*)(\d{3})(?: [^\r\n]*)?\r?\n/.exec(this.buffer);
      if (!m) return;
      this.buffer = this.buffer.slice(m[0].length);
      const lines = m[0].split(/\r?\n/).filter((l) => l !== '');
      const reply = { code: Number(m[2]), lines, text: lines.map((l) => l.slice(4)).join('\n') };
      const waiter = this.waiting.shift();
      if (waiter) waiter.resolve(reply);
      else this.replies.push(reply);
    }
  }

  /** The next reply (fails when the server closes the connection first). */
  read(timeoutMs = 10_000): Promise<SmtpReply> {
    const queued = this.replies.shift();
    if (queued) return Promise.resolve(queued);
    if (this.ended) return Promise.reject(new Error('connection closed by the server'));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no SMTP reply within ${timeoutMs} ms`)), timeoutMs);
      this.waiting.push({
        resolve: (r) => {
          clearTimeout(timer);
          resolve(r);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
    });
  }

  write(data: string | Buffer): void {
    this.socket.write(data);
  }

  /** Sends one command line and reads its reply. */
  async command(line: string | Buffer, timeoutMs?: number): Promise<SmtpReply> {
    this.write(typeof line === 'string' ? `${line}\r\n` : Buffer.concat([line, Buffer.from('\r\n')]));
    return this.read(timeoutMs);
  }

  /** DATA, the dot-stuffed message with CRLF line ends, and the final dot; returns the reply to the dot. */
  async data(message: Buffer | string, timeoutMs?: number): Promise<SmtpReply> {
    const start = await this.command('DATA');
    if (start.code !== 354) return start;
    this.write(dotStuff(message));
    this.write('.\r\n');
    return this.read(timeoutMs);
  }

  /** STARTTLS on this connection (any certificate is accepted; the test checks it separately). */
  async startTls(): Promise<{ reply: SmtpReply; socket: tls.TLSSocket | undefined }> {
    const reply = await this.command('STARTTLS');
    if (reply.code !== 220) return { reply, socket: undefined };
    this.socket.removeAllListeners('data');
    this.socket.removeAllListeners('close');
    const secure = tls.connect({ socket: this.socket as net.Socket, rejectUnauthorized: false });
    await new Promise<void>((resolve, reject) => {
      secure.once('secureConnect', resolve);
      secure.once('error', reject);
    });
    this.socket = secure;
    this.attach(secure);
    return { reply, socket: secure };
  }

  close(): void {
    this.socket.destroy();
  }
}

/** CRLF line ends and a dot doubled at the start of a line (RFC 5321 §4.5.2); ends with CRLF. */
export function dotStuff(message: Buffer | string): Buffer {
  const bytes = Buffer.isBuffer(message) ? message : Buffer.from(message, 'utf8');
  // latin1 maps bytes 1:1, so 8-bit content passes through untouched.
  let text = bytes.toString('latin1').replace(/\r?\n/g, '\r\n');
  if (!text.endsWith('\r\n')) text += '\r\n';
  return Buffer.from(text.replace(/^\./gm, '..'), 'latin1');
}

export interface Transaction {
  readonly from: string;
  readonly to: readonly string[];
  readonly message: Buffer | string;
  /** MAIL FROM parameters, e.g. `BODY=8BITMIME SMTPUTF8`. */
  readonly mailParams?: string;
}

export interface TransactionResult {
  readonly mail: SmtpReply;
  readonly rcpt: readonly SmtpReply[];
  /** The reply to the final dot (or to DATA when that failed); undefined when no recipient was accepted. */
  readonly data: SmtpReply | undefined;
}

/** One mail transaction on an open session (after EHLO). */
export async function transact(client: SmtpTestClient, t: Transaction): Promise<TransactionResult> {
  const mail = await client.command(`MAIL FROM:<${t.from}>${t.mailParams ? ` ${t.mailParams}` : ''}`);
  if (mail.code !== 250) return { mail, rcpt: [], data: undefined };
  const rcpt: SmtpReply[] = [];
  for (const to of t.to) rcpt.push(await client.command(`RCPT TO:<${to}>`));
  if (!rcpt.some((r) => r.code === 250)) {
    await client.command('RSET');
    return { mail, rcpt, data: undefined };
  }
  return { mail, rcpt, data: await client.data(t.message) };
}

/** Connects, says EHLO, runs one transaction and QUITs: a foreign server delivering one message. */
export async function deliver(
  port: number,
  t: Transaction,
  host?: string,
): Promise<TransactionResult & { ehlo: SmtpReply }> {
  const { client } = await SmtpTestClient.connect(port, host);
  try {
    const ehlo = await client.command('EHLO sender.example');
    const result = await transact(client, t);
    await client.command('QUIT').catch(() => undefined);
    return { ehlo, ...result };
  } finally {
    client.close();
  }
}

/** The Message-ID the 250 reply names (`OK: message accepted as <id>`). */
export function storedMessageId(reply: SmtpReply | undefined): string {
  const m = /<[^<>\s]+>/.exec(reply?.text ?? '');
  if (!m || reply?.code !== 250) throw new Error(`not stored: ${reply ? `${reply.code} ${reply.text}` : 'no reply'}`);
  return m[0];
}
