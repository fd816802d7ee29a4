import { get as httpGet, type ClientRequest, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signJwt } from '../../src/property/mercure/jwt.js';
import { api } from '../support/http.js';
import { dialects, startPropertyServer, type Account, type PropertyTestServer } from '../support/property-server.js';
import { createImmobilie } from './fixtures.js';

/**
 * Issue 31 item 1, on both dialects: the built-in Mercure hub as a Mercure client sees it: the
 * `rel="mercure"` Link on every answer, subscriptions over server-sent events with topic
 * selectors, an update after each committed write carrying what a GET answers, private updates
 * only for who may read them (a user never sees another user's property, not even its IRI),
 * `Last-Event-ID` reconnection (header and `lastEventID`), the publish endpoint with publisher
 * tokens, errors in the API's format; and two instances on one PostgreSQL database.
 */

const SECRET = 'mercure-test-secret-of-at-least-32-characters';
const HUB = '/.well-known/mercure';

interface SseEvent {
  readonly id: string;
  readonly data: string;
  readonly type?: string;
}

/** A plain server-sent-events reader (what EventSource does, minus the reconnect), over node:http. */
async function subscribe(
  base: string,
  topics: readonly string[],
  options: { token?: string; lastEventId?: string; query?: Record<string, string> } = {},
) {
  const url = new URL(HUB, base);
  for (const t of topics) url.searchParams.append('topic', t);
  for (const [k, v] of Object.entries(options.query ?? {})) url.searchParams.set(k, v);
  const headers: Record<string, string> = { accept: 'text/event-stream' };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.lastEventId) headers['last-event-id'] = options.lastEventId;
  const events: SseEvent[] = [];
  let raw = '';
  const waiters: (() => void)[] = [];
  const { request, response } = await new Promise<{ request: ClientRequest; response: IncomingMessage }>(
    (resolve, reject) => {
      const req = httpGet(url, { headers, agent: false }, (res) => resolve({ request: req, response: res }));
      req.on('error', reject);
    },
  );
  let buffer = '';
  response.setEncoding('utf8');
  response.on('data', (chunk: string) => {
    raw += chunk;
    buffer += chunk;
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const lines = block.split('\n').filter((l) => !l.startsWith(':'));
      if (!lines.length) continue;
      const field = (name: string) =>
        lines.filter((l) => l.startsWith(`${name}: `)).map((l) => l.slice(name.length + 2));
      events.push({ id: field('id')[0] ?? '', data: field('data').join('\n'), type: field('event')[0] });
      for (const w of waiters.splice(0)) w();
    }
  });
  response.on('error', () => undefined);
  return {
    response: {
      status: response.statusCode ?? 0,
      headers: { get: (name: string) => (response.headers[name] as string | undefined) ?? null },
    },
    events,
    raw: () => raw,
    /** Waits until `count` events arrived (the test's own timeout bounds it). */
    async next(count: number): Promise<SseEvent[]> {
      while (events.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
      return events.slice(0, count);
    },
    close: () => request.destroy(),
  };
}

async function tokenFor(base: string, key: string): Promise<string> {
  const res = await api(base, `${HUB}/token`, { key });
  expect(res.status, res.text).toBe(200);
  return (res.body as { token: string }).token;
}

