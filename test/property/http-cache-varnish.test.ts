import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/platform/config/config.js';
import { propertyConfigSpec } from '../../src/property/property.config.js';
import { api, type ApiResponse } from '../support/http.js';
import { dialects, startPropertyServer, type PropertyTestServer } from '../support/property-server.js';
import { freePort, hasVarnish, startVarnish, VARNISHD, type PrivateVarnish } from '../support/varnish.js';
import { createImmobilie, type Item } from './fixtures.js';

/**
 * HTTP caching (issue 31 item 2, decision 0047) proven with a real Varnish: a private varnishd
 * on a free loopback port with test/fixtures/varnish.vcl in front of the property service, whose
 * PROPERTY_HTTP_CACHE_PURGE_URLS names it. Public reads are served from Varnish, a write makes
 * the next read fresh, private answers never reach another key.
 */

if (!hasVarnish)
  console.warn(
    `http-cache-varnish.test: the Varnish parts are skipped, ${VARNISHD} not found (Debian: apt-get install -y --no-install-recommends varnish)`,
  );

const tokens = (value: string | null): string[] =>
  (value ?? '')
    .split(',')
    .map((t) => t.trim().toLowerCase())
    .filter(Boolean);

const PUBLIC = 'public, max-age=60, s-maxage=3600';

