import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { privateRedis, type PrivateRedis } from '../support/redis-server.js';

async function until(check: () => Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.each(dialects)('%s: the inbox API while Redis is down', (dialect) => {
  let redis: PrivateRedis;
  let server: InboxTestServer;
  beforeAll(async () => {
    redis = await privateRedis();
    server = await startInboxServer({
      dialect,
      env: { REDIS_URL: redis.url, INBOX_RATE_LIMIT_PER_MINUTE: '1000', INBOX_MANAGEMENT_PORT: '0' },
    });
  });
  afterAll(async () => {
    await server?.close();
    redis.thaw();
    await redis.stop();
  });

  const readyz = async () => {
    const res = await fetch(`${server.url}/readyz`);
    return { status: res.status, body: (await res.json()) as unknown };
  };

  it('keeps answering requests (counted per process), reports redis degraded in /readyz, and recovers when Redis returns', async () => {
    const { key } = await server.createKey();
    const client = server.client(key);
    await client.inboxes.create({ username: 'redis-outage' });
    expect(await readyz()).toEqual({ status: 200, body: { status: 'ready', checks: { database: 'ok', redis: 'ok' } } });
    const metric = async (name: string) =>
      Number(
        new RegExp(`^${name} (\\d+)`, 'm').exec(
          await (await fetch(`${server.service.managementUrl}/metrics`)).text(),
        )?.[1] ?? 'NaN',
      );
    expect(await metric('redis_up')).toBe(1);
    expect(await metric('rate_limit_fallback_total')).toBe(0);

    await redis.stop();
    for (let i = 0; i < 5; i++) {
      const list = await client.inboxes.list();
      expect(list.inboxes.map((i) => i.inboxId)).toEqual([expect.stringMatching(/^redis-outage@/)]);
    }
    const res = await fetch(`${server.url}/v0/inboxes`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('ratelimit-limit')).toBe('1000');
    expect(await metric('redis_up')).toBe(0);
    expect(await metric('rate_limit_fallback_total')).toBeGreaterThanOrEqual(6);
    expect(await readyz()).toEqual({
      status: 200,
      body: { status: 'degraded', checks: { database: 'ok', redis: 'degraded' } },
    });

    await redis.start();
    await until(
      async () => (await client.inboxes.list(), (await readyz()).body as { status: string }).status === 'ready',
      'Redis to be used again',
    );
    expect(await readyz()).toEqual({ status: 200, body: { status: 'ready', checks: { database: 'ok', redis: 'ok' } } });
  });
});
