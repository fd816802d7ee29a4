import { spawn, type ChildProcess } from 'node:child_process';
import dgram from 'node:dgram';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  createInboxTestDatabase,
  dialects,
  startInboxServer,
  type InboxTestDatabase,
} from '../support/inbox-server.js';
import { SmtpTestClient, storedMessageId, transact } from '../support/smtp-client.js';
import { organization, unique } from './fixtures.js';
import { getMessage, simpleMessage, smtpPort, storedRows } from './smtp-inbound.helpers.js';

/**
 * The promise of a 250: the inbox service runs as its own process and is killed with SIGKILL
 * (no shutdown code runs) while a message waits between its final dot and its commit, and right
 * after a 250. What the sender was told must match what a restarted service holds.
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

interface Child {
  readonly process: ChildProcess;
  readonly smtpPort: number;
  kill(): Promise<void>;
}

/**
 * `src/inbox/main.ts` on `database`, as `npm run start:inbox` runs it; resolves once it listens.
 * Node itself runs it, with tsx as a loader: the tsx command would run it in a child process of
 * its own, which a SIGKILL of the command would leave running.
 */
async function spawnInbox(database: InboxTestDatabase, env: Record<string, string>): Promise<Child> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/inbox/main.ts'], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      HOST: '127.0.0.1',
      INBOX_PORT: '0',
      INBOX_SMTP_PORT: '0',
      INBOX_ROLES: 'api,smtp',
      DATA_DIR: database.dataDir,
      INBOX_DATABASE_URL: database.url,
      INBOX_DOMAINS: 'inbox.test',
      LOG_LEVEL: 'silent',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const smtpPort = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the inbox service did not start: ${stderr}`)), 30_000);
    lines.on('line', (line) => {
      const m = /^Inbox SMTP:\s+smtp:\/\/[^:]+:(\d+)/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    void exited.then(() => reject(new Error(`the inbox service exited: ${stderr}`)));
  });
  return {
    process: child,
    smtpPort,
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** A DNS server that takes every query and answers none: SPF/DKIM/DMARC wait for it. */
async function silentDnsServer(): Promise<{ port: number; queries(): number; close(): void }> {
  const socket = dgram.createSocket('udp4');
  let queries = 0;
  socket.on('message', () => (queries += 1));
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  return { port: socket.address().port, queries: () => queries, close: () => socket.close() };
}

async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.each(dialects)('%s: inbound SMTP and crashes', (dialect) => {
  it(
    'a SIGKILL before the 250 leaves nothing half-stored and the sender without a 250; a SIGKILL right after the 250 keeps the message',
    { timeout: 120_000 },
    async () => {
      const database = createInboxTestDatabase(dialect);
      const dns = await silentDnsServer();
      const children: Child[] = [];
      try {
        const setup = await startInboxServer({ database, env: { INBOX_ROLES: 'api' } });
        const org = await organization(setup, [unique('crash')]);
        const inbox = org.inboxes[0] as string;
        await setup.close();

        // 1. Killed while the message waits for its verification, after its last byte arrived.
        const first = await spawnInbox(database, {
          INBOX_SMTP_VERIFY_AUTH: 'true',
          INBOX_SMTP_DNS_SERVERS: `127.0.0.1:${dns.port}`,
          INBOX_SMTP_AUTH_TIMEOUT_MS: '60000',
        });
        children.push(first);
        const lost = `<before-250.${unique('k')}@sender.example>`;
        const { client } = await SmtpTestClient.connect(first.smtpPort);
        await client.command('EHLO sender.example');
        await client.command('MAIL FROM:<sender@sender.example>');
        expect((await client.command(`RCPT TO:<${inbox}>`)).code).toBe(250);
        const reply = client.data(simpleMessage({ to: inbox, messageId: lost, subject: 'killed before 250' }), 60_000);
        await until(() => dns.queries() > 0, 20_000);
        const refused = expect(reply).rejects.toThrow(/closed/);
        await first.kill();
        await refused;
        client.close();

        // 2. Killed as soon as the 250 arrived, before QUIT.
        const second = await spawnInbox(database, { INBOX_SMTP_VERIFY_AUTH: 'false' });
        children.push(second);
        const kept = `<after-250.${unique('k')}@sender.example>`;
        const sender = (await SmtpTestClient.connect(second.smtpPort)).client;
        await sender.command('EHLO sender.example');
        const result = await transact(sender, {
          from: 'sender@sender.example',
          to: [inbox],
          message: simpleMessage({ to: inbox, messageId: kept, subject: 'killed after 250' }),
        });
        expect(storedMessageId(result.data)).toBe(kept);
        await second.kill();
        sender.close();

        const restarted = await startInboxServer({ database, env: { INBOX_ROLES: 'api' } });
        try {
          expect((await getMessage(restarted, org.key, inbox, kept)).body).toMatchObject({
            message_id: kept,
            subject: 'killed after 250',
            labels: ['received', 'unread'],
          });
          expect((await getMessage(restarted, org.key, inbox, lost)).status).toBe(404);
          // Exactly the kept message, its thread, labels and event: no trace of the lost one.
          expect(await storedRows(restarted, inbox)).toEqual({
            messages: 1,
            threads: 1,
            events: 1,
            labels: 2,
            attachments: 0,
          });
        } finally {
          await restarted.close();
        }
      } finally {
        for (const child of children) await child.kill();
        dns.close();
        await database.drop();
      }
    },
  );

  it(
    'a SIGKILL in the middle of a burst of parallel sessions: every message answered 250 is stored exactly once, and every other one, retried, is stored exactly once',
    { timeout: 120_000 },
    async () => {
      const database = createInboxTestDatabase(dialect);
      let child: Child | undefined;
      try {
        const setup = await startInboxServer({ database, env: { INBOX_ROLES: 'api' } });
        const org = await organization(setup, [unique('burst')]);
        const inbox = org.inboxes[0] as string;
        await setup.close();

        child = await spawnInbox(database, {
          INBOX_SMTP_VERIFY_AUTH: 'false',
          INBOX_SMTP_MAX_CONNECTIONS_PER_IP: '100',
        });
        const port = child.smtpPort;
        const SESSIONS = 24;
        const PER_SESSION = 8;
        const ids = Array.from({ length: SESSIONS }, (_, s) =>
          Array.from({ length: PER_SESSION }, (_, m) => `<burst.${s}.${m}.${unique('b')}@sender.example>`),
        );
        const acked = new Set<string>();
        const session = async (list: readonly string[]) => {
          const { client } = await SmtpTestClient.connect(port);
          try {
            await client.command('EHLO sender.example');
            for (const messageId of list) {
              const result = await transact(client, {
                from: 'sender@sender.example',
                to: [inbox],
                message: simpleMessage({ to: inbox, messageId, subject: `burst ${messageId}` }),
              });
              if (result.data?.code === 250) acked.add(storedMessageId(result.data));
            }
          } catch {
            // The kill cut this session: whatever was not answered 250 is retried below.
          } finally {
            client.close();
          }
        };
        const burst = Promise.all(ids.map(session));
        await until(() => acked.size >= SESSIONS, 30_000);
        await child.kill();
        await burst;
        const all = ids.flat();
        expect(acked.size).toBeGreaterThanOrEqual(SESSIONS);
        expect(acked.size).toBeLessThan(all.length);

        const restarted = await startInboxServer({ database });
        try {
          const counts = async () => {
            const rows = await restarted.service.database.db
              .selectFrom('messages')
              .select(['message_id'])
              .select((eb) => eb.fn.countAll().as('n'))
              .where('inbox_id', '=', inbox)
              .groupBy('message_id')
              .execute();
            return new Map(rows.map((r) => [r.message_id, Number(r.n)]));
          };
          const before = await counts();
          // What the sender was told: every 250 is there, once.
          for (const messageId of acked) expect(before.get(messageId), messageId).toBe(1);
          // The sender retries everything it was not told 250 about (some may have committed just before the kill).
          const unacked = all.filter((id) => !acked.has(id));
          for (let i = 0; i < unacked.length; i += PER_SESSION) {
            const { client } = await SmtpTestClient.connect(smtpPort(restarted));
            try {
              await client.command('EHLO sender.example');
              for (const messageId of unacked.slice(i, i + PER_SESSION)) {
                const result = await transact(client, {
                  from: 'sender@sender.example',
                  to: [inbox],
                  message: simpleMessage({ to: inbox, messageId, subject: `burst ${messageId}` }),
                });
                expect(storedMessageId(result.data)).toBe(messageId);
              }
            } finally {
              client.close();
            }
          }
          const after = await counts();
          expect(after.size).toBe(all.length);
          for (const messageId of all) expect(after.get(messageId), messageId).toBe(1);
          expect(await storedRows(restarted, inbox)).toEqual({
            messages: all.length,
            threads: all.length,
            events: all.length,
            labels: 2 * all.length,
            attachments: 0,
          });
        } finally {
          await restarted.close();
        }
      } finally {
        await child?.kill();
        await database.drop();
      }
    },
  );
});
