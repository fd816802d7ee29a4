import { mkdirSync, mkdtempSync, rmSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain ES module script without types
import { staleReason, writeStamp } from '../scripts/build-once.mjs';

const stale = staleReason as (root: string) => string | undefined;
const stamp = writeStamp as (root: string) => void;

/** `npm start` and `npm run cli` build only when a build input changed after the last build. */
describe('build once', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'build-once-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  // Explicit times: no test depends on the file system's timestamp granularity.
  const past = (file: string, secondsAgo: number) =>
    utimesSync(file, new Date(Date.now() - secondsAgo * 1000), new Date(Date.now() - secondsAgo * 1000));
  const later = (file: string) => utimesSync(file, new Date(Date.now() + 5000), new Date(Date.now() + 5000));

  it('is stale with no build, fresh after one, stale again when a source or setting changes', () => {
    mkdirSync(path.join(root, 'src/inbox'), { recursive: true });
    for (const f of ['src/main.ts', 'src/inbox/app.ts', 'tsconfig.json', 'package.json']) {
      writeFileSync(path.join(root, f), '');
      past(path.join(root, f), 60);
    }
    for (const d of ['src/inbox', 'src']) past(path.join(root, d), 60);
    expect(stale(root)).toBe('no build yet');
    mkdirSync(path.join(root, 'dist'));
    stamp(root);
    expect(stale(root)).toBeUndefined();

    writeFileSync(path.join(root, 'src/inbox/app.ts'), 'changed');
    later(path.join(root, 'src/inbox/app.ts'));
    expect(stale(root)).toBe('src changed since the last build');
    past(path.join(root, 'src/inbox/app.ts'), 30);
    expect(stale(root)).toBeUndefined();

    // A deleted source changes its directory.
    unlinkSync(path.join(root, 'src/inbox/app.ts'));
    later(path.join(root, 'src/inbox'));
    expect(stale(root)).toBe('src changed since the last build');
    past(path.join(root, 'src/inbox'), 30);
    expect(stale(root)).toBeUndefined();

    writeFileSync(path.join(root, 'package.json'), '{}');
    later(path.join(root, 'package.json'));
    expect(stale(root)).toBe('package.json changed since the last build');
  });
});
