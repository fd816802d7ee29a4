import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './platform/config/config.js';
import { isAppError } from './platform/errors/app-error.js';
import { ConstraintViolationError } from './property/engine/errors.js';
import { createEngine } from './property/engine/operations.js';
import type { AnyDb } from './property/engine/persistence.js';
import { PAGINATION } from './property/app.js';
import { propertyConfigSpec } from './property/property.config.js';
import { propertyRegistry } from './property/registry.js';
import { migrateProperty, openPropertyDatabase } from './property/service.js';

const USAGE = `Usage: npm run cli -- <command> [options]

Commands:
  property:admin:create --email EMAIL --name NAME
      Creates an admin account of the property service; its API key is the last line printed.
  migrate
      Runs the database migrations of every service.
`;

class UsageError extends Error {}

async function propertyAdminCreate(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { email: { type: 'string' }, name: { type: 'string' } }, strict: true });
  if (!values.email || !values.name) throw new UsageError('property:admin:create needs --email and --name');
  const config = loadConfig(propertyConfigSpec);
  const database = await openPropertyDatabase(config);
  try {
    await migrateProperty(database);
    const engine = createEngine({ registry: propertyRegistry, db: database.db as AnyDb, pagination: { ...PAGINATION, maximumItemsPerPage: config.maxItemsPerPage } });
    const User = propertyRegistry.byShortName('User');
    if (!User) throw new Error('the User resource is not registered');
    // The command line acts as an administrator: the same validation and key issuing as the API.
    const operator = { id: 0, role: 'admin' };
    const user = await engine.post(User, () => ({ name: values.name, email: values.email, role: 'admin' }), operator);
    process.stdout.write(`Created admin user ${user.id} <${String(user.email)}>. Its API key is shown once; store it now:\n`);
    process.stdout.write(`${String(user.apiKey)}\n`);
  } finally {
    await database.destroy();
  }
}

async function migrate(): Promise<void> {
  const config = loadConfig(propertyConfigSpec);
  const database = await openPropertyDatabase(config);
  try {
    const applied = await migrateProperty(database);
    process.stdout.write(`property: ${applied.length ? `applied ${applied.join(', ')}` : 'up to date'}\n`);
  } finally {
    await database.destroy();
  }
}

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  try {
    switch (command) {
      case 'property:admin:create':
        await propertyAdminCreate(args);
        return 0;
      case 'migrate':
        await migrate();
        return 0;
      case undefined:
      case 'help':
      case '--help':
        process.stdout.write(USAGE);
        return command === undefined ? 2 : 0;
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`error: ${(err as Error).message}\n\n${USAGE}`);
      return 2;
    }
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      return 78;
    }
    if (err instanceof ConstraintViolationError) {
      process.stderr.write(`error: ${err.violations.map((v) => `${v.propertyPath}: ${v.message}`).join('; ')}\n`);
      return 1;
    }
    if (isAppError(err)) {
      process.stderr.write(`error: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
