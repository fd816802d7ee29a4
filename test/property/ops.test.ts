import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startPropertyServer } from '../support/property-server.js';
import { api, rawRequest } from '../support/http.js';
import { JSONLD, NOT_FOUND, createImmobilie, docsLink, errorLink, expectHydraError, type Item } from './fixtures.js';

type Server = Awaited<ReturnType<typeof startPropertyServer>>;
type Account = Awaited<ReturnType<Server['createAccount']>>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe.each(dialects)('%s: operations endpoints, request ids, 404, 405, HEAD', (dialect) => {
  let server: Server;
  let url: string;
  let admin: Account;
  let user: Account;
  let item: Item;

  beforeAll(async () => {
    server = await startPropertyServer({ dialect, env: { PROPERTY_MANAGEMENT_PORT: '0' } });
    url = server.url;
    admin = await server.createAccount('admin');
    user = await server.createAccount('user');
    item = await createImmobilie(url, user.key);
  });
  afterAll(async () => {
    await server?.close();
  });

  describe('health, readiness, metrics', () => {
    it('GET /healthz answers 200 {status: ok}', async () => {
      const res = await api(url, '/healthz');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'ok' });
    });

    it('GET /readyz answers 200 {status: ready} while the database is reachable, on the API and the management port', async () => {
      for (const base of [url, server.managementUrl ?? '']) {
        const res = await api(base, '/readyz');
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ status: 'ready', checks: { database: 'ok' } });
        expect((await api(base, '/healthz')).body).toEqual({ status: 'ok' });
      }
    });

    it("GET /metrics is not served on the API port without a token: 404 in the service's error format", async () => {
      const res = await api(url, '/metrics');
      expect(res.status).toBe(404);
      expectHydraError(res, 404, NOT_FOUND);
      expect(res.text).not.toContain('process_cpu_user_seconds_total');
    });

    it('GET /metrics serves Prometheus text with the request histogram on the management port', async () => {
      await api(url, '/api/bundeslands');
      await api(url, '/api/immobilies');
      const res = await api(server.managementUrl ?? '', '/metrics');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(res.text).toContain('# TYPE http_request_duration_seconds histogram');
      expect(res.text).toMatch(
        /http_request_duration_seconds_count\{[^}]*method="GET"[^}]*status_code="200"[^}]*\} [1-9]/,
      );
      expect(res.text).toMatch(/http_request_duration_seconds_count\{[^}]*status_code="401"[^}]*\} [1-9]/);
      expect(res.text).toContain('process_cpu_user_seconds_total');
    });

    it('labels each request with its route template, the same for HEAD and for a refused method, and "unmatched" when no route matched', async () => {
      await api(url, '/api/bundeslands/16');
      await api(url, '/api/bundeslands/16', { method: 'HEAD' });
      await api(url, '/api/bundeslands/16', { method: 'POST' });
      await api(url, '/nowhere-at-all');
      const { text } = await api(server.managementUrl ?? '', '/metrics');
      const count = (labels: string) =>
        Number(new RegExp(`http_request_duration_seconds_count\\{${labels}\\} (\\d+)`).exec(text)?.[1] ?? 0);
      expect(count('method="GET",route="/api/bundeslands/:id",status_code="200"')).toBeGreaterThan(0);
      expect(count('method="HEAD",route="/api/bundeslands/:id",status_code="200"')).toBeGreaterThan(0);
      expect(count('method="POST",route="/api/bundeslands/:id",status_code="405"')).toBeGreaterThan(0);
      expect(count('method="GET",route="unmatched",status_code="404"')).toBeGreaterThan(0);
      expect(text).not.toContain('nowhere-at-all');
    });

    it('metrics never contain an API key', async () => {
      await api(url, '/api/immobilies', { key: user.key });
      await api(url, `/api/immobilies?key=${encodeURIComponent(admin.key)}`, { key: admin.key });
      const res = await api(server.managementUrl ?? '', '/metrics');
      expect(res.status).toBe(200);
      expect(res.text).not.toContain(user.key);
      expect(res.text).not.toContain(admin.key);
    });
  });

  describe('X-Request-Id', () => {
    it('every response carries a generated request id, different each time', async () => {
      const a = await api(url, '/api/bundeslands/1');
      const b = await api(url, '/api/bundeslands/1');
      expect(a.headers.get('x-request-id')).toMatch(UUID);
      expect(b.headers.get('x-request-id')).toMatch(UUID);
      expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'));
    });

    it('a sane incoming X-Request-Id is echoed, on success and on errors', async () => {
      for (const [path, status] of [
        ['/api/bundeslands', 200],
        ['/api/immobilies', 401],
        ['/api/bundeslands/999', 404],
        ['/healthz', 200],
      ] as const) {
        const res = await api(url, path, { headers: { 'x-request-id': 'trace-abc.123:x_y-z' } });
        expect(res.status, path).toBe(status);
        expect(res.headers.get('x-request-id'), path).toBe('trace-abc.123:x_y-z');
      }
    });

    it('an unsafe or oversized incoming X-Request-Id is replaced', async () => {
      for (const incoming of ['has space', 'a'.repeat(129), 'semi;colon', '<script>', 'per%cent', '']) {
        const res = await api(url, '/api/bundeslands/1', { headers: { 'x-request-id': incoming } });
        expect(res.status).toBe(200);
        expect(res.headers.get('x-request-id'), incoming).toMatch(UUID);
      }
    });
  });

  describe('unknown paths and suffixes', () => {
    it.each([
      '/api/nope',
      '/api/immobilie',
      '/api/Immobilies',
      '/api/bundeslands/',
      '/api/bundeslands/1/',
      '/api/bundeslands/1/name',
      '/api/immobilies/1/extra',
      '/api/contexts/Nope',
      '/api/contexts/',
      '/api/bundeslands/1.xml',
      '/api/bundeslands/1.jsonldx',
      '/api/bundeslands/1.',
      '/api/bundeslands.yaml',
      '/api/bundeslands.html',
      '/api/users.csv',
      '/api/heizungstyps/1.json.json',
    ])('GET %s → 404 hydra:Error', async (path) => {
      const res = await api(url, path, { key: admin.key });
      expectHydraError(res, 404, NOT_FOUND);
      expect(res.headers.get('link')).toBe(errorLink(url));
    });

    it('an unknown suffix on a protected resource is 404 for a known key', async () => {
      expectHydraError(await api(url, `${item['@id']}.csv`, { key: user.key }), 404, NOT_FOUND);
      expectHydraError(await api(url, '/api/immobilies.xml', { key: user.key }), 404, NOT_FOUND);
    });

    it('paths outside /api answer 404', async () => {
      for (const path of ['/nope', '/immobilies', '/apix', '/api2/bundeslands']) {
        expect((await api(url, path)).status, path).toBe(404);
      }
    });
  });

  describe('405 Method Not Allowed', () => {
    // Every writable resource offers PUT and PATCH, as API Platform 3 does.
    const cases: [string, string, string][] = [
      ['POST', '/api/immobilies/1', 'GET, PUT, PATCH, DELETE'],
      ['PUT', '/api/immobilies', 'GET, POST'],
      ['PATCH', '/api/immobilies', 'GET, POST'],
      ['DELETE', '/api/immobilies', 'GET, POST'],
      ['POST', '/api/bundeslands/1', 'GET, PUT, PATCH, DELETE'],
      ['PUT', '/api/bundeslands', 'GET, POST'],
      ['DELETE', '/api/bundeslands', 'GET, POST'],
      ['PATCH', '/api/heizungstyps', 'GET, POST'],
      ['POST', '/api/users/1', 'GET, PUT, PATCH, DELETE'],
      ['GET', '/api/finanzierungsrechners', 'POST'],
      ['PUT', '/api/finanzierungsrechners', 'POST'],
      ['DELETE', '/api/users', 'GET, POST'],
      ['PUT', '/api/users', 'GET, POST'],
    ];

    it.each(cases)('%s %s → 405 with Allow: %s', async (method, path, allow) => {
      const body = method === 'DELETE' || method === 'GET' ? undefined : { name: 'x' };
      const res = await api(url, path, {
        method,
        key: admin.key,
        body,
        contentType: method === 'PATCH' ? 'application/merge-patch+json' : 'application/ld+json',
      });
      expectHydraError(res, 405, `Method Not Allowed (Allow: ${allow})`);
      expect(res.headers.get('allow')).toBe(allow);
      expect(res.headers.get('link')).toBe(errorLink(url));
    });

    it('405 comes from routing: also for anonymous callers and unknown ids', async () => {
      const anonymous = await api(url, '/api/immobilies/1', { method: 'POST', body: { adresse: 'x' } });
      expectHydraError(anonymous, 405, 'Method Not Allowed (Allow: GET, PUT, PATCH, DELETE)');
      const unknown = await api(url, '/api/bundeslands/999', { method: 'POST', key: admin.key, body: {} });
      expectHydraError(unknown, 405, 'Method Not Allowed (Allow: GET, PUT, PATCH, DELETE)');
      expect(unknown.headers.get('allow')).toBe('GET, PUT, PATCH, DELETE');
    });

    it('405 errors follow the Accept header', async () => {
      const res = await api(url, '/api/bundeslands/1', {
        method: 'POST',
        key: admin.key,
        accept: 'application/json',
        body: {},
      });
      expect(res.status).toBe(405);
      expect(res.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
      expect(res.body).toEqual({
        type: 'https://tools.ietf.org/html/rfc2616#section-10',
        title: 'An error occurred',
        detail: 'Method Not Allowed (Allow: GET, PUT, PATCH, DELETE)',
        status: 405,
      });
    });
  });

  describe('HEAD', () => {
    it('HEAD on a collection answers the GET headers without a body', async () => {
      const get = await api(url, '/api/bundeslands');
      const head = await api(url, '/api/bundeslands', { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(head.text).toBe('');
      expect(head.headers.get('content-type')).toBe(JSONLD);
      expect(head.headers.get('link')).toBe(docsLink(url));
      expect(head.headers.get('etag')).toBe(get.headers.get('etag'));
    });

    it('HEAD on an item, the entrypoint and a context answers 200 without a body', async () => {
      for (const [path, key] of [
        ['/api/bundeslands/1', undefined],
        [item['@id'], user.key],
        ['/api', undefined],
        ['/api/contexts/Immobilie', undefined],
      ] as const) {
        const res = await api(url, path, { method: 'HEAD', key });
        expect(res.status, path).toBe(200);
        expect(res.text, path).toBe('');
        expect(res.headers.get('content-type'), path).toBe(JSONLD);
      }
    });

    it('HEAD honours Accept and suffixes', async () => {
      expect(
        (await api(url, '/api/bundeslands/1', { method: 'HEAD', accept: 'application/json' })).headers.get(
          'content-type',
        ),
      ).toBe('application/json; charset=utf-8');
      expect((await api(url, '/api/bundeslands/1.json', { method: 'HEAD' })).headers.get('content-type')).toBe(
        'application/json; charset=utf-8',
      );
      expect((await api(url, '/api/bundeslands/1', { method: 'HEAD', accept: 'text/csv' })).status).toBe(406);
    });

    it('HEAD answers the error statuses of GET', async () => {
      const missing = await api(url, '/api/bundeslands/999', { method: 'HEAD' });
      expect(missing.status).toBe(404);
      expect(missing.text).toBe('');
      expect(missing.headers.get('link')).toBe(errorLink(url));
      expect((await api(url, '/api/immobilies', { method: 'HEAD' })).status).toBe(401);
      expect((await api(url, item['@id'], { method: 'HEAD', key: admin.key })).status).toBe(200);
      const otherUser = await server.createAccount('user');
      expect((await api(url, item['@id'], { method: 'HEAD', key: otherUser.key })).status).toBe(404);
    });
  });

  describe('limits', () => {
    it('a body over the limit answers 413 with a hydra:Error', async () => {
      const body = JSON.stringify({
        adresse: 'x'.repeat(2 * 1024 * 1024),
        typ: 'haus',
        bundesland: '/api/bundeslands/1',
      });
      const res = await api(url, '/api/immobilies', { method: 'POST', key: user.key, body });
      expectHydraError(res, 413);
      expect(res.headers.get('link')).toBe(errorLink(url));
    });

    it('a request without Host still gets an answer below 500', async () => {
      const res = await rawRequest(url, '/api/bundeslands/1', { headers: { host: '' } });
      expect(res.status).toBeLessThan(500);
    });
  });
});

describe.each(dialects)('%s: /metrics behind METRICS_TOKEN', (dialect) => {
  const token = 'metrics-token-for-tests-0123456789';
  let server: Server;
  beforeAll(async () => {
    server = await startPropertyServer({ dialect, env: { METRICS_TOKEN: token } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('answers 401 without the token or with a wrong one, and the metrics with it, on the API port', async () => {
    const none = await api(server.url, '/metrics');
    expectHydraError(none, 401);
    const wrong = await api(server.url, '/metrics', { headers: { authorization: `Bearer ${token}x` } });
    expectHydraError(wrong, 401);
    expect(wrong.text).not.toContain('process_cpu_user_seconds_total');
    const right = await api(server.url, '/metrics', { headers: { authorization: `Bearer ${token}` } });
    expect(right.status).toBe(200);
    expect(right.text).toContain('process_cpu_user_seconds_total');
    expect(server.managementUrl).toBeUndefined();
  });
});
