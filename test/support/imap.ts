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
