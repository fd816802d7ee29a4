import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { exited, ROOT } from './lib/harness.mjs';

/**
 * `npm run bench:smoke` (run by .ci/run): every bench once at the smallest size, so that a change
 * that breaks a bench fails CI instead of waiting for the next measurement. Each bench runs its
 * fairness checks (same SQL, same bytes, every message stored) and one short run of each of its
 * scenarios on the built tree (dist/, built once first), on SQLite and, with TEST_POSTGRES_URL or
 * BENCH_POSTGRES_URL, PostgreSQL. The figures mean nothing: the machine is not quiet
 * (BENCH_QUIET_WAIT=0) and a disturbed run is not repeated (BENCH_ATTEMPTS=1). A bench that fails
 * or runs past its time fails the smoke run; every bench still runs, and the failures are listed
 * at the end. Options: --only property,inbox,… (names below).
 */

const BENCHES = [
  { name: 'property', argv: ['bench/run.mjs', '--runs', '1', '--duration', '1', '--warmup', '1', '--items', '300'] },
  {
    name: 'property-filters',
    argv: ['bench/run.mjs', '--suite', 'filters', '--runs', '1', '--duration', '1', '--warmup', '1', '--items', '300'],
  },
  {
    name: 'property-scale',
    argv: ['bench/run.mjs', '--suite', 'scale', '--runs', '1', '--duration', '1', '--warmup', '1', '--items', '300'],
  },
  {
    name: 'property-writecost',
    argv: [
      'bench/run.mjs',
      '--suite',
      'writecost',
      '--runs',
      '1',
      '--duration',
      '1',
      '--warmup',
      '1',
      '--items',
      '300',
    ],
  },
  {
    name: 'inbox',
    argv: [
      'bench/inbox-run.mjs',
      ...['--runs', '1', '--duration', '1', '--warmup', '1', '--warmup-requests', '50'],
      ...['--messages', '2000', '--deep', '1000', '--probe', '20'],
    ],
  },
  {
    name: 'smtp',
    argv: ['bench/smtp-run.mjs', '--runs', '1', '--duration', '1', '--warmup', '1', '--sessions', '4'],
  },
  {
    name: 'smtp-postfix',
    argv: ['bench/smtp-run.mjs', '--anchor', 'postfix', '--runs', '1', '--messages', '200', '--sessions', '4'],
  },
  {
    name: 'imap-dovecot',
    argv: ['bench/imap-run.mjs', '--messages', '300', '--runs', '1', '--searches', '2', '--idles', '3'],
  },
  { name: 'bigsend', argv: ['bench/bigsend-run.mjs', '--runs', '1', '--duration', '2'] },
  {
    name: 'bigsend-arrivals',
    argv: ['bench/bigsend-run.mjs', '--runs', '1', '--duration', '2', '--variants', 'mixed', '--arrivals', '10'],
  },
  {
    // --profile here keeps the profiled runs (harness.mjs `profiled`, lib/sql-probe.mjs) working.
    name: 'mcp',
    argv: ['bench/mcp-run.mjs', '--runs', '1', '--duration', '1', '--warmup', '1', '--messages', '200', '--profile'],
  },
  { name: 'ws', argv: ['bench/websocket-run.mjs', '--connections', '20', '--messages', '5', '--warmup', '2'] },
  {
    name: 'search',
    argv: ['bench/search-run.mjs', '--messages', '2000', '--samples', '3', '--baseline-samples', '1', '--fresh'],
  },
  { name: 'faults', argv: ['bench/faults.mjs'], env: { BENCH_RUNS: '1', BENCH_REQUESTS: '20' } },
  { name: 'startup', argv: ['bench/startup.mjs', '--runs', '1'] },
  { name: 'admin', command: 'npx', argv: ['tsx', 'bench/admin-login.ts', '--runs', '1'] },
  { name: 'console', argv: ['bench/console-run.mjs', '--runs', '1'] },
  // SQLite only: on PostgreSQL it writes its keys into the database it is given and leaves them.
  { name: 'key-lookup', command: 'npx', argv: ['tsx', 'bench/key-lookup.ts', 'sqlite'] },
];
const TIMEOUT_S = 600;

const { values: args } = parseArgs({ options: { only: { type: 'string' } } });
const only = args.only?.split(',');
const chosen = BENCHES.filter((b) => !only || only.includes(b.name));

async function run(command, argv, env = {}) {
  const child = spawn(command, argv, {
    cwd: ROOT,
    env: { ...process.env, BENCH_QUIET_WAIT: '0', BENCH_ATTEMPTS: '1', ...env },
    stdio: 'inherit',
    detached: true,
  });
  const timedOut = sleep(TIMEOUT_S * 1000, 'timeout', { ref: false });
  const code = await Promise.race([exited(child), timedOut]);
  if (code !== 'timeout') return code;
  process.kill(-child.pid, 'SIGKILL');
  await exited(child);
  return `no end after ${TIMEOUT_S} s`;
}

if ((await run('npm', ['run', 'build', '--silent'])) !== 0) throw new Error('the build failed');
const failed = [];
for (const bench of chosen) {
  console.log(`\n=== bench smoke: ${bench.name} (${bench.command ?? 'node'} ${bench.argv.join(' ')})`);
  const start = performance.now();
  const code = await run(bench.command ?? process.execPath, bench.argv, bench.env);
  const seconds = ((performance.now() - start) / 1000).toFixed(0);
  console.log(`=== bench smoke: ${bench.name} ${code === 0 ? 'passed' : `FAILED (${code})`} in ${seconds} s`);
  if (code !== 0) failed.push(bench.name);
}
if (failed.length) {
  console.error(`\nbench smoke: ${failed.length} of ${chosen.length} benches failed: ${failed.join(', ')}`);
  process.exit(1);
}
console.log(`\nbench smoke: all ${chosen.length} benches ran`);
