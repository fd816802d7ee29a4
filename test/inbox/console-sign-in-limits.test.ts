import http from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createInboxTestDatabase,
  dialects,
  startInboxServer,
  runInboxProcess,
  type InboxTestDatabase,
} from '../support/inbox-server.js';
import { privateRedis } from '../support/redis-server.js';
import { expectError } from './fixtures.js';

/** POST /console/session from a chosen loopback address (127.0.0.0/8 is all this host's). */
function signInFrom(
  base: string,
  localAddress: string,
  apiKey: string,
  extraHeaders: Record<string, string> = {},
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- wire bodies are checked key by key
): Promise<{ status: number; headers: Headers; body: any; bytes: Buffer }> {
  const url = new URL('/console/session', base);
  const payload = JSON.stringify({ api_key: apiKey });
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        localAddress,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...extraHeaders },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const bytes = Buffer.concat(chunks);
          const headers = new Headers();
          for (const [k, v] of Object.entries(res.headers))
            for (const value of Array.isArray(v) ? v : v === undefined ? [] : [v]) headers.append(k, value);
          const text = bytes.toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            headers,
            body: text.startsWith('{') ? JSON.parse(text) : text,
            bytes,
          });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/**
 * Failed console sign-ins are limited per client address (issue 30): INBOX_CONSOLE_SIGNIN_FAILURES
 * failures in 15 minutes, then 429 in the service's error format with Retry-After, a valid key
 * included, until the window ends; other addresses and successful sign-ins are not affected. Each
 * failure is logged with the address, never with what was typed. The service runs as
 * `npm run start:inbox` runs it, so that its real log output is read.
 */
