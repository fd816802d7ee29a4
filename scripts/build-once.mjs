#!/usr/bin/env node
/**
 * Build once, run many times (issue 13, item 18). `npm ci` builds through the `prepare` script;
 * `npm start` and `npm run cli` then run the built code at once, and build again only when a
 * source changed since the last build (a checkout, an edit), so a stale dist/ never runs.
 *
 *   node scripts/build-once.mjs stamp                 after `npm run build` (the `postbuild` script)
 *   node scripts/build-once.mjs run <entry> [args…]   build if stale, then run dist/<entry> in this process
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Written after every successful build; its time is the build's. */
export const STAMP = 'dist/.build-stamp';
/** What a build reads: a change to any of them after the stamp makes dist/ stale. */
export const INPUTS = [
  'src',
  'scripts/build-bundle.ts',
  'scripts/build-admin.ts',
  'tsconfig.json',
  'tsconfig.build.json',
  'package.json',
  'package-lock.json',
];

function newestChange(file) {
  const stat = statSync(file);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs; // a deleted or renamed file changes its directory
  // (a change in the very millisecond of the stamp counts as a change: the safe side)
  for (const entry of readdirSync(file)) newest = Math.max(newest, newestChange(path.join(file, entry)));
  return newest;
}

/** Why dist/ under `root` must be built before it runs, or undefined when it is up to date. */
export function staleReason(root = ROOT) {
  const stamp = path.join(root, STAMP);
  if (!existsSync(stamp)) return 'no build yet';
  const built = statSync(stamp).mtimeMs;
  for (const input of INPUTS) {
    const full = path.join(root, input);
    if (existsSync(full) && newestChange(full) >= built) return `${input} changed since the last build`;
  }
  return undefined;
}

export function writeStamp(root = ROOT) {
  writeFileSync(path.join(root, STAMP), `${new Date().toISOString()}\n`);
}

async function main([command, entry, ...args]) {
  if (command === 'stamp') return writeStamp();
  if (command !== 'run' || !entry) {
    process.stderr.write('usage: build-once.mjs stamp | run <entry> [args…]\n');
    process.exit(64);
  }
  const reason = staleReason();
  if (reason) {
    // The build talks on stderr: a command's stdout (a printed API key) stays clean.
    process.stderr.write(`Building first (${reason})…\n`);
    const build = spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: ['ignore', 2, 2] });
    if (build.status !== 0) process.exit(build.status ?? 1);
  }
  const file = path.resolve(ROOT, 'dist', entry);
  // The collector's settings before any module of the bundle runs: esbuild orders the chunks an
  // entry imports as it sees fit, so the entry's own first import may run after others (decision 0056).
  await import(pathToFileURL(path.resolve(ROOT, 'dist/src/platform/gc-tuning.js')).href);
  process.argv = [process.argv[0], file, ...args];
  await import(pathToFileURL(file).href);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url))
  await main(process.argv.slice(2));
