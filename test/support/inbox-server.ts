import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AgentMailClient } from 'agentmail';
import { AgentMailClient as AgentMailClient049 } from 'agentmail-049';
import type { Clock } from '../../src/platform/clock.js';
import type { DnsResolver } from '../../src/inbox/smtp/auth-results.js';
import { loadConfig } from '../../src/platform/config/config.js';
import type { CreatedKey } from '../../src/inbox/api-keys/api-key.service.js';
import { inboxConfigSpec } from '../../src/inbox/inbox.config.js';
import { startInboxService, type RunningInboxService } from '../../src/inbox/service.js';
import { dialects, freshPostgresSchema, type TestDialect } from './dialects.js';
import { runEntry, waitFor, type EntryRun } from './process.js';

export { dialects, type TestDialect };

export interface InboxTestServer {
  /** `http://127.0.0.1:<port>`: the server root, as the SDK's baseUrl. */
  readonly url: string;
  readonly dialect: TestDialect;
  /** The running service: its database, services and job runner (e.g. `runtime.runner.drain()`). */
  readonly service: RunningInboxService;
  /** A key for a new organization (or for `organizationId`), created as the CLI would. */
  createKey(options?: { organizationId?: string; name?: string }): Promise<CreatedKey>;
  /** The current SDK (agentmail 0.5.x), pointed at this server. */
  client(key: string): AgentMailClient;
  /** The previous SDK line (agentmail 0.4.9), which must keep working. */
  client049(key: string): AgentMailClient049;
  close(): Promise<void>;
}

/** A database that outlives the servers started on it (restart tests); `drop()` removes it. */
export interface InboxTestDatabase {
  readonly dialect: TestDialect;
  /** As INBOX_DATABASE_URL. */
  readonly url: string;
  /** DATA_DIR of the servers started on it. */
  readonly dataDir: string;
  drop(): Promise<void>;
}

/** A new SQLite file, or a new PostgreSQL schema. */
export function createInboxTestDatabase(dialect: TestDialect = 'sqlite'): InboxTestDatabase {
  const dir = mkdtempSync(path.join(tmpdir(), 'inbox-test-'));
  const pgSchema = dialect === 'postgres' ? freshPostgresSchema() : undefined;
  return {
    dialect,
    url: pgSchema ? pgSchema.url : `sqlite:${path.join(dir, 'inbox.db')}`,
    dataDir: dir,
    async drop() {
      await pgSchema?.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Starts the real inbox service (api and worker roles) on 127.0.0.1 and a random port, on a
 * fresh database: a new SQLite file, or a new PostgreSQL schema dropped on close. With
 * `database`, it runs on that one instead and leaves it in place on close, so that another
 * server can be started on the same data. Webhooks may target loopback receivers
 * (INBOX_WEBHOOK_ALLOW_PRIVATE=true) unless `env` says otherwise. The SMTP listener (role `smtp`)
 * takes a random port too, and verifies no SPF/DKIM/DMARC (no DNS here) unless `env` asks for it;
 * `dnsResolver` then answers its DNS queries. `jobPollMs` sets the job runner's fallback poll.
 */
export async function startInboxServer(
  options: {
    dialect?: TestDialect;
    env?: Record<string, string>;
    clock?: Clock;
    database?: InboxTestDatabase;
    dnsResolver?: DnsResolver;
    jobPollMs?: number;
    blobSweepMs?: number;
  } = {},
): Promise<InboxTestServer> {
  const database = options.database ?? createInboxTestDatabase(options.dialect ?? 'sqlite');
  const dialect = database.dialect;
  const config = loadConfig(inboxConfigSpec, {
    HOST: '127.0.0.1',
    INBOX_PORT: '0',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    DATA_DIR: database.dataDir,
    INBOX_DATABASE_URL: database.url,
    INBOX_DATABASE_POOL_SIZE: '4',
    INBOX_DOMAINS: 'inbox.test,agents.test',
    INBOX_WEBHOOK_ALLOW_PRIVATE: 'true',
    INBOX_SMTP_PORT: '0',
    INBOX_IMAP_PORT: '0',
    INBOX_IMAPS_PORT: '0',
    INBOX_SUBMISSION_PORT: '0',
    INBOX_SUBMISSIONS_PORT: '0',
    INBOX_SMTP_VERIFY_AUTH: 'false',
    DB_VERIFY_STATEMENT_CACHE: 'true',
    ...options.env,
  });
  let service: RunningInboxService;
  try {
    service = await startInboxService(config, {
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.dnsResolver ? { dnsResolver: options.dnsResolver } : {}),
      ...(options.jobPollMs ? { jobPollMs: options.jobPollMs } : {}),
      ...(options.blobSweepMs ? { blobSweepMs: options.blobSweepMs } : {}),
    });
  } catch (err) {
    if (!options.database) await database.drop();
    throw err;
  }
  const url = (service.url ?? '').replace('localhost', '127.0.0.1');
  return {
    url,
    dialect,
    service,
    createKey: (o = {}) => service.runtime.services.apiKeys.createKey(o),
    client: (key) => new AgentMailClient({ apiKey: key, baseUrl: url, maxRetries: 0 }),
    client049: (key) => new AgentMailClient049({ apiKey: key, baseUrl: url, maxRetries: 0 }),
    async close() {
      await service.close();
      if (!options.database) await database.drop();
    },
  };
}

/** One JSON request to the inbox API with a Bearer key; the body parsed when there is one. */
export async function callInbox(
  server: InboxTestServer,
  key: string | undefined,
  method: string,
  path: string,
  body?: unknown,
) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- test bodies are inspected freely
    body: text ? (JSON.parse(text) as Record<string, any>) : undefined,
  };
}

/**
 * `src/inbox/main.ts` as a process of its own on `database` (the API role on a free loopback port,
 * info logs, `env` added), as `npm run start:inbox` runs it, for tests that read what it prints;
 * resolves once it listens, with its base URL. The caller stops it (`run.child.kill()`).
 */
export async function runInboxProcess(
  database: InboxTestDatabase,
  env: Record<string, string> = {},
): Promise<{ run: EntryRun; base: string }> {
  const run = runEntry('src/inbox/main.ts', {
    HOST: '127.0.0.1',
    INBOX_PORT: '0',
    INBOX_ROLES: 'api',
    DATA_DIR: database.dataDir,
    INBOX_DATABASE_URL: database.url,
    INBOX_DOMAINS: 'inbox.test',
    LOG_LEVEL: 'info',
    ...env,
  });
  // A service start compiling TypeScript as it loads: room on a busy machine.
  const m = await waitFor(run, /Inbox service: (http:\/\/\S+)\/v0/, 90_000);
  return { run, base: (m[1] as string).replace('localhost', '127.0.0.1') };
}
