import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { fmt, freePort, median, ROOT, snapshotDist, sourceOf, startServer } from './lib/harness.mjs';
import { machineWithCosts } from './lib/machine-costs.mjs';

/**
 * `npm run bench:console`: the web console's first screen (issue 30: under 1 s on loopback),
 * against the property admin's first screen as the baseline. Both services run from a copy of the
 * built tree (dist/) on fresh SQLite files, their pages served as users get them. Per run,
 * in Debian's headless Chromium, each page in a fresh browser context (cold cache), already signed
 * in as a person would be after signing in once:
 *  - console: the session cookie of `POST /console/session` in the context; navigation to
 *    `/console/` → the signed-in mail view's inbox list visible (`[data-inbox]`);
 *  - admin: the API key in the tab's sessionStorage, where its login page keeps it; navigation to
 *    `/admin` → the first rows of its first list visible.
 * Runs alternate console and admin. Prints both medians and console ÷ admin (lower is better);
 * the target is the console's absolute median under 1000 ms. No assertion: a bench reports.
 * Options: --runs 7 (the bench smoke runs 1). Run under `flock /tmp/bench.lock`.
 */

const { values: args } = parseArgs({ options: { runs: { type: 'string' } } });
const runs = Number(args.runs ?? process.env.BENCH_RUNS ?? 7);
const TARGET_MS = 1000;

const snapshot = snapshotDist('.dist-snapshot-console');
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'bench-console-'));

function cli(...argv) {
  const result = spawnSync(process.execPath, [path.join(snapshot, 'src/cli.js'), ...argv], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'silent' },
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`cli ${argv[0]} failed: ${result.stderr}`);
  return result.stdout.trim().split('\n').at(-1);
}

async function json(url, init = {}) {
  const res = await fetch(url, init);
  const text = await res.text();
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${url}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

const inboxPort = await freePort();
const propertyPort = await freePort();
const common = { DATA_DIR: dataDir, HOST: '127.0.0.1', LOG_LEVEL: 'warn' };
const inbox = await startServer({
  label: 'inbox',
  file: path.join(snapshot, 'src/inbox/main.js'),
  env: {
    ...common,
    INBOX_PORT: String(inboxPort),
    INBOX_ROLES: 'api',
    INBOX_DOMAINS: 'inbox.localhost',
    INBOX_CONSOLE_DIR: path.join(snapshot, 'console'),
  },
});
const property = await startServer({
  label: 'property',
  file: path.join(snapshot, 'src/property/main.js'),
  env: { ...common, PROPERTY_PORT: String(propertyPort), PROPERTY_ADMIN_DIR: path.join(snapshot, 'admin') },
});
const inboxUrl = `http://127.0.0.1:${inboxPort}`;
const propertyUrl = `http://127.0.0.1:${propertyPort}`;

const times = { console: [], admin: [] };
let browser;
try {
  // What each first screen shows: a few inboxes with mail; a few properties.
  const inboxKey = cli('inbox:keys:create', '--name', 'bench-console');
  const auth = { authorization: `Bearer ${inboxKey}`, 'content-type': 'application/json' };
  const inboxes = [];
  for (const username of ['support', 'sales', 'billing']) {
    const made = await json(`${inboxUrl}/v0/inboxes`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ username }),
    });
    inboxes.push(made.inbox_id);
  }
  for (let i = 0; i < 10; i++)
    await json(`${inboxUrl}/v0/inboxes/${encodeURIComponent(inboxes[1])}/messages/send`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ to: inboxes[0], subject: `Question ${i}`, text: 'Hello' }),
    });
  const adminKey = cli('property:admin:create', '--email', `bench-${process.pid}@example.org`, '--name', 'Bench');
  const hydra = { accept: 'application/ld+json', 'content-type': 'application/ld+json', 'x-api-key': adminKey };
  for (let i = 0; i < 3; i++)
    await json(`${propertyUrl}/api/immobilies`, {
      method: 'POST',
      headers: hydra,
      body: JSON.stringify({ adresse: `Weg ${i}, Leipzig`, typ: 'haus', bundesland: '/api/bundeslands/13' }),
    });

  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu'],
  });

  async function consoleRun() {
    const res = await fetch(`${inboxUrl}/console/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ api_key: inboxKey }),
    });
    if (res.status !== 200) throw new Error(`console sign-in: ${res.status}`);
    const token = /am_console=([^;]+)/.exec(res.headers.get('set-cookie') ?? '')?.[1];
    const context = await browser.newContext();
    await context.addCookies([{ name: 'am_console', value: token, url: inboxUrl }]);
    const page = await context.newPage();
    const t0 = performance.now();
    await page.goto(`${inboxUrl}/console/`);
    await page.locator('[data-inbox]').first().waitFor({ timeout: 60_000 });
    const elapsed = performance.now() - t0;
    if ((await page.locator('[data-inbox]').count()) !== inboxes.length)
      throw new Error('the console lists other inboxes');
    await context.close();
    return elapsed;
  }

  async function adminRun() {
    const context = await browser.newContext();
    // The page's own sessionStorage, where its login page keeps the key (src/property/admin/ui/api-key.ts).
    await context.addInitScript((key) => globalThis.sessionStorage.setItem('property-admin.api-key', key), adminKey);
    const page = await context.newPage();
    const t0 = performance.now();
    await page.goto(`${propertyUrl}/admin`);
    await page.locator('.RaDatagrid-tbody tr').first().waitFor({ timeout: 120_000 });
    const elapsed = performance.now() - t0;
    await context.close();
    return elapsed;
  }

  // One unmeasured round: the servers' first requests (statement caches, file reads) are not a first screen.
  await consoleRun();
  await adminRun();
  for (let i = 0; i < runs; i++) {
    const [first, second] = i % 2 === 0 ? ['console', 'admin'] : ['admin', 'console'];
    for (const which of [first, second]) times[which].push(await (which === 'console' ? consoleRun() : adminRun()));
  }
} finally {
  await browser?.close();
  await inbox.stop();
  await property.stop();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(snapshot, { recursive: true, force: true });
}

const consoleMedian = median(times.console);
const adminMedian = median(times.admin);
console.log(
  `console first screen (navigation → signed-in inbox list), ms: ${times.console.map((t) => fmt(t)).join(', ')}`,
);
console.log(`admin first screen (navigation → signed-in list rows), ms: ${times.admin.map((t) => fmt(t)).join(', ')}`);
console.log(
  `median of ${runs}: console ${fmt(consoleMedian)} ms (target < ${TARGET_MS} ms: ${consoleMedian < TARGET_MS ? 'met' : 'missed'}), admin ${fmt(adminMedian)} ms, console ÷ admin ${fmt(consoleMedian / adminMedian, 2)}`,
);
console.log(
  `source ${sourceOf(['src', 'scripts'])}; ${await machineWithCosts()}; load average ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
