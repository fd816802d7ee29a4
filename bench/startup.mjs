#!/usr/bin/env node
/**
 * First minutes of a new user (issue 13, item 18): time from `npm start` to a 200 from both
 * services' /healthz, and the wall time of a CLI call, on a built tree — each beside the
 * baseline of building before every start (what `npm start` did before), in one run, as medians
 * and ratios. Every run uses a fresh DATA_DIR and free ports. `--runs N` (default 5; the
 * baseline runs min(N, 3) times: each costs a full TypeScript build).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const runs = Number(process.argv[process.argv.indexOf('--runs') + 1] || 0) || 5;

const freePort = () =>
  new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function env() {
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-startup-'));
  return {
    dir,
    vars: {
      ...process.env,
      HOST: '127.0.0.1',
      DATA_DIR: dir,
      LOG_LEVEL: 'warn',
      INBOX_PORT: String(await freePort()),
      PROPERTY_PORT: String(await freePort()),
      INBOX_SMTP_PORT: String(await freePort()),
      INBOX_IMAP_PORT: '0',
      INBOX_SUBMISSION_PORT: '0',
    },
  };
}

/** ms from spawning `command` until both /healthz answer 200. */
async function startup(command) {
  const { dir, vars } = await env();
  const started = performance.now();
  const child = spawn('sh', ['-c', command], { cwd: ROOT, env: vars, stdio: 'ignore', detached: true });
  try {
    for (;;) {
      const ok = await Promise.all(
        [vars.INBOX_PORT, vars.PROPERTY_PORT].map((p) =>
          fetch(`http://127.0.0.1:${p}/healthz`).then(
            (r) => r.status === 200,
            () => false,
          ),
        ),
      );
      if (ok.every(Boolean)) return performance.now() - started;
      if (performance.now() - started > 180_000) throw new Error(`${command}: no answer within 180 s`);
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    process.kill(-child.pid, 'SIGTERM');
    await new Promise((r) => child.once('exit', r));
    rmSync(dir, { recursive: true, force: true });
  }
}

/** ms of a whole CLI call (creating an inbox key on a fresh SQLite file). */
async function cli(command) {
  const { dir, vars } = await env();
  const started = performance.now();
  const child = spawn('sh', ['-c', command], { cwd: ROOT, env: vars, stdio: 'ignore' });
  const code = await new Promise((r) => child.once('exit', r));
  const ms = performance.now() - started;
  rmSync(dir, { recursive: true, force: true });
  if (code !== 0) throw new Error(`${command} exited ${code}`);
  return ms;
}

const cases = [
  ['start → both /healthz 200', startup, 'npm start', 'npm run build --silent && node dist/src/main.js'],
  [
    'npm run cli -- inbox:keys:create',
    cli,
    'npm run --silent cli -- inbox:keys:create --name bench',
    'npm run build --silent && node dist/src/cli.js inbox:keys:create --name bench',
  ],
];
const rows = [];
for (const [name, measure, ours, baseline] of cases) {
  const o = [];
  const b = [];
  for (let i = 0; i < runs; i++) {
    o.push(await measure(ours));
    if (i < Math.min(runs, 3)) b.push(await measure(baseline));
  }
  rows.push({ name, ours: median(o), baseline: median(b), oursRuns: o, baselineRuns: b });
}
console.log('| Case | built tree (median) | build every time (median) | ratio |');
console.log('|---|---|---|---|');
for (const r of rows)
  console.log(
    `| ${r.name} | ${(r.ours / 1000).toFixed(2)} s (${r.oursRuns.length} runs) | ${(r.baseline / 1000).toFixed(2)} s (${r.baselineRuns.length} runs) | ${(r.baseline / r.ours).toFixed(1)}× faster |`,
  );
console.log(
  JSON.stringify(
    rows.map((r) => ({ name: r.name, ours: r.oursRuns.map(Math.round), baseline: r.baselineRuns.map(Math.round) })),
  ),
);
