import WebSocket from 'ws';

/**
 * A child process of `bench/websocket-run.mjs` holding its share of the WebSocket clients, so
 * that the clients' reading of 1,000 sockets is not serialized in the one process that also
 * drives the sends. Spoken over the IPC channel:
 *
 * - `{ connect: { url, count, subscribe } }` opens `count` clients (100 at a time), each sending
 *   `subscribe`; answered `{ connected: count }` once every one has its `subscribed` frame.
 * - `{ expect: marker }`: the next frames that contain `marker` (matched on the bytes, without
 *   parsing: the client's cost stays out of the figures) are timed (answered `{ expecting }` at
 *   once); once every client has one,
 *   `{ arrived: [ms…], createdAt }`: the arrival times on the monotonic clock every process of
 *   the machine shares (`process.hrtime`), and the message's `created_at` (parsed from the first
 *   frame only).
 * - `{ close: true }`: terminates the clients and exits.
 */
const mono = () => Number(process.hrtime.bigint()) / 1e6;
const clients = [];
let expecting = null;

function connect({ url, subscribe }) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    let subscribed = false;
    ws.on('message', (data) => {
      const at = mono();
      if (!subscribed) {
        subscribed = true;
        return resolve();
      }
      if (expecting && data.includes(expecting.marker)) expecting.arrived(at, data);
    });
    ws.once('open', () => ws.send(JSON.stringify(subscribe)));
    ws.once('error', reject);
    clients.push(ws);
  });
}

process.on('message', async (m) => {
  if (m.connect) {
    for (let i = 0; i < m.connect.count; i += 100)
      await Promise.all(Array.from({ length: Math.min(100, m.connect.count - i) }, () => connect(m.connect)));
    process.send({ connected: clients.length });
  } else if (m.expect) {
    const arrived = [];
    let createdAt = NaN;
    expecting = {
      marker: Buffer.from(m.expect),
      arrived(at, data) {
        if (!arrived.length) createdAt = Date.parse(JSON.parse(data.toString()).message.created_at);
        arrived.push(at);
        if (arrived.length === clients.length) {
          expecting = null;
          process.send({ arrived, createdAt });
        }
      },
    };
    process.send({ expecting: m.expect });
  } else if (m.close) {
    for (const ws of clients) ws.terminate();
    process.exit(0);
  }
});
