import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain ES module script without types
import { staleReason } from '../scripts/build-once.mjs';
import { dialects, freshPostgresSchema } from './support/dialects.js';

/**
 * The README's walk-throughs as a newcomer runs them (issue 27): every shell block marked
 * `<!-- walk-through: NAME -->` is run as written, the blocks of a walk-through one after the
 * other in one shell, against `npm start` on its default ports, twice in a row on the same
 * DATA_DIR, in bash and in zsh. The shell stops at the first command that fails (`set -e`,
 * `pipefail`): an answer that is not a success fails `curl --fail-with-body`, a value missing
 * from an answer fails `scripts/json-field.mjs`. On PostgreSQL, the server and the shell share
 * the `*_DATABASE_URL` settings, as the README's PostgreSQL section says.
 */

const ROOT = path.resolve(import.meta.dirname, '..');
const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const PORTS = { inbox: 3000, property: 3001, smtp: 2525, imap: 1143, submission: 1587 };

/** The walk-throughs: their blocks, joined, by name. */
function walkthroughs(): Map<string, string> {
  const found = new Map<string, string>();
  for (const m of README.matchAll(/<!-- walk-through: ([\w-]+) -->\n```sh\n([\s\S]*?)```/g)) {
    const [, name, block] = m as unknown as [string, string, string];
    found.set(name, `${found.get(name) ?? ''}${block}`);
  }
  return found;
}

/** The lines of a script outside its here-documents. */
function shellLines(script: string): string[] {
  const lines: string[] = [];
  let until: string | undefined;
  for (const line of script.split('\n')) {
    if (until !== undefined) {
      if (line === until) until = undefined;
      continue;
    }
    lines.push(line);
    const heredoc = /<<-?\s*'?(\w+)'?/.exec(line);
    if (heredoc) until = heredoc[1];
  }
  return lines;
}

const portFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = createServer()
      .once('error', () => resolve(false))
      .listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });

const shells = ['bash', ...(spawnSync('zsh', ['-c', 'true']).status === 0 ? ['zsh'] : [])];
if (shells.length === 1) console.warn('readme-walkthrough.test: zsh not found, the walk-throughs run in bash only');

function runShell(shell: string, script: string, env: NodeJS.ProcessEnv): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    // Strict mode around the commands as written: the first failure ends the run.
    const child = spawn(shell, ['-c', `set -e -o pipefail\n${script}`], { cwd: ROOT, env });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('exit', (code) => resolve({ code: code ?? -1, output }));
  });
}

beforeAll(() => {
  // `npm ci` built it (the `prepare` script); a tree changed since is built again, as `npm start` would.
  if ((staleReason as () => string | undefined)() !== undefined) {
    const build = spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, encoding: 'utf8' });
    expect(build.status, build.stderr).toBe(0);
  }
}, 300_000);

describe('README walk-throughs, as text', () => {
  const found = walkthroughs();

  it('has the property and the inbox walk-through', () => {
    expect([...found.keys()]).toEqual(['property', 'inbox']);
  });

  it.each([...found])('%s: quotes every URL, has no comments for zsh to trip on, writes no file', (_name, script) => {
    const lines = shellLines(script);
    // zsh (macOS's shell) takes `?` and `[` in an unquoted URL as a pattern, and an interactive
    // zsh runs `#` as a command unless interactivecomments is set.
    expect(lines.filter((l) => /(^|[\s=(])(https?|smtp):\/\//.test(l))).toEqual([]);
    expect(lines.filter((l) => /(^|\s)#/.test(l))).toEqual([]);
    expect(lines.filter((l) => /(^|[^0-9&])>\s*[\w./]/.test(l.replace(/-o \/dev\/null/, '')))).toEqual([]);
  });
});

describe.each(dialects)('%s: README walk-throughs, run twice in bash and zsh', (dialect) => {
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let server: ChildProcess | undefined;
  let serverOutput = '';
  let pgSchema: ReturnType<typeof freshPostgresSchema> | undefined;

  beforeAll(async () => {
    // The previous dialect's server may still be letting its ports go.
    for (const [name, port] of Object.entries(PORTS)) {
      const deadline = Date.now() + 20_000;
      while (!(await portFree(port))) {
        if (Date.now() > deadline)
          throw new Error(`port ${port} (${name}) is taken: the walk-throughs run npm start on its default ports`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    dataDir = mkdtempSync(path.join(tmpdir(), 'readme-walkthrough-'));
    pgSchema = dialect === 'postgres' ? freshPostgresSchema() : undefined;
    env = {
      ...process.env,
      DATA_DIR: dataDir,
      // No DNS here: inbound mail is not checked for SPF, DKIM and DMARC.
      INBOX_SMTP_VERIFY_AUTH: 'false',
      ...(pgSchema ? { INBOX_DATABASE_URL: pgSchema.url, PROPERTY_DATABASE_URL: pgSchema.url } : {}),
    };
    for (const variable of [
      'HOST',
      'INBOX_PORT',
      'PROPERTY_PORT',
      'INBOX_SMTP_PORT',
      'INBOX_IMAP_PORT',
      'INBOX_SUBMISSION_PORT',
      'INBOX_ROLES',
      'REDIS_URL',
    ])
      delete env[variable];
    server = spawn('npm', ['start'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    server.stdout?.on('data', (d: Buffer) => (serverOutput += d.toString()));
    server.stderr?.on('data', (d: Buffer) => (serverOutput += d.toString()));
    const deadline = Date.now() + 60_000;
    while (!/Property service: /.test(serverOutput)) {
      if (Date.now() > deadline || server.exitCode !== null)
        throw new Error(`npm start did not start:\n${serverOutput}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }, 90_000);

  afterAll(async () => {
    if (server?.pid && server.exitCode === null) {
      const exited = new Promise((resolve) => server?.once('exit', resolve));
      process.kill(-server.pid, 'SIGTERM');
      await exited;
    }
    await pgSchema?.drop();
    if (dataDir && existsSync(dataDir)) rmSync(dataDir, { recursive: true, force: true });
  }, 30_000);

  const expected: Record<string, readonly RegExp[]> = {
    property: [/"hydra:totalItems":16/, /"kaufpreis":399000/, /^204$/m, /"email":"erika-\d+@example\.org"/],
    inbox: [/@inbox\.localhost/, /Hello agent/, /Hello peer/, /Hello from the SDK/],
  };

  for (const shell of shells)
    for (const [name, script] of walkthroughs())
      it(`${shell}: the ${name} walk-through, twice on the same DATA_DIR`, async () => {
        for (const run of [1, 2]) {
          const { code, output } = await runShell(shell, script, env);
          expect(code, `run ${run} in ${shell} failed:\n${output}`).toBe(0);
          for (const pattern of expected[name] ?? []) expect(output, `run ${run} in ${shell}`).toMatch(pattern);
        }
      }, 120_000);
});