describe.each(dialects)('%s: Mercure hub', (dialect) => {
  let server: PropertyTestServer;
  let url: string;
  let admin: Account;
  let alice: Account;
  let bob: Account;

  beforeAll(async () => {
    server = await startPropertyServer({ dialect, env: { PROPERTY_MERCURE_JWT_SECRET: SECRET } });
    url = server.url;
    [admin, alice, bob] = await Promise.all([
      server.createAccount('admin'),
      server.createAccount('user'),
      server.createAccount('user'),
    ]);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('advertises the hub in the Link header of every answer', async () => {
    for (const [path, key] of [
      ['/api', undefined],
      ['/api/bundeslands/1', undefined],
      ['/api/immobilies', alice.key],
      ['/api/nope', undefined],
      ['/api/immobilies', undefined],
    ] as const) {
      const res = await api(url, path, key ? { key } : {});
      expect(res.headers.get('link'), path).toContain(`<${url}${HUB}>; rel="mercure"`);
    }
  });

  it('publishes each committed create, update and delete with the JSON-LD a GET answers, only to its owner and admins', async () => {
    const [aliceToken, bobToken, adminToken] = await Promise.all([alice, bob, admin].map((a) => tokenFor(url, a.key)));
    const topic = `${url}/api/immobilies/{id}`;
    const [aliceSub, bobSub, adminSub, anonymous] = await Promise.all([
      subscribe(url, [topic], { token: aliceToken }),
      subscribe(url, ['*'], { token: bobToken }),
      subscribe(url, [topic], { token: adminToken }),
      subscribe(url, ['*']),
    ]);
    for (const s of [aliceSub, bobSub, adminSub, anonymous]) {
      expect(s.response.status).toBe(200);
      expect(s.response.headers.get('content-type')).toBe('text/event-stream');
    }
    const item = await createImmobilie(url, alice.key, { adresse: 'Mercureweg 1' });
    const patched = await api(url, item['@id'], { method: 'PATCH', key: alice.key, body: { zimmer: 7 } });
    expect(patched.status).toBe(200);
    expect((await api(url, item['@id'], { method: 'DELETE', key: alice.key })).status).toBe(204);
    // A public update afterwards: it reaches the anonymous subscriber, which saw none of the above.
    const state = await api(url, '/api/heizungstyps', {
      method: 'POST',
      key: admin.key,
      body: { name: `Mercure-Heizung ${dialect}` },
    });
    expect(state.status).toBe(201);

    const [created, updated, deleted] = await aliceSub.next(3);
    const get = (await api(url, item['@id'], { key: admin.key })).status;
    expect(get).toBe(404);
    expect(JSON.parse(created?.data ?? '')).toEqual(item);
    expect(JSON.parse(updated?.data ?? '')).toEqual(patched.body);
    expect(JSON.parse(deleted?.data ?? '')).toEqual({ '@id': item['@id'], '@type': 'Immobilie' });
    expect(new Set([created?.id, updated?.id, deleted?.id]).size).toBe(3);
    expect((await adminSub.next(3)).map((e) => e.id)).toEqual([created?.id, updated?.id, deleted?.id]);

    const [publicUpdate] = await anonymous.next(1);
    expect(JSON.parse(publicUpdate?.data ?? '')).toEqual(state.body);
    const [bobsOnly] = await bobSub.next(1);
    expect(bobsOnly?.id).toBe(publicUpdate?.id);
    // Not even the IRI of Alice's property reached Bob or the anonymous subscriber.
    for (const s of [bobSub, anonymous]) {
      expect(s.raw()).not.toContain(item['@id']);
      expect(s.events).toHaveLength(1);
    }
    for (const s of [aliceSub, bobSub, adminSub, anonymous]) s.close();
  });

  it('catches up after a reconnection with Last-Event-ID (header or lastEventID), in order', async () => {
    const token = await tokenFor(url, alice.key);
    const topic = `${url}/api/immobilies/{id}`;
    const first = await subscribe(url, [topic], { token });
    const a = await createImmobilie(url, alice.key, { adresse: 'Reconnect 1' });
    const [seen] = await first.next(1);
    expect(JSON.parse(seen?.data ?? '')['@id']).toBe(a['@id']);
    first.close();
    // Missed while away: two of Alice's writes and one of Bob's (never to be replayed to Alice).
    const b = await createImmobilie(url, alice.key, { adresse: 'Reconnect 2' });
    await createImmobilie(url, bob.key, { adresse: 'Reconnect Bob' });
    const c = await createImmobilie(url, alice.key, { adresse: 'Reconnect 3' });
    const byHeader = await subscribe(url, [topic], { token, lastEventId: seen?.id as string });
    const replay = await byHeader.next(2);
    expect(replay.map((e) => JSON.parse(e.data)['@id'])).toEqual([b['@id'], c['@id']]);
    expect(byHeader.response.headers.get('last-event-id')).toMatch(/^urn:uuid:/);
    const byQuery = await subscribe(url, [topic], { token, query: { lastEventID: seen?.id as string } });
    expect((await byQuery.next(2)).map((e) => e.id)).toEqual(replay.map((e) => e.id));
    // Live updates follow the replay on the same stream.
    const d = await createImmobilie(url, alice.key, { adresse: 'Reconnect 4' });
    expect(JSON.parse((await byHeader.next(3))[2]?.data ?? '')['@id']).toBe(d['@id']);
    for (const s of [byHeader, byQuery]) s.close();
  });

  it('publishes for outside publishers with a publisher token; refuses bad requests in the API error format', async () => {
    const publisher = signJwt({ mercure: { publish: ['https://example.org/books/{id}'] } }, SECRET);
    const sub = await subscribe(url, ['https://example.org/books/{id}']);
    const form = (body: string, token?: string) =>
      fetch(`${url}${HUB}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body,
      });
    const ok = await form('topic=https://example.org/books/1&data=%7B%22a%22%3A1%7D&type=book&id=urn:x:1', publisher);
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe('urn:x:1');
    expect(await sub.next(1)).toEqual([{ id: 'urn:x:1', data: '{"a":1}', type: 'book' }]);
    expect((await form('topic=https://example.org/books/1&data=x')).status).toBe(401);
    expect((await form('topic=https://example.org/cars/1&data=x', publisher)).status).toBe(403);
    expect((await form('data=x', publisher)).status).toBe(400);
    expect(
      (
        await form(
          'topic=https://example.org/books/1',
          signJwt({ mercure: { publish: ['*'] } }, 'another-secret-of-32-characters-ok'),
        )
      ).status,
    ).toBe(401);
    sub.close();

    const noTopic = await api(url, HUB);
    expect(noTopic.status).toBe(400);
    expect((noTopic.body as Record<string, unknown>)['@type']).toBe('hydra:Error');
    const badToken = await api(url, `${HUB}?topic=*`, { headers: { authorization: 'Bearer not.a.token' } });
    expect(badToken.status).toBe(401);
    const expired = signJwt({ mercure: { subscribe: ['*'] }, exp: Math.floor(Date.now() / 1000) - 10 }, SECRET);
    expect((await api(url, `${HUB}?topic=*&authorization=${expired}`)).status).toBe(401);
    expect((await api(url, `${HUB}/token`)).status).toBe(401);
    expect((await api(url, `${HUB}/token`, { key: 'unknown' })).status).toBe(401);
    const aliceToken = await api(url, `${HUB}/token`, { key: alice.key });
    expect((aliceToken.body as { subscribe: string[] }).subscribe).toEqual([`${url}/api/users/${alice.id}`]);
    expect(aliceToken.headers.get('cache-control')).toBe('no-store');
  });
});

describe.skipIf(!dialects.includes('postgres'))('postgres: Mercure across two instances', () => {
  let one: PropertyTestServer;
  let two: PropertyTestServer;
  beforeAll(async () => {
    one = await startPropertyServer({ dialect: 'postgres', env: { PROPERTY_MERCURE_JWT_SECRET: SECRET } });
    two = await startPropertyServer({
      dialect: 'postgres',
      env: { PROPERTY_MERCURE_JWT_SECRET: SECRET, PROPERTY_DATABASE_URL: one.databaseUrl },
    });
  });
  afterAll(async () => {
    await two?.close();
    await one?.close();
  });

  it('a write on one instance reaches subscribers of the other; Last-Event-ID works on either', async () => {
    const owner = await one.createAccount('user');
    const token = await tokenFor(one.url, owner.key); // a token of one instance is good on the other
    const topic = `${one.url}/api/immobilies/{id}`;
    const onTwo = await subscribe(two.url, [topic], { token });
    expect(onTwo.response.status).toBe(200);
    const first = await createImmobilie(one.url, owner.key, { adresse: 'Instanz 1' });
    const [seen] = await onTwo.next(1);
    expect(JSON.parse(seen?.data ?? '')).toEqual(first);
    onTwo.close();
    const second = await createImmobilie(one.url, owner.key, { adresse: 'Instanz 2' });
    // Reconnect to the other instance with the id seen on this one.
    const onOne = await subscribe(one.url, [topic], { token, lastEventId: seen?.id as string });
    const [missed] = await onOne.next(1);
    expect(JSON.parse(missed?.data ?? '')['@id']).toBe(second['@id']);
    onOne.close();
  });
});
