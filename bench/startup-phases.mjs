#!/usr/bin/env node
/**
 * Where `npm start`'s time goes (issue 13, item 18), phase by phase in one process on a fresh
 * DATA_DIR: loading the configuration code and reading the settings, loading each service's
 * modules, opening and migrating each SQLite database, and building and starting each service
 * (the migrations then find nothing to do). `node bench/startup-phases.mjs [dist dir]`; several
 * runs: `--runs N` (medians).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { spawnSync } from 'node:child_process';

const args = process.argv.slice(2);
const runs = Number(args[args.indexOf('--runs') + 1] || 0) || 1;
const dist = path.resolve(args.find((a, i) => !a.startsWith('--') && args[i - 1] !== '--runs') ?? 'dist');

if (process.env.STARTUP_PHASES_CHILD) {
  const phases = [];
  let last = performance.now();
  const mark = (name) => {
    const now = performance.now();
    phases.push([name, now - last]);
    last = now;
  };
  const load = (p) => import(pathToFileURL(path.join(dist, p)).href);
  const [{ loadConfig }, { inboxConfigSpec }, { propertyConfigSpec }] = await Promise.all([
    load('src/platform/config/config.js'),
    load('src/inbox/inbox.config.js'),
    load('src/property/property.config.js'),
  ]);
  const inboxConfig = loadConfig(inboxConfigSpec);
  const propertyConfig = loadConfig(propertyConfigSpec);
  mark('configuration: modules and settings');
  const inbox = await load('src/inbox/service.js');
  mark('inbox service: modules');
  const property = await load('src/property/service.js');
  mark('property service: modules');
  const inboxDb = await inbox.openInboxDatabase(inboxConfig);
  await inbox.migrateInbox(inboxDb);
  await inboxDb.destroy();
  mark('inbox: open and migrate a new SQLite file');
  const propertyDb = await property.openPropertyDatabase(propertyConfig);
  await property.migrateProperty(propertyDb);
  await propertyDb.destroy();
  mark('property: open and migrate a new SQLite file');
  const runningInbox = await inbox.startInboxService(inboxConfig);
  mark('inbox: open, build the app, listen (all roles)');
  const runningProperty = await property.startPropertyService(propertyConfig);
  mark('property: open, build the app, listen');
  await runningProperty.close();
  await runningInbox.close();
  process.stdout.write(`${JSON.stringify(phases)}\n`);
  process.exit(0);
}

const all = [];
for (let i = 0; i < runs; i++) {
  const dir = mkdtempSync(path.join(tmpdir(), 'startup-phases-'));
  const started = performance.now();
  const child = spawnSync(process.execPath, [process.argv[1], ...args], {
    env: {
      ...process.env,
      STARTUP_PHASES_CHILD: '1',
      HOST: '127.0.0.1',
      DATA_DIR: dir,
      LOG_LEVEL: 'warn',
      INBOX_PORT: '0',
      PROPERTY_PORT: '0',
      INBOX_SMTP_PORT: '0',
      INBOX_IMAP_PORT: '0',
      INBOX_SUBMISSION_PORT: '0',
    },
    encoding: 'utf8',
  });
  const wall = performance.now() - started;
  rmSync(dir, { recursive: true, force: true });
  if (child.status !== 0) throw new Error(`phases run failed: ${child.stderr}`);
  const phases = JSON.parse(child.stdout.trim().split('\n').at(-1));
  all.push([...phases, ['whole process (node start to exit)', wall]]);
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`| Phase (${dist}) | ms (median of ${runs}) |`);
console.log('|---|--:|');
for (const [i, [name]] of all[0].entries()) console.log(`| ${name} | ${median(all.map((p) => p[i][1])).toFixed(0)} |`);
