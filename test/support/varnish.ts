import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * A private Varnish for one test file: its own working directory (`-n`) under a temp dir, a free
 * loopback port, no management port, no jail, the VCL of test/fixtures/varnish.vcl in front of
 * one backend. The system's Varnish service is never touched.
 */

export const VARNISHD = '/usr/sbin/varnishd';
export const hasVarnish = existsSync(VARNISHD);
const VCL = path.resolve(import.meta.dirname, '../fixtures/varnish.vcl');
const run = promisify(execFile);

export interface PrivateVarnish {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Counters of varnishstat (MAIN.*), e.g. `cache_hit`, `cache_miss`, `backend_req`, `bans`. */
  stats(): Promise<Record<string, number>>;
  close(): Promise<void>;
}

/** A port that was free a moment ago (the service must know the cache's port before Varnish starts). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export async function startVarnish(options: { port: number; backendPort: number }): Promise<PrivateVarnish> {
  const dir = mkdtempSync(path.join(tmpdir(), 'varnish-test-'));
  const vcl = path.join(dir, 'test.vcl');
  const fixture = readFileSync(VCL, 'utf8').replace(
    /^vcl 4\.1;/m,
    `vcl 4.1;\nbackend default { .host = "127.0.0.1"; .port = "${options.backendPort}"; }`,
  );
  writeFileSync(vcl, fixture);
  const workdir = path.join(dir, 'n');
  const child: ChildProcess = spawn(
    VARNISHD,
    ['-F', '-n', workdir, '-j', 'none', '-a', `127.0.0.1:${options.port}`, '-T', 'none', '-f', vcl, '-s', 'malloc,64m'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const url = `http://127.0.0.1:${options.port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`varnishd exited (${child.exitCode}):\n${output}`);
    const ok = await new Promise<boolean>((resolve) => {
      const socket = net.connect(options.port, '127.0.0.1', () => (socket.destroy(), resolve(true)));
      socket.on('error', () => resolve(false));
    });
    if (ok) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`varnishd did not listen on ${url} within 30 s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    async stats() {
      const { stdout } = await run('varnishstat', ['-n', workdir, '-1', '-j', '-f', 'MAIN.*']);
      const parsed = JSON.parse(stdout) as { counters?: Record<string, { value: number }> } & Record<
        string,
        { value: number }
      >;
      const counters = parsed.counters ?? parsed;
      const out: Record<string, number> = {};
      for (const [name, c] of Object.entries(counters))
        if (name.startsWith('MAIN.') && typeof c?.value === 'number') out[name.slice(5)] = c.value;
      return out;
    },
    async close() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
