import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AgentMailClient } from 'agentmail';
import type { Clock } from '../../src/platform/clock.js';
import { loadConfig } from '../../src/platform/config/config.js';
import type { CreatedKey } from '../../src/inbox/api-keys/api-key.service.js';
import { inboxConfigSpec } from '../../src/inbox/inbox.config.js';
import { startInboxService, type RunningInboxService } from '../../src/inbox/service.js';
import { dialects, freshPostgresSchema, type TestDialect } from './dialects.js';

export { dialects, type TestDialect };

export interface InboxTestServer {
  /** `http://127.0.0.1:<port>`: the server root, as the SDK's baseUrl. */
  readonly url: string;
  readonly dialect: TestDialect;
  /** The running service: its database, services and job runner (e.g. `runtime.runner.drain()`). */
  readonly service: RunningInboxService;
  /** A key for a new organization (or for `organizationId`), created as the CLI would. */
  createKey(options?: { organizationId?: string; name?: string }): Promise<CreatedKey>;
  /** The official SDK pointed at this server. */
  client(key: string): AgentMailClient;
  close(): Promise<void>;
}

/**
 * Starts the real inbox service (api and worker roles) on 127.0.0.1 and a random port, on a
 * fresh database: a new SQLite file, or a new PostgreSQL schema dropped on close. Webhooks may
 * target loopback receivers (INBOX_WEBHOOK_ALLOW_PRIVATE=true) unless `env` says otherwise.
 */
export async function startInboxServer(options: { dialect?: TestDialect; env?: Record<string, string>; clock?: Clock } = {}): Promise<InboxTestServer> {
  const dialect = options.dialect ?? 'sqlite';
  const dir = mkdtempSync(path.join(tmpdir(), 'inbox-test-'));
  const pgSchema = dialect === 'postgres' ? freshPostgresSchema() : undefined;
  const config = loadConfig(inboxConfigSpec, {
    HOST: '127.0.0.1',
    INBOX_PORT: '0',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    DATA_DIR: dir,
    INBOX_DATABASE_URL: pgSchema ? pgSchema.url : `sqlite:${path.join(dir, 'inbox.db')}`,
    INBOX_DATABASE_POOL_SIZE: '4',
    INBOX_DOMAINS: 'inbox.test,agents.test',
    INBOX_WEBHOOK_ALLOW_PRIVATE: 'true',
    ...options.env,
  });
  const service = await startInboxService(config, options.clock ? { clock: options.clock } : {});
  const url = (service.url ?? '').replace('localhost', '127.0.0.1');
  return {
    url,
    dialect,
    service,
    createKey: (o = {}) => service.runtime.services.apiKeys.createKey(o),
    client: (key) => new AgentMailClient({ apiKey: key, baseUrl: url, maxRetries: 0 }),
    async close() {
      await service.close();
      await pgSchema?.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
