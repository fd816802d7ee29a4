// First: the collector's settings before any other module runs (decision 0056; the bundle's start,
// scripts/build-once.mjs, imports them before the bundle).
import './platform/gc-tuning.js';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './platform/config/config.js';
import { isAppError } from './platform/errors/app-error.js';
import type { Kysely } from 'kysely';
import type { AnyDb } from './property/engine/persistence.js';
import type { SecurityDatabase } from './property/security/account.table.js';

// Each command imports what it needs when it runs (a key for the inbox loads nothing of the
// property service, and neither loads the HTTP, SMTP or worker code): start-up is most of a
// command's time.

/** What `--help` of a command prints: its usage line, what it does, and its options. */
interface Command {
  readonly usage: string;
  /** One line, for the list of commands. */
  readonly summary: string;
  readonly help: string;
  /** Its options, as `parseArgs` reads them (`--help`/`-h` is every command's). */
  readonly options: Readonly<Record<string, { type: 'string' | 'boolean' }>>;
  run(values: Readonly<Record<string, string | boolean | undefined>>): Promise<void>;
}

const COMMANDS: Readonly<Record<string, Command>> = {
  'inbox:keys:create': {
    usage: 'inbox:keys:create [--name NAME] [--org ORG_ID]',
    summary: "Creates an inbox API key (a new organization, or ORG_ID's); the key is the last line.",
    help: `Creates an inbox API key: for a new organization with a default pod, or for ORG_ID.
The key is the last line printed; it is shown once.
Uses the inbox database: INBOX_DATABASE_URL, else inbox.db in DATA_DIR (the server's must match).

Options:
  --name NAME     a name for the key (shown in GET /v0/api-keys)
  --org ORG_ID    add the key to this existing organization instead of a new one`,
    options: { name: { type: 'string' }, org: { type: 'string' } },
    run: (values) => inboxKeysCreate(values as { name?: string; org?: string }),
  },
  'property:admin:create': {
    usage: 'property:admin:create --email EMAIL --name NAME',
    summary: 'Creates a property admin account; its API key is the last line.',
    help: `Creates an admin account of the property service; its API key is the last line printed,
shown once. Fails (status 1) when the e-mail address is taken.
Uses the property database: PROPERTY_DATABASE_URL, else property.db in DATA_DIR.

Options:
  --email EMAIL   the account's e-mail address (unique)
  --name NAME     the account's name`,
    options: { email: { type: 'string' }, name: { type: 'string' } },
    run: (values) => propertyAdminCreate(values as { email?: string; name?: string }),
  },
  'property:users:rotate-key': {
    usage: 'property:users:rotate-key --email EMAIL',
    summary: "Replaces a property account's lost API key; the new key is the last line.",
    help: `Gives the property account with this e-mail address a new API key, for a key that was lost
or leaked: the old key stops working at once; the new one is the last line printed, shown once.
Fails (status 1) when no account has that address.
Uses the property database: PROPERTY_DATABASE_URL, else property.db in DATA_DIR.

Options:
  --email EMAIL   the account's e-mail address (case-insensitive)`,
    options: { email: { type: 'string' } },
    run: (values) => propertyUsersRotateKey(values as { email?: string }),
  },
  mcp: {
    usage: 'mcp [--url URL] [--tools NAMES]',
    summary: 'A stdio MCP server that forwards to a running inbox service (for stdio-only MCP clients).',
    help: `Speaks MCP on stdin/stdout for clients that start their servers as processes, and forwards
every tools/list and tools/call to the inbox service's /mcp endpoint (Streamable HTTP).
The API key comes from the environment, AGENTMAIL_API_KEY, and is never printed.
Stdout carries the protocol only; errors go to stderr.

Options:
  --url URL       the service's MCP endpoint (default: AGENTMAIL_MCP_URL, else http://127.0.0.1:3000/mcp)
  --tools NAMES   offer only these tools, comma-separated (e.g. list_inboxes,send_message)`,
    options: { url: { type: 'string' }, tools: { type: 'string' } },
    run: (values) => mcpBridge(values as { url?: string; tools?: string }),
  },
  migrate: {
    usage: 'migrate',
    summary: 'Runs the database migrations of every service.',
    help: `Runs the database migrations of every service (the servers also run them at start).
Uses INBOX_DATABASE_URL and PROPERTY_DATABASE_URL, else inbox.db and property.db in DATA_DIR.

Options:`,
    options: {},
    run: () => migrate(),
  },
};