describe.each(dialects)('%s: HTTP cache headers', (dialect) => {
  let server: PropertyTestServer;
  let userKey: string;
  let userId: number;
  let item: Item;

  beforeAll(async () => {
    server = await startPropertyServer({ dialect });
    const user = await server.createAccount('user');
    userKey = user.key;
    userId = user.id;
    item = await createImmobilie(server.url, userKey, { bundesland: '/api/bundeslands/13' });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('a public item: shared Cache-Control, Vary without the key, its IRI as tag', async () => {
    for (const key of [undefined, userKey]) {
      const res = await api(server.url, '/api/bundeslands/3', { key });
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe(PUBLIC);
      expect(tokens(res.headers.get('vary'))).toEqual(['accept']);
      expect(res.headers.get('cache-tags')).toBe('/api/bundeslands/3');
    }
  });

  it("a public collection: the collection's IRI and each member's", async () => {
    const res = await api(server.url, '/api/heizungstyps?itemsPerPage=3');
    expect(res.headers.get('cache-control')).toBe(PUBLIC);
    expect(res.headers.get('cache-tags')).toBe(
      '/api/heizungstyps,/api/heizungstyps/1,/api/heizungstyps/2,/api/heizungstyps/3',
    );
  });

  it('a private answer: no-cache, private, Vary names the key, tags name the references too', async () => {
    const res = await api(server.url, item['@id'] as string, { key: userKey });
    expect(res.headers.get('cache-control')).toBe('no-cache, private');
    expect(tokens(res.headers.get('vary'))).toEqual(['accept', 'x-api-key']);
    const id = String(item['@id']).split('/').pop();
    expect(tokens(res.headers.get('cache-tags'))).toEqual(
      expect.arrayContaining([`/api/immobilies/${id}`, `/api/users/${userId}`, '/api/bundeslands/13']),
    );
    const list = await api(server.url, '/api/immobilies', { key: userKey });
    expect(list.headers.get('cache-control')).toBe('no-cache, private');
    expect(tokens(list.headers.get('cache-tags'))[0]).toBe('/api/immobilies');
  });

  it('errors and writes stay private and carry no tags', async () => {
    const missing = await api(server.url, '/api/bundeslands/999');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('cache-control')).toBe('no-cache, private');
    expect(missing.headers.get('cache-tags')).toBeNull();
    const badKey = await api(server.url, '/api/bundeslands/3', { key: 'nope' });
    expect(badKey.status).toBe(401);
    expect(badKey.headers.get('cache-control')).toBe('no-cache, private');
  });

  it('a conditional read of a public item answers 304 with the same cache headers', async () => {
    const first = await api(server.url, '/api/bundeslands/4');
    const again = await api(server.url, '/api/bundeslands/4', {
      headers: { 'if-none-match': first.headers.get('etag') ?? '' },
    });
    expect(again.status).toBe(304);
    expect(again.headers.get('cache-control')).toBe(PUBLIC);
  });
});

describe.each(dialects)('%s: behind a real Varnish', (dialect) => {
  let server: PropertyTestServer | undefined;
  let varnish: PrivateVarnish | undefined;
  let technical: string;
  let alice: { key: string; id: number };
  let bob: { key: string; id: number };
  const via = (path: string, options: Parameters<typeof api>[2] = {}) => api(varnish?.url ?? '', path, options);

  beforeAll(async () => {
    if (!hasVarnish) return;
    const port = await freePort();
    server = await startPropertyServer({
      dialect,
      env: { PROPERTY_HTTP_CACHE_PURGE_URLS: `http://127.0.0.1:${port}` },
    });
    varnish = await startVarnish({ port, backendPort: Number(new URL(server.url).port) });
    technical = (await server.createAccount('technical')).key;
    alice = await server.createAccount('user');
    bob = await server.createAccount('user');
  });
  afterAll(async () => {
    await varnish?.close();
    await server?.close();
  });

  it.skipIf(!hasVarnish)('public reads are served from Varnish: backend requests and hit ratio', async () => {
    const v = varnish as PrivateVarnish;
    const before = await v.stats();
    const paths = [
      '/api/bundeslands',
      '/api/heizungstyps',
      ...Array.from({ length: 16 }, (_, i) => `/api/bundeslands/${i + 1}`),
    ];
    const variants = [{}, { key: alice.key }, { key: bob.key }, { accept: 'application/json' }];
    let reads = 0;
    let hits = 0;
    for (let round = 0; round < 5; round++) {
      for (const path of paths) {
        for (const options of variants) {
          const res = await via(path, options);
          expect(res.status, `${path} ${res.text}`).toBe(200);
          reads++;
          if (res.headers.get('x-cache') === 'HIT') hits++;
        }
      }
    }
    const after = await v.stats();
    const backend = (after.backend_req ?? 0) - (before.backend_req ?? 0);
    // One backend request per path and format (the key is not part of a public answer's variant).
    expect(backend).toBe(paths.length * 2);
    expect(hits).toBe(reads - backend);
    console.log(
      `${dialect}: public reads through Varnish: ${reads} reads, ${backend} backend requests, ${hits} hits, hit ratio ${(hits / reads).toFixed(3)}`,
    );
  });

  it.skipIf(!hasVarnish)('every write makes the next read fresh: 0 stale reads', async () => {
    const v = varnish as PrivateVarnish;
    let stale = 0;
    let reads = 0;
    let hitsBeforeWrites = 0;
    const created = await via('/api/heizungstyps', { method: 'POST', key: technical, body: { name: 'Cache 0' } });
    expect(created.status).toBe(201);
    const iri = (created.body as Item)['@id'] as string;
    const collection = '/api/heizungstyps?itemsPerPage=100';
    for (let i = 1; i <= 20; i++) {
      // Warm: the item and the collection are in the cache (the second read is a hit).
      for (const path of [iri, collection]) {
        await via(path);
        if ((await via(path)).headers.get('x-cache') === 'HIT') hitsBeforeWrites++;
      }
      const name = `Cache ${i}`;
      const written = await via(iri, { method: 'PATCH', key: technical, body: { name } });
      expect(written.status).toBe(200);
      const item = await via(iri);
      const list = await via(collection);
      reads += 2;
      if ((item.body as Item).name !== name) stale++;
      const members = (list.body as { 'hydra:member': Item[] })['hydra:member'];
      if (members.find((m) => m['@id'] === iri)?.name !== name) stale++;
    }
    // A new member appears in the cached collection, a deleted one leaves it and its item is gone.
    const added = await via('/api/heizungstyps', { method: 'POST', key: technical, body: { name: 'Cache new' } });
    const addedIri = (added.body as Item)['@id'] as string;
    const names = async () =>
      ((await via(collection)).body as { 'hydra:member': Item[] })['hydra:member'].map((m) => m['@id']);
    reads++;
    if (!(await names()).includes(addedIri)) stale++;
    expect((await via(addedIri)).status).toBe(200);
    expect((await via(addedIri, { method: 'DELETE', key: technical })).status).toBe(204);
    reads += 2;
    if ((await via(addedIri)).status !== 404) stale++;
    if ((await names()).includes(addedIri)) stale++;
    const bans = (await v.stats()).bans_added ?? (await v.stats()).bans;
    console.log(
      `${dialect}: writes through Varnish: 23 writes, ${reads} reads right after them, ${stale} stale; ${hitsBeforeWrites} of 40 warm reads were hits; bans ${bans}`,
    );
    expect(hitsBeforeWrites).toBe(40);
    expect(stale).toBe(0);
  });

  it.skipIf(!hasVarnish)(
    'the control: an instance without the purge setting leaves the cache stale (every instance needs it)',
    async () => {
      const item = '/api/bundeslands/7';
      const cached = await via(item);
      expect((await via(item)).headers.get('x-cache')).toBe('HIT');
      const other = await startPropertyServer({
        dialect,
        env: { PROPERTY_DATABASE_URL: (server as PropertyTestServer).databaseUrl },
      });
      try {
        const name = `${(cached.body as Item).name as string} (ohne Purge)`;
        const written = await api(other.url, item, { method: 'PATCH', key: technical, body: { name } });
        expect(written.status).toBe(200);
        const read = await via(item);
        expect(read.headers.get('x-cache')).toBe('HIT');
        expect((read.body as Item).name).toBe((cached.body as Item).name);
        // The instance behind the cache purges on its own write: fresh again.
        await via(item, { method: 'PATCH', key: technical, body: { name } });
        expect(((await via(item)).body as Item).name).toBe(name);
      } finally {
        await other.close();
      }
    },
  );

  it.skipIf(!hasVarnish)("private answers pass Varnish: two keys, none gets the other's answer", async () => {
    const v = varnish as PrivateVarnish;
    const bansBefore = (await v.stats()).bans;
    const mine = await createImmobilie(varnish?.url ?? '', alice.key, { adresse: 'Alice 1' });
    const theirs = await createImmobilie(varnish?.url ?? '', bob.key, { adresse: 'Bob 1' });
    const before = await v.stats();
    // Nothing of a property can be in a shared cache: its writes purge nothing (decision 0047).
    expect(before.bans).toBe(bansBefore);
    let crossKey = 0;
    let hits = 0;
    const rounds = 10;
    for (let round = 0; round < rounds; round++) {
      for (const [who, own, other] of [
        [alice, mine, theirs],
        [bob, theirs, mine],
      ] as const) {
        const list: ApiResponse = await via('/api/immobilies', { key: who.key });
        const ids = (list.body as { 'hydra:member': Item[] })['hydra:member'].map((m) => m['@id']);
        if (!ids.includes(own['@id']) || ids.includes(other['@id'])) crossKey++;
        const item = await via(own['@id'] as string, { key: who.key });
        if ((item.body as Item).adresse !== own.adresse) crossKey++;
        const foreign = await via(other['@id'] as string, { key: who.key });
        if (foreign.status !== 404) crossKey++;
        for (const res of [list, item, foreign]) if (res.headers.get('x-cache') === 'HIT') hits++;
      }
    }
    const after = await v.stats();
    const backend = (after.backend_req ?? 0) - (before.backend_req ?? 0);
    console.log(
      `${dialect}: private reads through Varnish with two keys: ${rounds * 6} reads, ${backend} backend requests, ${hits} hits, ${crossKey} answers of the other key`,
    );
    expect(crossKey).toBe(0);
    expect(hits).toBe(0);
    expect(backend).toBe(rounds * 6);
  });
});

describe('settings of the HTTP cache', () => {
  it('bad purge URLs and lifetimes are refused by the config loader, each named', () => {
    expect(() =>
      loadConfig(propertyConfigSpec, {
        PROPERTY_HTTP_CACHE_PURGE_URLS: 'http://varnish:6081,ftp://cache',
        PROPERTY_HTTP_CACHE_SHARED_MAX_AGE: '-1',
      }),
    ).toThrow(ConfigError);
    try {
      loadConfig(propertyConfigSpec, {
        PROPERTY_HTTP_CACHE_PURGE_URLS: 'not a url',
        PROPERTY_HTTP_CACHE_MAX_AGE: 'soon',
      });
    } catch (err) {
      expect((err as ConfigError).problems).toEqual([
        'PROPERTY_HTTP_CACHE_MAX_AGE must be an integer from 0 to 31536000, got "soon"',
        'PROPERTY_HTTP_CACHE_PURGE_URLS must be a comma-separated list of URLs, got "not a url"',
      ]);
    }
    expect(loadConfig(propertyConfigSpec, {}).httpCachePurgeUrls).toEqual([]);
  });

  it('lifetimes come from the settings', async () => {
    const server = await startPropertyServer({
      env: { PROPERTY_HTTP_CACHE_MAX_AGE: '0', PROPERTY_HTTP_CACHE_SHARED_MAX_AGE: '86400' },
    });
    try {
      const res = await api(server.url, '/api/bundeslands/1');
      expect(res.headers.get('cache-control')).toBe('public, max-age=0, s-maxage=86400');
    } finally {
      await server.close();
    }
  });

  it('behind a trusted proxy without a public URL, Vary names the forwarded host and scheme', async () => {
    const server = await startPropertyServer({ env: { PROPERTY_TRUST_PROXY: 'true' } });
    try {
      const res = await api(server.url, '/api/bundeslands/1', { headers: { 'x-forwarded-host': 'api.example.org' } });
      expect(res.headers.get('link')).toContain('//api.example.org/api/docs.jsonld');
      expect(tokens(res.headers.get('vary'))).toEqual(['accept', 'x-forwarded-host', 'x-forwarded-proto']);
    } finally {
      await server.close();
    }
  });

  it('a purge that fails does not fail the write: logged, counted in the metrics', async () => {
    const closed = await freePort();
    const server = await startPropertyServer({
      env: {
        PROPERTY_HTTP_CACHE_PURGE_URLS: `http://127.0.0.1:${closed}`,
        PROPERTY_MANAGEMENT_PORT: '0',
      },
    });
    try {
      const technical = await server.createAccount('technical');
      const res = await api(server.url, '/api/heizungstyps/1', {
        method: 'PATCH',
        key: technical.key,
        body: { name: 'Ölheizung (neu)' },
      });
      expect(res.status).toBe(200);
      const metrics = await api(server.managementUrl ?? '', '/metrics');
      expect(metrics.text).toMatch(/property_http_cache_purges_total\{result="failed"\} 1\b/);
    } finally {
      await server.close();
    }
  });

  it('PROPERTY_MERCURE_ENABLED=false: no hub, no Link to it, writes still answer', async () => {
    const server = await startPropertyServer({ env: { PROPERTY_MERCURE_ENABLED: 'false' } });
    try {
      const res = await api(server.url, '/api/bundeslands/1');
      expect(res.headers.get('link')).not.toContain('mercure');
      expect((await api(server.url, '/.well-known/mercure?topic=*')).status).toBe(404);
      const user = await server.createAccount('user');
      await createImmobilie(server.url, user.key);
    } finally {
      await server.close();
    }
  });
});
