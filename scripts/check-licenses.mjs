#!/usr/bin/env node
// The license checker of CI (`npm run licenses`): every package in package-lock.json must be under
// a license that lets this project be used under its own (MIT, see LICENSE), as the lock file (or,
// where it has none, the package's package.json) states it. An SPDX expression passes when one
// side of each OR passes and both sides of each AND. Prints every package that does not pass and
// exits 1. Usage: node scripts/check-licenses.mjs [--lock path/to/package-lock.json]
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** Permissive licenses: fine in what is shipped and in the tools that build and test it. */
const PERMISSIVE = new Set([
  'MIT',
  'MIT-0',
  'ISC',
  '0BSD',
  'BSD',
  'BSD-2-Clause',
  'BSD-3-Clause',
  'Apache-2.0',
  'BlueOak-1.0.0',
  'Unlicense',
  'CC0-1.0',
  'CC-BY-4.0',
  'Zlib',
  'Python-2.0',
]);
/**
 * File-level copyleft: allowed for development tools only (never bundled into what `npm start`
 * runs): lightningcss, used by the admin's build, is MPL-2.0.
 */
const DEV_ONLY = new Set(['MPL-2.0']);
/**
 * Packages without a stated license, each with the reason it may stay. `agentmail-049` is the
 * agentmail SDK 0.4.9 (its 0.5 releases are MIT), installed only so that the tests check the
 * server against the SDK's older clients; it is never shipped.
 */
const EXCEPTIONS = new Map([['node_modules/agentmail-049', 'the agentmail 0.4.9 SDK, a test-only dev dependency']]);

/** Whether an SPDX expression passes, given what a single license may be. */
export function expressionPasses(expression, allowed) {
  const tokens = expression.replace(/[()]/g, ' $& ').split(/\s+/).filter(Boolean);
  let at = 0;
  const primary = () => {
    const token = tokens[at++];
    if (token === '(') {
      const value = or();
      at++; // ')'
      return value;
    }
    // `GPL-2.0+`, `EUPL-1.1+`: "or later" names the license it starts from.
    return allowed(String(token).replace(/\+$/, ''));
  };
  const and = () => {
    let value = primary();
    while (tokens[at] === 'AND') {
      at++;
      value = primary() && value;
    }
    return value;
  };
  const or = () => {
    let value = and();
    while (tokens[at] === 'OR') {
      at++;
      value = and() || value;
    }
    return value;
  };
  return or();
}

/** The packages of a lock file whose license does not pass, as `path: license (why)`. */
export function licenseProblems(lock, root) {
  const problems = [];
  for (const [where, entry] of Object.entries(lock.packages ?? {})) {
    if (where === '' || entry.link) continue;
    let license = entry.license;
    const manifest = path.join(root, where, 'package.json');
    if (!license && existsSync(manifest)) license = JSON.parse(readFileSync(manifest, 'utf8')).license;
    if (typeof license === 'object' && license) license = license.type;
    if (!license) {
      if (!EXCEPTIONS.has(where)) problems.push(`${where}: no license stated`);
      continue;
    }
    const allowed = (id) => PERMISSIVE.has(id) || (entry.dev === true && DEV_ONLY.has(id));
    if (!expressionPasses(String(license), allowed))
      problems.push(`${where}: ${license}${entry.dev ? ' (dev)' : ''} is not a license this project may depend on`);
  }
  return problems;
}

const invoked = process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname);
if (invoked) {
  const i = process.argv.indexOf('--lock');
  const lockPath = path.resolve(i > 0 ? process.argv[i + 1] : 'package-lock.json');
  const lock = JSON.parse(readFileSync(lockPath, 'utf8'));
  const problems = licenseProblems(lock, path.dirname(lockPath));
  const count = Object.keys(lock.packages ?? {}).length - 1;
  if (problems.length) {
    process.stderr.write(
      `${problems.length} of ${count} packages fail the license check:\n  ${problems.join('\n  ')}\n`,
    );
    process.exit(1);
  }
  process.stdout.write(`licenses: all ${count} packages have licenses compatible with this project's MIT license\n`);
}
