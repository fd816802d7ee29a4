import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from './harness.mjs';

/**
 * A private varnishd for a bench run, as the HTTP-cache test starts one: its own -n directory,
 * a free loopback port, no management port, test/fixtures/varnish.vcl in front of `backendPort`.
 * Null when varnishd is not installed.
 */
export const VARNISHD = '/usr/sbin/varnishd';

export async function startVarnish({ port, backendPort }) {
  if (!existsSync(VARNISHD)) return null;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'varnish-bench-'));
  const vcl = path.join(dir, 'bench.vcl');
  writeFileSync(
    vcl,
    readFileSync(path.join(ROOT, 'test/fixtures/varnish.vcl'), 'utf8').replace(
      /^vcl 4\.1;/m,
      `vcl 4.1;\nbackend default { .host = "127.0.0.1"; .port = "${backendPort}"; }`,
    ),
  );
  const child = spawn(
    VARNISHD,
    [
      '-F',
      '-n',
      path.join(dir, 'n'),
      '-j',
      'none',
      '-a',
      `127.0.0.1:${port}`,
      '-T',
      'none',
      '-f',
      vcl,
      '-s',
      'malloc,64m',
    ],
    { stdio: 'ignore' },
  );
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`varnishd exited (${child.exitCode})`);
    const ok = await new Promise((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => (socket.destroy(), resolve(true)));
      socket.on('error', () => resolve(false));
    });
    if (ok) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('varnishd did not listen within 30 s');
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url: `http://127.0.0.1:${port}`,
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
