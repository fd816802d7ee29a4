import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '..');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
};

/**
 * The Node versions package.json declares are the ones every installed dependency supports
 * (so `npm ci` has no EBADENGINE warning on any of them), and the tests run on one of them.
 */
describe('Node engine range', () => {
  const declared = pkg.engines.node;

  it('is a valid range, and the Node running these tests is in it', () => {
    expect(semver.validRange(declared)).not.toBeNull();
    expect(semver.satisfies(process.version, declared), `${process.version} is outside the declared ${declared}`).toBe(
      true,
    );
  });

  it('is supported by every installed package (the lock file, as npm ci installs it here)', () => {
    const unsupported: string[] = [];
    for (const [where, entry] of Object.entries(lock.packages)) {
      const range = !Array.isArray(entry.engines) ? entry.engines?.node : undefined;
      // Optional binaries for other platforms are in the lock but not installed.
      if (!where || !range || !existsSync(path.join(root, where))) continue;
      if (!semver.subset(declared, range)) unsupported.push(`${where}@${entry.version}: node ${range}`);
    }
    expect(unsupported).toEqual([]);
  });
});
