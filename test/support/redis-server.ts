import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { freePort } from './ports.js';

/**
 * A redis-server of the test's own on a spare loopback port, which the test may stop, freeze
 * (SIGSTOP) and start again: the shared instance on 6379 is never touched.
 */
export interface PrivateRedis {
  readonly port: number;
  readonly url: string;
  /** Starts it (again), on the same port; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it (SIGKILL: as a crash); resolves once the port is closed. */
  stop(): Promise<void>;
  /** SIGSTOP / SIGCONT: connections stay open but nothing answers. */
  freeze(): void;
  thaw(): void;
}

/** A port no `listen(0)` of another test can take before redis-server binds it (support/ports.ts). */
export const sparePort = freePort;

async function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.write('PING\r\n');
    });
    socket.once('data', (d) => {
      socket.destroy();
      resolve(d.toString().startsWith('+PONG'));
    });
    socket.once('error', () => resolve(false));
  });
}

export async function privateRedis(): Promise<PrivateRedis> {
  const port = await sparePort();
  let child: ChildProcess | undefined;
  const self: PrivateRedis = {
    port,
    url: `redis://127.0.0.1:${port}`,
    async start() {
      child = spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'],
        { stdio: 'ignore' },
      );
      for (let i = 0; i < 200; i++) {
        if (await answers(port)) return;
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error(`redis-server on port ${port} did not start`);
    },
    async stop() {
      const c = child;
      child = undefined;
      if (!c || c.exitCode !== null) return;
      const exited = new Promise((r) => c.once('exit', r));
      c.kill('SIGCONT');
      c.kill('SIGKILL');
      await exited;
    },
    freeze() {
      child?.kill('SIGSTOP');
    },
    thaw() {
      child?.kill('SIGCONT');
    },
  };
  await self.start();
  return self;
}
