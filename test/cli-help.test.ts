import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects } from './support/dialects.js';
import { runCli } from './support/process.js';

/**
 * `npm run cli -- <command> --help` (and `-h`, and `help <command>`) for every command prints
 * that command's help, exits 0 and changes nothing: no database file is created in DATA_DIR, no
 * PostgreSQL schema, no migration runs (issue 27: `migrate --help` used to migrate).
 */

describe.each(dialects)('%s: cli --help', (dialect) => {
  let dataDir: string;
  let env: Record<string, string>;
  let schema: string | undefined;
  let commands: string[] = [];

  const schemaExists = async (): Promise<boolean> => {
    const client = new pg.Client({ connectionString: process.env.TEST_POSTGRES_URL });
    await client.connect();
    try {
      const { rows } = await client.query('select 1 from information_schema.schemata where schema_name = $1', [schema]);
      return rows.length > 0;
    } finally {
      await client.end();
    }
  };

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'cli-help-'));
    env = { DATA_DIR: dataDir };
    if (dialect === 'postgres') {
      schema = `cli_help_${process.pid}_${Date.now()}`;
      const url = new URL(process.env.TEST_POSTGRES_URL ?? '');
      url.searchParams.set('schema', schema);
      env = { ...env, INBOX_DATABASE_URL: url.toString(), PROPERTY_DATABASE_URL: url.toString() };
    }
    const list = await runCli(['--help'], env);
    expect(list.code).toBe(0);
    // The command list: lines of two spaces and a name.
    commands = [...list.stdout.matchAll(/^ {2}([a-z][\w:-]*)/gm)].map((m) => m[1] as string);
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('lists every command, the key rotation included', () => {
    expect(commands).toEqual(
      expect.arrayContaining(['inbox:keys:create', 'property:admin:create', 'property:users:rotate-key', 'migrate']),
    );
  });

  it('prints each command its help with --help, -h and help <command>, exits 0 and changes nothing', async () => {
    for (const command of commands) {
      for (const args of [
        [command, '--help'],
        [command, '-h'],
        ['help', command],
        [command, '--name', 'x', '--help'],
      ]) {
        if (args.includes('--name') && command !== 'inbox:keys:create') continue;
        const res = await runCli(args, env);
        expect([args, res.code, res.stderr]).toEqual([args, 0, '']);
        expect(res.stdout).toContain(`Usage: npm run cli -- ${command}`);
        expect(res.stdout).toContain('--help, -h');
        expect(readdirSync(dataDir), `${args.join(' ')} created files`).toEqual([]);
        if (schema) expect(await schemaExists(), `${args.join(' ')} created the schema`).toBe(false);
      }
    }
  });

  it('answers -h and --help alone with the list of commands; an unknown command with status 2', async () => {
    for (const flag of ['-h', '--help', 'help']) {
      const res = await runCli([flag], env);
      expect([flag, res.code]).toEqual([flag, 0]);
      expect(res.stdout).toContain('Commands:');
    }
    const unknown = await runCli(['nope', '--help'], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command "nope"');
    expect(readdirSync(dataDir)).toEqual([]);
  });
});