const USAGE = `Usage: npm run cli -- <command> [options]
       npm run cli -- <command> --help

Commands:
${Object.values(COMMANDS)
  .map((c) => `  ${c.usage}\n      ${c.summary}`)
  .join('\n')}
`;

const commandHelp = (name: string, command: Command): string =>
  `Usage: npm run cli -- ${command.usage}\n\n${command.help}\n  --help, -h      print this help and do nothing else\n`;

class UsageError extends Error {}
/** A command that failed on its input (exit status 1). */
class CommandError extends Error {}

async function propertyAdminCreate(values: { email?: string; name?: string }): Promise<void> {
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

async function inboxKeysCreate(values: { name?: string; org?: string }): Promise<void> {
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

async function propertyUsersRotateKey(values: { email?: string }): Promise<void> {
  if (!values.email) throw new UsageError('property:users:rotate-key needs --email');
  const [{ propertyConfigSpec }, { migrateProperty, openPropertyDatabase }, { replaceApiKey }, { generateApiKey }] =
    await Promise.all([
      import('./property/property.config.js'),
      import('./property/open-database.js'),
      import('./property/security/api-key.repository.js'),
      import('./property/resources/user.processor.js'),
    ]);
  const database = await openPropertyDatabase(loadConfig(propertyConfigSpec));
  try {
    await migrateProperty(database);
    const issued = generateApiKey();
    const account = await replaceApiKey(database.db as Kysely<SecurityDatabase>, values.email, issued);
    if (!account) throw new CommandError(`no property account has the e-mail address ${values.email}`);
    process.stdout.write(
      `Replaced the API key of user ${account.id} <${account.email}>; the old key no longer works. The new key is shown once; store it now:\n`,
    );
    process.stdout.write(`${issued.key}\n`);
  } finally {
    await database.destroy();
  }
}

async function mcpBridge(values: { url?: string; tools?: string }): Promise<void> {
  const { DEFAULT_MCP_URL, parseToolList, runStdioBridge } = await import('./inbox/mcp/stdio-bridge.js');
  const apiKey = process.env.AGENTMAIL_API_KEY?.trim();
  if (!apiKey) throw new CommandError('AGENTMAIL_API_KEY is not set: the bridge needs the key to send to the server.');
  const url = values.url ?? process.env.AGENTMAIL_MCP_URL ?? DEFAULT_MCP_URL;
  if (!/^https?:\/\//.test(url)) throw new UsageError(`--url must be an http(s) URL, not "${url}"`);
  let tools: string[] | undefined;
  try {
    tools = values.tools === undefined ? undefined : parseToolList(values.tools);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  await runStdioBridge({ url, apiKey, ...(tools ? { tools } : {}) });
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
  const [name, ...args] = argv;
  try {
    if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
      // `help <command>` is that command's help.
      const asked = name === 'help' && args[0] !== undefined ? COMMANDS[args[0]] : undefined;
      if (name === 'help' && args[0] !== undefined && !asked) throw new UsageError(`unknown command "${args[0]}"`);
      process.stdout.write(asked ? commandHelp(args[0] as string, asked) : USAGE);
      return name === undefined ? 2 : 0;
    }
    const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
    if (!command) throw new UsageError(`unknown command "${name}"`);
    const { values, positionals } = parseArgs({
      args,
      options: { ...command.options, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: true,
    });
    // Asked for help, a command prints it and does nothing else (opens no database).
    if (values.help) {
      process.stdout.write(commandHelp(name, command));
      return 0;
    }
    if (positionals.length) throw new UsageError(`${name} takes no argument "${positionals[0]}"`);
    await command.run(values);
    return 0;
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      const command = name !== undefined && Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
      process.stderr.write(
        `error: ${(err as Error).message}\n\n${command ? commandHelp(name as string, command) : USAGE}`,
      );
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
