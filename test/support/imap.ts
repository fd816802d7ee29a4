import net from 'node:net';
import { ImapFlow } from 'imapflow';
import type { InboxTestServer } from './inbox-server.js';

/** The settings of an inbox server with the imap role on free ports, plaintext login allowed on loopback. */
export const IMAP_ENV = {
  INBOX_ROLES: 'api,worker,smtp,imap',
  INBOX_IMAP_PORT: '0',
  INBOX_IMAPS_PORT: '0',
  INBOX_IMAP_ALLOW_PLAINTEXT_LOOPBACK: 'true',
};

/** The port of the IMAP listener (STARTTLS) of a test server. */
export function imapPort(server: InboxTestServer): number {
  const port = server.service.imap?.port;
  if (port === undefined) throw new Error('the imap role is not running');
  return port;
}

/** imapflow, logged in over loopback without TLS. */
export async function connect(server: InboxTestServer, user: string, pass: string): Promise<ImapFlow> {
  const client = new ImapFlow({
    host: '127.0.0.1',
    port: imapPort(server),
    secure: false,
    doSTARTTLS: false,
    auth: { user, pass },
    logger: false,
  });
  await client.connect();
  return client;
}

/** A raw IMAP conversation: send lines, read until a tagged answer. */
export class RawImap {
  private buffer = '';
  private constructor(private readonly socket: net.Socket) {
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (this.buffer += d));
  }

  /** Connects from `localAddress` (another loopback address is another client address). */
  static async open(port: number, localAddress?: string): Promise<RawImap> {
    const socket = net.connect({ port, host: '127.0.0.1', ...(localAddress ? { localAddress } : {}) });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('error', reject);
    });
    const raw = new RawImap(socket);
    await raw.until(/^\* OK.*\r\n/m);
    return raw;
  }

  async until(pattern: RegExp, timeoutMs = 3000): Promise<string> {
    const started = Date.now();
    while (!pattern.test(this.buffer)) {
      if (this.socket.destroyed && !pattern.test(this.buffer)) throw new Error(`closed; got ${this.buffer}`);
      if (Date.now() - started > timeoutMs) throw new Error(`timed out; got ${JSON.stringify(this.buffer)}`);
      await new Promise((r) => setTimeout(r, 5));
    }
    const out = this.buffer;
    this.buffer = '';
    return out;
  }

  send(data: string | Buffer): void {
    this.socket.write(data);
  }

  async command(tag: string, line: string): Promise<string> {
    this.send(`${tag} ${line}\r\n`);
    return this.until(new RegExp(`^${tag} (OK|NO|BAD).*\\r\\n`, 'm'));
  }

  get closed(): boolean {
    return this.socket.destroyed || this.socket.readableEnded;
  }

  close(): void {
    this.socket.destroy();
  }
}

/** The first line a new connection from `localAddress` is greeted with (`* OK …` or `* BYE …`). */
export function greeting(port: number, localAddress?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', ...(localAddress ? { localAddress } : {}) });
    let buffer = '';
    socket.setEncoding('latin1');
    socket.on('error', reject);
    socket.on('data', (d: string) => {
      buffer += d;
      const end = buffer.indexOf('\r\n');
      if (end < 0) return;
      socket.destroy();
      resolve(buffer.slice(0, end));
    });
  });
}
