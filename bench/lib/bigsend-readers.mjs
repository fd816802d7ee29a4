import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';

/**
 * The readers of bench/bigsend-run.mjs, in a thread of their own: `readers` keep-alive loops of
 * `GET /v0/inboxes` until `endAt` (Date.now()), each request timed. On the bench's main thread
 * their timings also held the time that thread spent writing the senders' bodies of 18 MiB and
 * sampling the server's memory, so that a server that took big sends faster looked slower to them.
 * With `arrivalMs`, instead, one request every `arrivalMs` on a new connection each, whether or not
 * the earlier ones were answered (as independent clients arrive; issue 32 item 4 measured it so),
 * each timed from before its connection opens. Posts `{ latencies, errors }` when done.
 */
const { port, apiKey, readers, endAt, arrivalMs } = workerData;
const agent = new http.Agent({ keepAlive: true, maxSockets: readers });

function get(fresh = false) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'GET',
        path: '/v0/inboxes',
        agent: fresh ? false : agent,
        headers: { authorization: `Bearer ${apiKey}` },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const latencies = [];
let errors = 0;
async function reader() {
  while (Date.now() < endAt) {
    const t = performance.now();
    const status = await get();
    latencies.push(performance.now() - t);
    if (status !== 200) errors++;
  }
}
/** A new connection every `arrivalMs` until `endAt`; resolves once every request was answered. */
async function arrivals() {
  const pending = [];
  for (let next = performance.now(); Date.now() < endAt; next += arrivalMs) {
    const wait = next - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const t = performance.now();
    pending.push(
      get(true).then(
        (status) => {
          latencies.push(performance.now() - t);
          if (status !== 200) errors++;
        },
        () => errors++,
      ),
    );
  }
  await Promise.all(pending);
}
await (arrivalMs ? arrivals() : Promise.all(Array.from({ length: readers }, reader)));
agent.destroy();
parentPort.postMessage({ latencies, errors });
