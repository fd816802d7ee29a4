import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './platform/config/config.js';
import { isAppError } from './platform/errors/app-error.js';
import type { AnyDb } from './property/engine/persistence.js';

// Each command imports what it needs when it runs (a key for the inbox loads nothing of the
// property service, and neither loads the HTTP, SMTP or worker code): start-up is most of a
// command's time.

const USAGE = `Usage: npm run cli -- <command> [options]

Commands:
  inbox:keys:create [--name NAME] [--org ORG_ID]
      Creates an inbox API key: for a new organization with a default pod, or for ORG_ID.
      The key is the last line printed.
  property:admin:create --email EMAIL --name NAME
      Creates an admin account of the property service; its API key is the last line printed.
  migrate
      Runs the database migrations of every service.
`;

class UsageError extends Error {}
/** A command that failed on its input (exit status 1). */
class CommandError extends Error {}

async function propertyAdminCreate(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { email: { type: 'string' }, name: { type: 'string' } },
    strict: true,
  });
  if (!values.email || !values.name) throw new UsageError('property:admin:create needs --email and --name');
  const [
    { propertyConfigSpec },
    { migrateProperty, openPropertyDatabase },
    { ConstraintViolationError },
    { createEngine },
    { PAGINATION },
    { propertyRegistry },
  ] = await Promise.all([
    import('./property/property.config.js'),
    import('./property/open-database.js'),
    import('./property/engine/errors.js'),
    import('./property/engine/operations.js'),
    import('./property/app.js'),
    import('./property/registry.js'),
  ]);
  const config = loadConfig(propertyConfigSpec);
  const database = await openPropertyDatabase(config);
  try {
    await migrateProperty(database);
    const engine = createEngine({
      registry: propertyRegistry,
      db: database.db as AnyDb,
      pagination: { ...PAGINATION, maximumItemsPerPage: config.maxItemsPerPage },
    });
    const User = propertyRegistry.byShortName('User');
    if (!User) throw new Error('the User resource is not registered');
    // The command line acts as an administrator: the same validation and key issuing as the API.
    const operator = { id: 0, role: 'admin' };
    const user = await engine
      .post(User, () => ({ name: values.name, email: values.email, role: 'admin' }), operator)
      .catch((err: unknown) => {
        if (err instanceof ConstraintViolationError)
          throw new CommandError(err.violations.map((v) => `${v.propertyPath}: ${v.message}`).join('; '));
        throw err;
      });
    process.stdout.write(
      `Created admin user ${user.id} <${String(user.email)}>. Its API key is shown once; store it now:\n`,
    );
    process.stdout.write(`${String(user.apiKey)}\n`);
  } finally {
    await database.destroy();
  }
}

async function inboxKeysCreate(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { name: { type: 'string' }, org: { type: 'string' } }, strict: true });
  const [
    { inboxConfigSpec },
    { migrateInbox, openInboxDatabase },
    { createApiKeyService },
    { systemClock },
    { systemIds },
  ] = await Promise.all([
    import('./inbox/inbox.config.js'),
    import('./inbox/open-database.js'),
    import('./inbox/api-keys/api-key.service.js'),
    import('./platform/clock.js'),
    import('./platform/ids.js'),
  ]);
  const config = loadConfig(inboxConfigSpec);
  const database = await openInboxDatabase(config);
  try {
    await migrateInbox(database);
    const apiKeys = createApiKeyService({
      db: database.db,
      commits: database.commits,
      clock: systemClock,
      ids: systemIds,
    });
    const created = await apiKeys.createKey({
      ...(values.name ? { name: values.name } : {}),
      ...(values.org ? { organizationId: values.org } : {}),
    });
    process.stdout.write(
      `Created API key ${created.apiKeyId} for organization ${created.organizationId} (default pod ${created.podId}). It is shown once; store it now:\n`,
    );
    process.stdout.write(`${created.key}\n`);
  } finally {
    await database.destroy();
  }
}

async function migrate(): Promise<void> {
  const [
    { inboxConfigSpec },
    { migrateInbox, openInboxDatabase },
    { propertyConfigSpec },
    { migrateProperty, openPropertyDatabase },
  ] = await Promise.all([
    import('./inbox/inbox.config.js'),
    import('./inbox/open-database.js'),
    import('./property/property.config.js'),
    import('./property/open-database.js'),
  ]);
  const inboxDb = await openInboxDatabase(loadConfig(inboxConfigSpec));
  try {
    const applied = await migrateInbox(inboxDb);
    process.stdout.write(`inbox: ${applied.length ? `applied ${applied.join(', ')}` : 'up to date'}\n`);
  } finally {
    await inboxDb.destroy();
  }
  const database = await openPropertyDatabase(loadConfig(propertyConfigSpec));
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
      case 'inbox:keys:create':
        await inboxKeysCreate(args);
        return 0;
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
    if (err instanceof CommandError || isAppError(err)) {
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