describe.each(dialects)('%s: console sign-in failure limits', (dialect) => {
  const databases: InboxTestDatabase[] = [];
  afterAll(async () => {
    for (const d of databases) await d.drop();
  });

  it('refuses an address after its failures (429, Retry-After), a valid key too, and logs them without the key', async () => {
    const database = createInboxTestDatabase(dialect);
    databases.push(database);
    const setup = await startInboxServer({ database });
    let key: string;
    try {
      key = (await setup.createKey()).key;
    } finally {
      await setup.close();
    }
    // Wrong keys that look like keys, one of them a near miss of the real one: none may reach the log.
    const wrong = [
      `am_${'x'.repeat(40)}`,
      `${key.slice(0, -1)}${key.endsWith('a') ? 'b' : 'a'}`,
      'am_third-guess-1234',
    ];

    const { run: service, base } = await runInboxProcess(database, { INBOX_CONSOLE_SIGNIN_FAILURES: '3' });
    const output = () => service.output();
    try {
      const deadline = Date.now() + 90_000;

      // Successful sign-ins are not failures: any number of them.
      for (let i = 0; i < 4; i++) expect((await signInFrom(base, '127.0.0.3', key)).status).toBe(200);

      const left: number[] = [];
      for (const guess of wrong) {
        const answer = await signInFrom(base, '127.0.0.2', guess);
        expectError(answer, 401, 'authentication_error', 'INVALID_API_KEY');
        left.push(answer.body.error.details.sign_in_attempts_left);
      }
      expect(left).toEqual([2, 1, 0]);
      // The budget is spent: a wrong key and the right one alike are refused without being tried.
      for (const tried of ['am_fourth-guess', key]) {
        const refused = await signInFrom(base, '127.0.0.2', tried);
        expectError(refused, 429, 'rate_limit_exceeded', 'TOO_MANY_SIGN_IN_FAILURES');
        const retryAfter = Number(refused.headers.get('retry-after'));
        expect(retryAfter).toBeGreaterThan(0);
        expect(retryAfter).toBeLessThanOrEqual(15 * 60);
        expect(refused.body.error.details.retry_after_seconds).toBe(retryAfter);
        expect(refused.headers.get('set-cookie')).toBeNull();
      }
      // Another address is not affected.
      expect((await signInFrom(base, '127.0.0.4', key)).status).toBe(200);

      while (output().split('console sign-in refused').length < 3) {
        if (Date.now() > deadline) throw new Error(`no log lines:\n${output()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
    }
    const failed = output()
      .split('\n')
      .filter((l) => l.includes('"console sign-in failed"'));
    expect(failed).toHaveLength(3);
    for (const line of failed) expect(JSON.parse(line)).toMatchObject({ level: 40, client: '127.0.0.2' });
    expect(
      output()
        .split('\n')
        .filter((l) => l.includes('"console sign-in refused')),
    ).toHaveLength(2);
    // Neither the real key nor any guess (nor a long piece of one) is anywhere in the output.
    for (const piece of [key, key.slice(3, 20), ...wrong, ...wrong.map((w) => w.slice(3, 16)), 'am_fourth-guess'])
      expect(output()).not.toContain(piece);
    // A service start compiling TypeScript as it loads: room on a busy machine.
  }, 120_000);

  it('shares the budget between instances through Redis: failures on one are counted on the other', async () => {
    const redis = await privateRedis();
    const database = createInboxTestDatabase(dialect);
    databases.push(database);
    const env = { REDIS_URL: redis.url, INBOX_CONSOLE_SIGNIN_FAILURES: '2' };
    const one = await startInboxServer({ database, env });
    const two = await startInboxServer({ database, env: { ...env, INBOX_ROLES: 'api' } });
    try {
      const { key } = await one.createKey();
      expectError(
        await signInFrom(one.url, '127.0.0.5', 'am_wrong-one'),
        401,
        'authentication_error',
        'INVALID_API_KEY',
      );
      expectError(
        await signInFrom(two.url, '127.0.0.5', 'am_wrong-two'),
        401,
        'authentication_error',
        'INVALID_API_KEY',
      );
      for (const instance of [one, two])
        expectError(
          await signInFrom(instance.url, '127.0.0.5', key),
          429,
          'rate_limit_exceeded',
          'TOO_MANY_SIGN_IN_FAILURES',
        );
      expect((await signInFrom(two.url, '127.0.0.6', key)).status).toBe(200);
    } finally {
      await two.close();
      await one.close();
      await redis.stop();
    }
  });

  it('behind a trusted proxy (INBOX_TRUST_PROXY) counts the forwarded client address and marks the cookie Secure; without it, neither', async () => {
    const database = createInboxTestDatabase(dialect);
    databases.push(database);
    const env = { INBOX_CONSOLE_SIGNIN_FAILURES: '2' };
    const proxied = await startInboxServer({ database, env: { ...env, INBOX_TRUST_PROXY: 'true' } });
    const direct = await startInboxServer({ database, env: { ...env, INBOX_ROLES: 'api' } });
    try {
      const { key } = await proxied.createKey();
      const from = (client: string) => ({ 'x-forwarded-for': `${client}, 10.0.0.1`, 'x-forwarded-proto': 'https' });
      /** Two wrong keys from `socket`, each saying it comes from the next of `clients`; then the right key from the last. */
      const spend = async (url: string, socket: string, clients: readonly string[]) => {
        for (const [i, client] of clients.slice(0, 2).entries())
          expectError(
            await signInFrom(url, socket, `am_wrong-${i}`, from(client)),
            401,
            'authentication_error',
            'INVALID_API_KEY',
          );
        return signInFrom(url, socket, key, from(clients[2] as string));
      };

      // Trusted: the budget is the forwarded client's, so two clients behind one proxy have their own.
      expectError(
        await spend(proxied.url, '127.0.0.7', ['203.0.113.7', '203.0.113.7', '203.0.113.7']),
        429,
        'rate_limit_exceeded',
        'TOO_MANY_SIGN_IN_FAILURES',
      );
      const other = await signInFrom(proxied.url, '127.0.0.7', key, from('203.0.113.8'));
      expect(other.status).toBe(200);
      expect(other.headers.get('set-cookie')).toMatch(/; Secure(;|$)/);
      // Without the proxy's headers the same instance sees the socket's address and plain http.
      const plain = await signInFrom(proxied.url, '127.0.0.7', key);
      expect(plain.status).toBe(200);
      expect(plain.headers.get('set-cookie')).not.toMatch(/Secure/);

      // Not trusted: the headers are ignored, so three "clients" on one socket address share its budget.
      expectError(
        await spend(direct.url, '127.0.0.8', ['203.0.113.9', '203.0.113.10', '203.0.113.11']),
        429,
        'rate_limit_exceeded',
        'TOO_MANY_SIGN_IN_FAILURES',
      );
      const untrusted = await signInFrom(direct.url, '127.0.0.9', key, from('203.0.113.11'));
      expect(untrusted.status).toBe(200);
      expect(untrusted.headers.get('set-cookie')).not.toMatch(/Secure/);
    } finally {
      await direct.close();
      await proxied.close();
    }
  });
});
