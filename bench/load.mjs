import http from 'node:http';
import autocannon from 'autocannon';

/**
 * The load generator, run by bench/lib/harness.mjs in its own process on its own core. Argument:
 * a JSON object { url, method, headers, body, connections, warmup, duration } (seconds), and
 * optionally `warmupRequests`: a warm-up of that many requests instead of `warmup` seconds (so that
 * programs of different speed write the same rows before the measurement starts), and `probe`:
 * that many sequential requests on one keep-alive connection, timed to the
 * microsecond after the warm-up (autocannon's latencies are whole milliseconds). Prints `warm`
 * when the warm-up (and the probe) is over, then one JSON line with the measurement (cpu: cores
 * it used itself).
 */

const { warmup, warmupRequests, duration, probe: probeCount, ...target } = JSON.parse(process.argv[2]);
if (warmupRequests > 0) await autocannon({ ...target, amount: warmupRequests });
else if (warmup > 0) await autocannon({ ...target, duration: warmup });
const probe = probeCount > 0 ? await sequential(target, probeCount) : undefined;
process.stdout.write('warm\n');
const cpuBefore = process.cpuUsage();
const r = await autocannon({ ...target, duration });
const cpu = process.cpuUsage(cpuBefore);
const summary = {
  rps: r.requests.average,
  total: r.requests.total,
  mean: r.latency.mean,
  p50: r.latency.p50,
  p99: r.latency.p99,
  non2xx: r.non2xx,
  errors: r.errors,
  timeouts: r.timeouts,
  cpu: (cpu.user + cpu.system) / 1e6 / duration,
  ...(probe ? { probe } : {}),
};
process.stdout.write(`${JSON.stringify(summary)}\n`);

/** `count` requests one after the other; the median and mean time to the last byte, µs. */
async function sequential({ url, method = 'GET', headers = {}, body }, count) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const one = () =>
    new Promise((resolve, reject) => {
      const start = process.hrtime.bigint();
      const req = http.request(url, { method, headers, agent }, (res) => {
        res.on('data', () => {});
        res.on('end', () =>
          res.statusCode < 300
            ? resolve(Number(process.hrtime.bigint() - start) / 1000)
            : reject(new Error(`probe: status ${res.statusCode}`)),
        );
      });
      req.on('error', reject);
      req.end(body);
    });
  const times = [];
  for (let i = 0; i < count; i++) times.push(await one());
  agent.destroy();
  times.sort((a, b) => a - b);
  return {
    n: count,
    p50Us: times[Math.floor(count / 2)],
    meanUs: times.reduce((a, b) => a + b, 0) / count,
    p90Us: times[Math.floor(count * 0.9)],
  };
}
