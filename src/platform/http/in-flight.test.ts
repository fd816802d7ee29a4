import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { buildHttpApp, inFlightOf, CLOSE_GRACE_MS } from './app.js';

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** Sends a request over a raw socket and hangs up before any answer. */
async function requestAndHangUp(port: number, path: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`, () => {
        setTimeout(() => {
          socket.destroy();
          resolve();
        }, 50);
      });
    });
    socket.on('error', reject);
  });
}

describe('closing with handlers still running', () => {
  it('app.close() waits for a handler whose client has gone, and the handler finishes', async () => {
    const app = buildHttpApp({ name: 'test', logLevel: 'silent', ready: async () => {} });
    const gate = deferred();
    const started = deferred();
    let finished = false;
    app.get('/slow', async () => {
      started.resolve();
      await gate.promise;
      finished = true;
      return { ok: true };
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as { port: number }).port;
    await requestAndHangUp(port, '/slow');
    await started.promise;

    let closed = false;
    const closing = app.close().then(() => (closed = true));
    await new Promise((r) => setTimeout(r, 100));
    expect(closed).toBe(false);
    gate.resolve();
    await closing;
    expect(finished).toBe(true);
  });

  it('app.close() cuts connections that never sent a whole request after a grace, instead of waiting for their timeout', async () => {
    const app = buildHttpApp({ name: 'test', logLevel: 'silent', ready: async () => {} });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as { port: number }).port;
    // A client of another protocol that waits for a greeting (an SMTP client that found this
    // port), and one that stopped halfway through its request line.
    const clients = ['', 'GET /half'].map((sent) => {
      const socket = connect(port, '127.0.0.1', () => {
        if (sent) socket.write(sent);
      });
      socket.on('error', () => {});
      return { socket, ended: new Promise<void>((resolve) => socket.on('close', () => resolve())) };
    });
    await new Promise((r) => setTimeout(r, 100));
    const start = Date.now();
    await app.close();
    const took = Date.now() - start;
    await Promise.all(clients.map((c) => c.ended));
    // Cut after the grace; Node's own close would wait for their 60 s timeouts (the test's ends first).
    expect(took).toBeGreaterThanOrEqual(CLOSE_GRACE_MS - 100);
  }, 20_000);

  it('tracked work outside handlers is waited for too, and idle() gives up after its timeout', async () => {
    const app = buildHttpApp({ name: 'test', logLevel: 'silent', ready: async () => {} });
    const tracker = inFlightOf(app);
    const gate = deferred();
    const work = tracker.track(gate.promise);
    const start = Date.now();
    await tracker.idle(50);
    expect(Date.now() - start).toBeGreaterThanOrEqual(45);
    let idle = false;
    const waiting = tracker.idle(5_000).then(() => (idle = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(idle).toBe(false);
    gate.resolve();
    await work;
    await waiting;
    expect(idle).toBe(true);
    await tracker.idle(10);
  });

  it('a handler that throws synchronously is counted out again', async () => {
    const app = buildHttpApp({ name: 'test', logLevel: 'silent', ready: async () => {} });
    app.get('/boom', () => {
      throw new Error('boom');
    });
    const res = await app.inject({ url: '/boom' });
    expect(res.statusCode).toBe(500);
    const start = Date.now();
    await inFlightOf(app).idle(5_000);
    expect(Date.now() - start).toBeLessThan(1_000);
    await app.close();
  });
});
