import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * The project's license (MIT: LICENSE, package.json) and the checker CI runs (`npm run licenses`,
 * scripts/check-licenses.mjs): it passes on the real lock file and fails, naming the package, on
 * a dependency whose license the project could not be used under.
 */

const ROOT = path.resolve(import.meta.dirname, '..');
const dir = mkdtempSync(path.join(tmpdir(), 'licenses-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function check(lockPath: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) =>
    execFile('node', ['scripts/check-licenses.mjs', '--lock', lockPath], { cwd: ROOT }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code) : 0, out: stdout + stderr }),
    ),
  );
}

/** A lock file with one package besides the root. */
function lockWith(entry: Record<string, unknown>): string {
  const file = path.join(dir, `lock-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify({ packages: { '': { name: 'x' }, 'node_modules/dep': entry } }));
  return file;
}

describe('license', () => {
  it('is MIT, in LICENSE and package.json, and the README says so', () => {
    expect(readFileSync(path.join(ROOT, 'LICENSE'), 'utf8')).toMatch(/^MIT License\n/);
    expect(JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).license).toBe('MIT');
    expect(readFileSync(path.join(ROOT, 'README.md'), 'utf8')).toContain('[MIT license](LICENSE)');
  });

  it('every dependency in the lock file has a license compatible with it', async () => {
    const res = await check(path.join(ROOT, 'package-lock.json'));
    expect(res.out).toMatch(/licenses: all \d+ packages have licenses compatible/);
    expect(res.code).toBe(0);
  });

  it.each([
    [{ license: 'MIT' }, true],
    [{ license: '(MIT OR GPL-3.0-only)' }, true],
    [{ license: '(MIT AND Zlib)' }, true],
    [{ license: 'MPL-2.0', dev: true }, true],
    [{ license: 'GPL-3.0-only' }, false],
    [{ license: 'AGPL-3.0-or-later', dev: true }, false],
    [{ license: '(MIT AND GPL-2.0+)' }, false],
    [{ license: 'MPL-2.0' }, false],
    [{ license: 'SSPL-1.0' }, false],
    [{}, false],
  ])('%j passes: %s', async (entry, passes) => {
    const res = await check(lockWith(entry));
    expect(res.code).toBe(passes ? 0 : 1);
    if (!passes) expect(res.out).toContain('node_modules/dep');
  });
});
