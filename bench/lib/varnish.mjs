import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * A private varnishd, for the HTTP-cache test (test/support/varnish.ts gives it types) and the
 * property bench's writecost suite alike: its own working directory (`-n`) under a temp dir, a
 * loopback port, no management port, no jail, the VCL of test/fixtures/varnish.vcl in front of
 * one backend. The system's Varnish service is never touched.
 */
export const VARNISHD = '/usr/sbin/varnishd';
export const hasVarnish = existsSync(VARNISHD);
const VCL = path.resolve(import.meta.dirname, '../../test/fixtures/varnish.vcl');
const run = promisify(execFile);

/** Whether a HEAD request to the port is answered with Varnish's `X-Varnish` header. */
const answersAsVarnish = (port) =>
  new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'HEAD', path: '/', timeout: 2_000 }, (res) => {
      res.resume();
      resolve(res.headers['x-varnish'] !== undefined);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });

/** Starts varnishd on `port` in front of `backendPort`; resolves once it accepts connections. */
export async function startVarnish({ port, backendPort }) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'varnish-'));
  const vcl = path.join(dir, 'private.vcl');
  writeFileSync(
    vcl,
    readFileSync(VCL, 'utf8').replace(
      /^vcl 4\.1;/m,
      `vcl 4.1;\nbackend default { .host = "127.0.0.1"; .port = "${backendPort}"; }`,
    ),
  );
  const workdir = path.join(dir, 'n');
  const child = spawn(
    VARNISHD,
    ['-F', '-n', workdir, '-j', 'none', '-a', `127.0.0.1:${port}`, '-T', 'none', '-f', vcl, '-s', 'malloc,64m'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (d) => (output += d.toString()));
  child.stderr.on('data', (d) => (output += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`varnishd exited (${child.exitCode}):\n${output}`);
    // Varnish itself must answer (its X-Varnish header), not whatever else may listen there.
    if ((await answersAsVarnish(port)) && child.exitCode === null) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`varnishd did not listen on ${url} within 30 s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    /** Counters of varnishstat (MAIN.*), e.g. `cache_hit`, `cache_miss`, `backend_req`, `bans`. */
    async stats() {
      const { stdout } = await run('varnishstat', ['-n', workdir, '-1', '-j', '-f', 'MAIN.*']);
      const parsed = JSON.parse(stdout);
      const counters = parsed.counters ?? parsed;
      const out = {};
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
