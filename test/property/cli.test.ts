import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startPropertyServer } from '../support/property-server.js';
import { api } from '../support/http.js';
import { runCli } from '../support/process.js';
import { members, uniqueEmail, type Item } from './fixtures.js';

type Server = Awaited<ReturnType<typeof startPropertyServer>>;

const KEY = /^prop_[A-Za-z0-9_-]{43,}$/;

const lastLine = (text: string): string => text.trimEnd().split('\n').at(-1)?.trim() ?? '';

describe.each(dialects)('%s: command line', (dialect) => {
  let dataDir: string;
  let databaseUrl: string;
  let schema: string | undefined;
  let env: Record<string, string>;
  let server: Server | undefined;
  const email = uniqueEmail('cli-admin');
  let adminKey = '';

  beforeAll(() => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'property-cli-'));
    if (dialect === 'sqlite') {
      databaseUrl = `sqlite:${path.join(dataDir, 'property.db')}`;
    } else {
      schema = `cli_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
      const u = new URL(process.env.TEST_POSTGRES_URL ?? '');
      u.searchParams.set('schema', schema);
      databaseUrl = u.toString();
    }
    // The inbox database (also migrated by `migrate`) goes to the temporary DATA_DIR.
    env = {
      DATA_DIR: dataDir,
      PROPERTY_DATABASE_URL: databaseUrl,
      INBOX_DATABASE_URL: `sqlite:${path.join(dataDir, 'inbox.db')}`,
    };
  });

  afterAll(async () => {
    await server?.close();
    if (schema) {
      const client = new pg.Client({ connectionString: process.env.TEST_POSTGRES_URL });
      await client.connect();
      try {
        await client.query(`drop schema if exists "${schema}" cascade`);
      } finally {
        await client.end();
      }
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('migrate exits 0 on a fresh database, and again when there is nothing to do', async () => {
    const first = await runCli(['migrate'], env);
    expect(first.code, first.stderr + first.stdout).toBe(0);
    const second = await runCli(['migrate'], env);
    expect(second.code, second.stderr + second.stdout).toBe(0);
  });

  it('property:admin:create prints the new API key as the last line of stdout', async () => {
    const res = await runCli(['property:admin:create', '--email', email, '--name', 'CLI Admin'], env);
    expect(res.code, res.stderr + res.stdout).toBe(0);
    adminKey = lastLine(res.stdout);
    expect(adminKey).toMatch(KEY);
  });

  it('a second create with the same email fails with a clear message and prints no key', async () => {
    const res = await runCli(['property:admin:create', '--email', email, '--name', 'CLI Admin Again'], env);
    expect(res.code).not.toBe(0);
    const output = `${res.stderr}\n${res.stdout}`;
    expect(output).toMatch(/email/i);
    expect(output).toMatch(/already|exists|taken|in use/i);
    expect(lastLine(res.stdout)).not.toMatch(KEY);
  });

  it('missing --email fails with usage text', async () => {
    const res = await runCli(['property:admin:create', '--name', 'No Mail'], env);
    expect(res.code).not.toBe(0);
    const output = `${res.stderr}\n${res.stdout}`;
    expect(output).toMatch(/usage/i);
    expect(output).toContain('--email');
    expect(lastLine(res.stdout)).not.toMatch(KEY);
  });

  it('an unknown command fails with usage text', async () => {
    const res = await runCli(['property:nope'], env);
    expect(res.code).not.toBe(0);
    expect(`${res.stderr}\n${res.stdout}`).toMatch(/usage/i);
  });

  it('the printed key authenticates as an admin against a server on the same database', async () => {
    expect(adminKey).toMatch(KEY);
    server = await startPropertyServer({ dialect, env: { PROPERTY_DATABASE_URL: databaseUrl, DATA_DIR: dataDir } });
    const url = server.url;

    const users = await api(url, '/api/users', { key: adminKey });
    expect(users.status).toBe(200);
    const me = members(users).find((m) => m.email === email);
    expect(me).toMatchObject({ '@type': 'User', name: 'CLI Admin', email, role: 'admin' });
    expect(users.text).not.toContain(adminKey);

    // Only an admin may create another admin, and only admin or technical write reference data.
    const created = await api(url, '/api/users', {
      method: 'POST',
      key: adminKey,
      body: { name: 'Second Admin', email: uniqueEmail('second'), role: 'admin' },
    });
    expect(created.status).toBe(201);
    expect((created.body as Item).role).toBe('admin');
    expect(
      (await api(url, '/api/heizungstyps', { method: 'POST', key: adminKey, body: { name: 'CLI-Heizung' } })).status,
    ).toBe(201);

    // The seed data is there: the CLI ran the same migrations as the server.
    expect((await api(url, '/api/bundeslands')).body).toMatchObject({ 'hydra:totalItems': 16 });
  });

  it('an admin created while the server runs can use its key at once', async () => {
    expect(server).toBeDefined();
    const res = await runCli(['property:admin:create', '--email', uniqueEmail('live'), '--name', 'Live Admin'], env);
    expect(res.code, res.stderr + res.stdout).toBe(0);
    const key = lastLine(res.stdout);
    expect(key).toMatch(KEY);
    const check = await api(server?.url ?? '', '/api/users', { key });
    expect(check.status).toBe(200);
  });

  it('property:users:rotate-key replaces a lost key: the old one answers 401 at once, the new one works', async () => {
    expect(server).toBeDefined();
    const url = server?.url ?? '';
    const registered = await api(url, '/api/users', {
      method: 'POST',
      body: { name: 'Rotating Rita', email: uniqueEmail('rotate') },
    });
    expect(registered.status).toBe(201);
    const { apiKey: oldKey, email: ritasEmail } = registered.body as Item & { apiKey: string; email: string };
    expect((await api(url, '/api/users', { key: oldKey })).status).toBe(200);

    // The address in another case names the same account.
    const res = await runCli(['property:users:rotate-key', '--email', ritasEmail.toUpperCase()], env);
    expect(res.code, res.stderr + res.stdout).toBe(0);
    const newKey = lastLine(res.stdout);
    expect(newKey).toMatch(KEY);
    expect(newKey).not.toBe(oldKey);
    expect((await api(url, '/api/users', { key: oldKey })).status).toBe(401);
    const mine = await api(url, '/api/users', { key: newKey });
    expect(mine.status).toBe(200);
    expect(members(mine).map((m) => m.email)).toEqual([ritasEmail]);
  });

  it('property:users:rotate-key fails with status 1 for an unknown address, and with usage text without --email', async () => {
    const unknown = await runCli(['property:users:rotate-key', '--email', uniqueEmail('nobody')], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no property account/);
    expect(lastLine(unknown.stdout)).not.toMatch(KEY);
    const missing = await runCli(['property:users:rotate-key'], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--email');
  });
});
