import autocannon from 'autocannon';

/**
 * The load generator, run by bench/run.mjs in its own process on its own core. Argument: a JSON
 * object { url, method, headers, body, connections, warmup, duration } (seconds). Prints `warm`
 * when the warm-up is over, then one JSON line with the measurement (cpu: cores it used itself).
 */

const { warmup, duration, ...target } = JSON.parse(process.argv[2]);
if (warmup > 0) await autocannon({ ...target, duration: warmup });
process.stdout.write('warm\n');
const cpuBefore = process.cpuUsage();
const r = await autocannon({ ...target, duration });
const cpu = process.cpuUsage(cpuBefore);
const summary = {
  rps: r.requests.average,
  total: r.requests.total,
  p50: r.latency.p50,
  p99: r.latency.p99,
  non2xx: r.non2xx,
  errors: r.errors,
  timeouts: r.timeouts,
  cpu: (cpu.user + cpu.system) / 1e6 / duration,
};
process.stdout.write(`${JSON.stringify(summary)}\n`);
