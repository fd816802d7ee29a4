import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const tsx = path.join(root, 'node_modules/.bin/tsx');
const dir = mkdtempSync(path.join(tmpdir(), 'property-process-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Run {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function run(env: Record<string, string>): Run {
  const child = spawn(tsx, ['src/property/main.ts'], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

async function waitFor(r: Run, pattern: RegExp, ms = 20_000): Promise<RegExpMatchArray> {
  const deadline = Date.now() + ms;
  for (;;) {
    const m = pattern.exec(r.output());
    if (m) return m;
    if (Date.now() > deadline || r.child.exitCode !== null)
      throw new Error(`did not see ${pattern} in:\n${r.output()}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

describe('property service process', () => {
  it('refuses to start on bad configuration, naming every bad variable', async () => {
    const r = run({ PROPERTY_PORT: 'eighty', PROPERTY_HYDRA_PREFIX: 'maybe', DATA_DIR: dir });
    expect(await r.exited).toBe(78);
    expect(r.output()).toContain('PROPERTY_PORT must be a port number');
    expect(r.output()).toContain('PROPERTY_HYDRA_PREFIX must be true or false');
  });

  it('serves, keeps API keys out of its logs, and closes gracefully on SIGTERM', async () => {
    const r = run({ PROPERTY_PORT: '0', HOST: '127.0.0.1', DATA_DIR: dir, LOG_LEVEL: 'info' });
    try {
      const [, url] = await waitFor(r, /Property service: (http:\/\/\S+)\/api/);
      const created = await fetch(`${url}/api/users`, {
        method: 'POST',
        headers: { 'content-type': 'application/ld+json' },
        body: JSON.stringify({ name: 'Log', email: 'log@example.org' }),
      });
      expect(created.status).toBe(201);
      const { apiKey } = (await created.json()) as { apiKey: string };
      const me = await fetch(`${url}/api/users`, { headers: { 'x-api-key': apiKey } });
      expect(me.status).toBe(200);
      await waitFor(r, /"statusCode":200/);
      r.child.kill('SIGTERM');
      expect(await r.exited).toBe(0);
      expect(r.output()).toContain('SIGTERM received, closing');
      expect(r.output()).toContain('"url":"/api/users"');
      expect(r.output()).not.toContain(apiKey);
    } finally {
      if (r.child.exitCode === null) r.child.kill('SIGKILL');
    }
  });
});
