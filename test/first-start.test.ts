import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dialects, freshPostgresSchema } from './support/dialects.js';
import { runEntry, waitFor } from './support/process.js';

/**
 * `npm start` (src/main.ts, both services in one process) as a newcomer meets it (issue 27):
 * a bad INBOX_ROLES or a DATA_DIR that cannot hold the databases stops the process with an error
 * naming the setting; the banner names the API, docs and admin; `/` on both ports says where
 * things are instead of a bare 404.
 */

const dir = mkdtempSync(path.join(tmpdir(), 'first-start-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `npm start`'s entry on free ports, logging warnings only. */
const start = (env: Record<string, string>) =>
  runEntry('src/main.ts', {
    HOST: '127.0.0.1',
    INBOX_PORT: '0',
    INBOX_SMTP_PORT: '0',
    INBOX_IMAP_PORT: '0',
    INBOX_SUBMISSION_PORT: '0',
    PROPERTY_PORT: '0',
    LOG_LEVEL: 'warn',
    INBOX_SMTP_VERIFY_AUTH: 'false',
    ...env,
  });

describe('npm start: settings it refuses', () => {
  it.each([
    [
      'INBOX_ROLES=foo',
      { INBOX_ROLES: 'foo' },
      /INBOX_ROLES must be a comma-separated list of api, worker, smtp, imap, submission, got "foo"/,
    ],
    ['INBOX_ROLES=api,foo', { INBOX_ROLES: 'api,foo' }, /INBOX_ROLES .*\(unknown: foo\)/],
    ['INBOX_ROLES=,', { INBOX_ROLES: ',' }, /INBOX_ROLES must be a comma-separated list/],
  ])('%s stops the process (78) and names the setting', async (_name, env, message) => {
    const r = start({ DATA_DIR: dir, ...env });
    expect(await r.exited).toBe(78);
    expect(r.output()).toMatch(message);
  });

  it('a DATA_DIR that cannot be made or written stops the process (78) at once, naming it', async () => {
    const file = path.join(dir, 'a-file');
    writeFileSync(file, '');
    // Under /proc, Node's recursive mkdir never returned (the process spun at 85 % CPU).
    for (const [dataDir, reason] of [
      ['/proc/first-start-data', 'ENOENT'],
      [path.join(file, 'data'), 'ENOTDIR'],
    ] as const) {
      const r = start({ DATA_DIR: dataDir });
      expect(await r.exited).toBe(78);
      expect(r.output()).toContain(`DATA_DIR: ${dataDir} cannot hold the database (${reason})`);
    }
  });
});

describe.each(dialects)('%s: npm start, the banner and /', (dialect) => {
  it('prints the API, docs, admin and SMTP addresses; / on both ports answers where things are', async () => {
    const schema = dialect === 'postgres' ? freshPostgresSchema() : undefined;
    const dataDir = mkdtempSync(path.join(dir, 'data-'));
    const r = start({
      DATA_DIR: dataDir,
      ...(schema ? { INBOX_DATABASE_URL: schema.url, PROPERTY_DATABASE_URL: schema.url, REDIS_URL: '' } : {}),
    });
    try {
      const [, inbox] = await waitFor(r, /Inbox service: +(http:\/\/\S+)\/v0 +\(docs: \S+\/v0\/docs\)/);
      const [, property, docs, admin] = await waitFor(
        r,
        /Property service: (http:\/\/\S+)\/api +\(docs: (\S+), admin: (\S+)\)/,
      );
      expect(r.output()).toMatch(/Inbox SMTP: +smtp:\/\/127\.0\.0\.1:\d+/);
      expect([docs, admin]).toEqual([`${property}/api/docs.html`, `${property}/admin`]);
      for (const [url, expected] of [
        [inbox, { service: 'inbox', api: '/v0', docs: '/v0/docs', openapi: '/v0/openapi.json' }],
        [property, { service: 'property', api: '/api', docs: '/api/docs.html', admin: '/admin' }],
      ] as const) {
        const res = await fetch(`${url}/`);
        expect([url, res.status]).toEqual([url, 200]);
        const body = (await res.json()) as Record<string, string>;
        expect(body).toMatchObject({ ...expected, health: '/healthz', readiness: '/readyz' });
        // Each path it names is there.
        for (const key of ['docs', 'health', 'readiness'] as const) {
          const target = await fetch(`${url}${body[key]}`, { redirect: 'manual' });
          expect([body[key], target.status < 400 || target.status === 401]).toEqual([body[key], true]);
        }
      }
      r.child.kill('SIGTERM');
      expect(await r.exited).toBe(0);
    } finally {
      if (r.child.exitCode === null) r.child.kill('SIGKILL');
      await schema?.drop();
    }
  });
});
