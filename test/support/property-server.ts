import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/platform/config/config.js';
import { paginationOptions, propertyHookSettings } from '../../src/property/app.js';
import { createEngine } from '../../src/property/engine/operations.js';
import type { AnyDb } from '../../src/property/engine/persistence.js';
import { propertyConfigSpec } from '../../src/property/property.config.js';
import { propertyRegistry } from '../../src/property/registry.js';
import { startPropertyService } from '../../src/property/service.js';
import { dialects, freshPostgresSchema, type TestDialect } from './dialects.js';

export { dialects, type TestDialect };

export type Role = 'user' | 'admin' | 'moderator' | 'technical';

export interface Account {
  readonly id: number;
  readonly key: string;
  readonly iri: string;
  readonly email: string;
}

export interface PropertyTestServer {
  /** The database it runs on (a second instance on the same database: `env: { PROPERTY_DATABASE_URL }`). */
  readonly databaseUrl: string;
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** The management listener, when `env` sets PROPERTY_MANAGEMENT_PORT (`0` picks a free port). */
  readonly managementUrl: string | undefined;
  readonly dialect: TestDialect;
  /** Creates an account directly (as an operator would with the CLI) and returns its API key. */
  createAccount(role: Role, options?: { email?: string; name?: string }): Promise<Account>;
  close(): Promise<void>;
}

let counter = 0;

/**
 * Starts the real property service on 127.0.0.1 and a random port, on a fresh database: a new
 * SQLite file, or a new PostgreSQL schema that is dropped on close.
 */
export async function startPropertyServer(
  options: { dialect?: TestDialect; env?: Record<string, string> } = {},
): Promise<PropertyTestServer> {
  const dialect = options.dialect ?? 'sqlite';
  const dir = mkdtempSync(path.join(tmpdir(), 'property-test-'));
  const pgSchema = dialect === 'postgres' ? freshPostgresSchema() : undefined;
  const config = loadConfig(propertyConfigSpec, {
    HOST: '127.0.0.1',
    PROPERTY_PORT: '0',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    DATA_DIR: dir,
    PROPERTY_DATABASE_URL: pgSchema ? pgSchema.url : `sqlite:${path.join(dir, 'property.db')}`,
    PROPERTY_DATABASE_POOL_SIZE: '4',
    DB_VERIFY_STATEMENT_CACHE: 'true',
    // The suites send many requests and registrations from one address; rate-limit.test.ts sets real budgets.
    PROPERTY_RATE_LIMIT_PER_MINUTE: '10000000',
    PROPERTY_RATE_LIMIT_PER_ADDRESS_PER_MINUTE: '10000000',
    PROPERTY_REGISTRATION_LIMIT_PER_HOUR: '10000000',
    ...options.env,
  });
  const service = await startPropertyService(config);
  const engine = createEngine({
    registry: propertyRegistry,
    db: service.database.db as AnyDb,
    pagination: paginationOptions(config),
    settings: propertyHookSettings(config),
  });
  const User = propertyRegistry.byShortName('User');
  if (!User) throw new Error('User resource missing');
  const url = service.url.replace('localhost', '127.0.0.1');
  return {
    url,
    databaseUrl: config.databaseUrl as string,
    managementUrl: service.managementUrl?.replace('localhost', '127.0.0.1'),
    dialect,
    async createAccount(role, accountOptions = {}) {
      const n = ++counter;
      const email = accountOptions.email ?? `${role}-${n}-${process.pid}@example.org`;
      const item = await engine.post(User, () => ({ name: accountOptions.name ?? `${role} ${n}`, email, role }), {
        id: 0,
        role: 'admin',
      });
      return { id: item.id, key: String(item.apiKey), iri: `/api/users/${item.id}`, email };
    },
    async close() {
      await service.close();
      await pgSchema?.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
