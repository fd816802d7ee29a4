import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runEntry, waitFor } from '../support/process.js';

const dir = mkdtempSync(path.join(tmpdir(), 'property-process-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const run = (env: Record<string, string>) => runEntry('src/property/main.ts', env);

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
