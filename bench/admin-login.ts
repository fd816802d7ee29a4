/**
 * `npx tsx bench/admin-login.ts [--runs 5] [--dir dist/admin]`: where the admin's sign-in time goes,
 * in Debian's headless Chromium against the real property service (SQLite, fresh database). Per
 * run, in a fresh browser context (cold cache): page → login form (the bundle: download, parse,
 * run), Sign in → menu (the key check, the entrypoint and the Hydra docs: fetch and
 * api-doc-parser), menu → first list rows. Also the bundle's size (raw, gzip, brotli) and, in
 * Node, api-doc-parser alone on the same docs. Prints medians; run under `flock /tmp/bench.lock`.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import path from 'node:path';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { parseArgs } from 'node:util';
import { parseHydraDocumentation } from '@api-platform/api-doc-parser';
import { chromium } from 'playwright-core';
import { startPropertyServer } from '../test/support/property-server.js';

const { values } = parseArgs({ options: { runs: { type: 'string' }, dir: { type: 'string' } } });
const runs = Number(values.runs ?? 5);
const dir = path.resolve(values.dir ?? 'dist/admin');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const ms = (x: number) => `${x.toFixed(0)} ms`;

const assets = path.join(dir, 'assets');
for (const file of readdirSync(assets).filter((f) => /\.(js|css)$/.test(f))) {
  const bytes = readFileSync(path.join(assets, file));
  console.log(
    `${file}: ${(bytes.length / 1024).toFixed(0)} KiB, gzip ${(gzipSync(bytes).length / 1024).toFixed(0)} KiB, brotli ${(brotliCompressSync(bytes).length / 1024).toFixed(0)} KiB`,
  );
}

const server = await startPropertyServer({ env: { PROPERTY_ADMIN_DIR: dir } });
const admin = await server.createAccount('admin');
const headers = { accept: 'application/ld+json', 'x-api-key': admin.key };
for (let i = 0; i < 3; i++) {
  await fetch(`${server.url}/api/immobilies`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/ld+json' },
    body: JSON.stringify({ adresse: `Weg ${i}, Leipzig`, typ: 'haus', bundesland: '/api/bundeslands/13' }),
  });
}

// api-doc-parser alone, in Node, against the same server.
const parse: number[] = [];
for (let i = 0; i < runs; i++) {
  const t = performance.now();
  await parseHydraDocumentation(`${server.url}/api`, { headers: { 'x-api-key': admin.key } });
  parse.push(performance.now() - t);
}
const docs = await fetch(`${server.url}/api/docs.jsonld`, { headers });
console.log(
  `Hydra docs: ${(await docs.text()).length} bytes; api-doc-parser in Node (entrypoint + docs + jsonld expansion), median of ${runs}: ${ms(median(parse))}`,
);

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu'],
});
const phases = { bundle: [] as number[], signIn: [] as number[], list: [] as number[] };
let requestLog = '';
for (let i = 0; i < runs; i++) {
  const context = await browser.newContext();
  const page = await context.newPage();
  const started = new Map<string, number>();
  const lines: string[] = [];
  let t0 = performance.now();
  page.on('request', (r) => started.set(r.url() + r.method(), performance.now()));
  page.on('requestfinished', (r) =>
    lines.push(
      `  ${r.method()} ${new URL(r.url()).pathname}${new URL(r.url()).search}: ${ms(performance.now() - (started.get(r.url() + r.method()) ?? 0))} (at ${ms((started.get(r.url() + r.method()) ?? 0) - t0)})`,
    ),
  );
  await page.goto(`${server.url}/admin`);
  await page.locator('input[name="apiKey"]').waitFor({ timeout: 120_000 });
  phases.bundle.push(performance.now() - t0);
  // Runs in the page: the browser's Performance API, typed by hand (this file is compiled for Node).
  interface Entry {
    readonly name: string;
    readonly startTime: number;
    readonly responseEnd: number;
    readonly domContentLoadedEventEnd: number;
  }
  const timing = await page.evaluate(() => {
    const entries = performance as unknown as { getEntriesByType(type: string): Entry[] };
    const nav = entries.getEntriesByType('navigation')[0] as Entry;
    const script = entries.getEntriesByType('resource').find((e) => /admin-.*\.js$/.test(e.name));
    return {
      html: nav.responseEnd,
      script: script ? [script.startTime, script.responseEnd] : [],
      domContentLoaded: nav.domContentLoadedEventEnd,
      now: performance.now(),
    };
  });
  if (i === runs - 1) {
    console.log(
      `last cold page load (ms since navigation start): html ${timing.html.toFixed(0)}, bundle fetched ${timing.script.map((x) => x.toFixed(0)).join('–')}, DOMContentLoaded (bundle run) ${timing.domContentLoaded.toFixed(0)}, login form ${timing.now.toFixed(0)}`,
    );
    console.log(`requests before the login form:\n${lines.join('\n')}`);
  }
  await page.locator('input[name="apiKey"]').fill(admin.key);
  const t1 = performance.now();
  t0 = t1;
  lines.length = 0;
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('menuitem', { name: 'Immobilien' }).waitFor({ timeout: 120_000 });
  phases.signIn.push(performance.now() - t1);
  const t2 = performance.now();
  await page.locator('.RaDatagrid-tbody tr').first().waitFor({ timeout: 120_000 });
  phases.list.push(performance.now() - t2);
  requestLog = lines.join('\n');
  await context.close();
}
await browser.close();
await server.close();
console.log(
  `browser, median of ${runs} cold contexts: page → login form ${ms(median(phases.bundle))}, Sign in → menu ${ms(median(phases.signIn))}, menu → list rows ${ms(median(phases.list))}`,
);
console.log(
  `  (all: bundle ${phases.bundle.map(ms).join(', ')}; sign-in ${phases.signIn.map(ms).join(', ')}; list ${phases.list.map(ms).join(', ')})`,
);
console.log(`requests of the last sign-in (duration, start after the click):\n${requestLog}`);
console.log(
  `load average ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')} on ${cpus().length} cores`,
);
