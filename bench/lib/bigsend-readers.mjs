import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';

/**
 * The readers of bench/bigsend-run.mjs, in a thread of their own: `readers` keep-alive loops of
 * `GET /v0/inboxes` until `endAt` (Date.now()), each request timed. On the bench's main thread
 * their timings also held the time that thread spent writing the senders' bodies of 18 MiB and
 * sampling the server's memory, so that a server that took big sends faster looked slower to them.
 * Posts `{ latencies, errors }` when done.
 */
const { port, apiKey, readers, endAt } = workerData;
const agent = new http.Agent({ keepAlive: true, maxSockets: readers });

function get() {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'GET',
        path: '/v0/inboxes',
        agent,
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
await Promise.all(Array.from({ length: readers }, reader));
agent.destroy();
parentPort.postMessage({ latencies, errors });
