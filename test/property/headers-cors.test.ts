import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startPropertyServer } from '../support/property-server.js';
import { api, rawRequest, type ApiResponse } from '../support/http.js';
import { createImmobilie, docsLink, errorLink, md5Etag, uniqueEmail, type Item } from './fixtures.js';

type Server = Awaited<ReturnType<typeof startPropertyServer>>;
type Account = Awaited<ReturnType<Server['createAccount']>>;

const ORIGIN = 'http://admin.example.test:8080';

const tokens = (value: string | null): string[] =>
  (value ?? '')
    .split(',')
    .map((t) => t.trim().toLowerCase())
    .filter(Boolean);

function expectSecurityHeaders(res: ApiResponse, label: string): void {
  expect(tokens(res.headers.get('vary')), `${label}: Vary`).toContain('accept');
  // A public answer is the same for every key (decision 0047): a shared cache must not split it by key.
  if (res.headers.get('cache-control')?.startsWith('public'))
    expect(tokens(res.headers.get('vary')), `${label}: a public answer's Vary`).not.toContain('x-api-key');
  else expect(tokens(res.headers.get('vary')), `${label}: Vary names the key`).toContain('x-api-key');
  expect(res.headers.get('x-content-type-options'), `${label}: X-Content-Type-Options`).toBe('nosniff');
  expect(res.headers.get('x-frame-options')?.toLowerCase(), `${label}: X-Frame-Options`).toBe('deny');
}

describe.each(dialects)('%s: headers and CORS', (dialect) => {
  let server: Server;
  let url: string;
  let admin: Account;
  let user: Account;
  let item: Item;

  beforeAll(async () => {
    server = await startPropertyServer({ dialect });
    url = server.url;
    admin = await server.createAccount('admin');
    user = await server.createAccount('user');
    item = await createImmobilie(url, user.key);
  });
  afterAll(async () => {
    await server?.close();
  });

  describe('Link, Vary and security headers on every response', () => {
    const successes: [string, () => Promise<ApiResponse>][] = [
      ['GET /api', () => api(url, '/api')],
      ['GET /api/contexts/Immobilie', () => api(url, '/api/contexts/Immobilie')],
      ['GET collection', () => api(url, '/api/bundeslands')],
      ['GET item', () => api(url, '/api/bundeslands/1')],
      ['GET item as JSON', () => api(url, '/api/bundeslands/1', { accept: 'application/json' })],
      ['GET Immobilie', () => api(url, item['@id'], { key: user.key })],
      ['POST', () => api(url, '/api/users', { method: 'POST', body: { name: 'Linked', email: uniqueEmail() } })],
      ['PATCH', () => api(url, item['@id'], { method: 'PATCH', key: user.key, body: { zimmer: 3 } })],
      [
        'PUT',
        () => api(url, '/api/heizungstyps/1', { method: 'PUT', key: admin.key, body: { name: 'Gasheizung neu' } }),
      ],
      [
        'DELETE',
        async () => api(url, (await createImmobilie(url, user.key))['@id'], { method: 'DELETE', key: user.key }),
      ],
    ];

    it.each(successes)('%s carries the apiDocumentation Link with an absolute URL', async (label, send) => {
      const res = await send();
      expect(res.status, label).toBeLessThan(300);
      expect(res.headers.get('link')).toBe(docsLink(url));
      expectSecurityHeaders(res, label);
    });

    const failures: [string, number, () => Promise<ApiResponse>][] = [
      ['404', 404, () => api(url, '/api/bundeslands/999')],
      ['404 unknown path', 404, () => api(url, '/api/nothing-here')],
      ['401', 401, () => api(url, '/api/immobilies')],
      ['401 bad key', 401, () => api(url, '/api/bundeslands', { key: 'wrong' })],
      [
        '403',
        403,
        () => api(url, '/api/bundeslands', { method: 'POST', key: user.key, body: { name: 'X', code: 'XX' } }),
      ],
      [
        '400 violations',
        400,
        () => api(url, '/api/immobilies', { method: 'POST', key: user.key, body: { adresse: '' } }),
      ],
      ['400 page', 400, () => api(url, '/api/bundeslands?page=0')],
      ['405', 405, () => api(url, '/api/bundeslands/1', { method: 'POST', key: admin.key, body: {} })],
      ['406', 406, () => api(url, '/api/bundeslands/1', { accept: 'text/csv' })],
      [
        '415',
        415,
        () => api(url, item['@id'], { method: 'PATCH', key: user.key, contentType: 'application/json', body: {} }),
      ],
      ['409', 409, () => api(url, '/api/bundeslands/13', { method: 'DELETE', key: admin.key })],
      ['problem+json 404', 404, () => api(url, '/api/bundeslands/999', { accept: 'application/json' })],
    ];

    it.each(failures)('error %s carries the apiDocumentation and json-ld#error Links', async (label, status, send) => {
      const res = await send();
      expect(res.status, label).toBe(status);
      expect(res.headers.get('link')).toBe(errorLink(url));
      expectSecurityHeaders(res, label);
    });

    it('the docs URL in Link follows the Host header of the request', async () => {
      const res = await rawRequest(url, '/api/bundeslands/1', {
        headers: { host: 'props.example.test:8443', accept: 'application/ld+json' },
      });
      expect(res.status).toBe(200);
      expect(res.headers.link).toBe(
        `<http://props.example.test:8443/api/docs.jsonld>; rel="http://www.w3.org/ns/hydra/core#apiDocumentation",<http://props.example.test:8443/.well-known/mercure>; rel="mercure"`,
      );
      const context = await rawRequest(url, '/api/contexts/Bundesland', {
        headers: { host: 'props.example.test:8443' },
      });
      expect((context.body as { '@context': Record<string, unknown> })['@context']['@vocab']).toBe(
        'http://props.example.test:8443/api/docs.jsonld#',
      );
    });

    it('the Link target matches the api-doc-parser regex and the context @vocab', async () => {
      const res = await api(url, '/api/bundeslands');
      const match = /<([^<]+)>; rel="http:\/\/www.w3.org\/ns\/hydra\/core#apiDocumentation"/.exec(
        res.headers.get('link') ?? '',
      );
      expect(match?.[1]).toBe(`${url}/api/docs.jsonld`);
      const context = await api(url, '/api/contexts/Bundesland');
      expect((context.body as { '@context': Record<string, unknown> })['@context']['@vocab']).toBe(`${match?.[1]}#`);
    });
  });

  describe('caching and item headers', () => {
    it('GET answers an ETag that is the quoted md5 of the body', async () => {
      for (const [path, accept] of [
        ['/api/bundeslands/1', 'application/ld+json'],
        ['/api/bundeslands/1', 'application/json'],
        ['/api/bundeslands', 'application/ld+json'],
      ] as const) {
        const res = await api(url, path, { accept });
        expect(res.headers.get('etag'), `${path} ${accept}`).toBe(md5Etag(res.text));
      }
      const own = await api(url, item['@id'], { key: user.key });
      expect(own.headers.get('etag')).toBe(md5Etag(own.text));
    });

    it('the JSON and JSON-LD representations have different ETags', async () => {
      const ld = await api(url, '/api/bundeslands/2');
      const json = await api(url, '/api/bundeslands/2', { accept: 'application/json' });
      expect(ld.headers.get('etag')).not.toBe(json.headers.get('etag'));
    });

    it('If-None-Match with the current ETag answers 304 without a body', async () => {
      const first = await api(url, '/api/bundeslands/3');
      const etag = first.headers.get('etag') ?? '';
      expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
      const again = await api(url, '/api/bundeslands/3', { headers: { 'if-none-match': etag } });
      expect(again.status).toBe(304);
      expect(again.text).toBe('');
      expect(again.headers.get('etag')).toBe(etag);
      const stale = await api(url, '/api/bundeslands/3', {
        headers: { 'if-none-match': '"0123456789abcdef0123456789abcdef"' },
      });
      expect(stale.status).toBe(200);
    });

    it('an ETag changes when the item changes', async () => {
      const target = await createImmobilie(url, user.key);
      const before = await api(url, target['@id'], { key: user.key });
      await api(url, target['@id'], { method: 'PATCH', key: user.key, body: { zimmer: 11 } });
      const after = await api(url, target['@id'], {
        key: user.key,
        headers: { 'if-none-match': before.headers.get('etag') ?? '' },
      });
      expect(after.status).toBe(200);
      expect(after.headers.get('etag')).not.toBe(before.headers.get('etag'));
    });

    it('item responses of every resource (all offer PATCH) carry Accept-Patch', async () => {
      const get = await api(url, item['@id'], { key: user.key });
      expect(get.headers.get('accept-patch')).toBe('application/merge-patch+json');
      const patch = await api(url, item['@id'], { method: 'PATCH', key: user.key, body: { zimmer: 4 } });
      expect(patch.headers.get('accept-patch')).toBe('application/merge-patch+json');
      expect((await api(url, '/api/bundeslands/1')).headers.get('accept-patch')).toBe('application/merge-patch+json');
      expect((await api(url, user.iri, { key: user.key })).headers.get('accept-patch')).toBe(
        'application/merge-patch+json',
      );
    });

    it('POST answers Location and Content-Location; PUT and PATCH Content-Location', async () => {
      const post = await api(url, '/api/heizungstyps', {
        method: 'POST',
        key: admin.key,
        body: { name: 'Kopfheizung' },
      });
      const iri = (post.body as Item)['@id'];
      expect([post.headers.get('location'), post.headers.get('content-location')]).toEqual([iri, iri]);
      const put = await api(url, iri, { method: 'PUT', key: admin.key, body: { name: 'Kopfheizung 2' } });
      expect(put.headers.get('content-location')).toBe(iri);
      expect(put.headers.get('location')).toBeNull();
      const patch = await api(url, item['@id'], { method: 'PATCH', key: user.key, body: { zimmer: 4 } });
      expect(patch.headers.get('content-location')).toBe(item['@id']);
    });

    it('DELETE answers 204 without a body and without an ETag', async () => {
      const target = await createImmobilie(url, user.key);
      const res = await api(url, target['@id'], { method: 'DELETE', key: user.key });
      expect(res.status).toBe(204);
      expect(res.text).toBe('');
      expect(res.headers.get('etag')).toBeNull();
    });
  });

  describe('CORS', () => {
    it('a preflight for a PATCH with X-API-KEY is allowed from any origin', async () => {
      const res = await api(url, item['@id'], {
        method: 'OPTIONS',
        headers: {
          origin: ORIGIN,
          'access-control-request-method': 'PATCH',
          'access-control-request-headers': 'x-api-key, content-type',
        },
      });
      expect([200, 204]).toContain(res.status);
      expect([ORIGIN, '*']).toContain(res.headers.get('access-control-allow-origin'));
      expect(tokens(res.headers.get('access-control-allow-methods'))).toEqual(
        expect.arrayContaining(['get', 'post', 'put', 'patch', 'delete']),
      );
      const allowed = tokens(res.headers.get('access-control-allow-headers'));
      expect(allowed).toEqual(expect.arrayContaining(['x-api-key', 'content-type']));
    });

    it('the preflight allows X-API-KEY, Authorization, Content-Type and Accept', async () => {
      const res = await api(url, '/api/immobilies', {
        method: 'OPTIONS',
        headers: {
          origin: ORIGIN,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'x-api-key,authorization,content-type,accept',
        },
      });
      expect([200, 204]).toContain(res.status);
      expect(tokens(res.headers.get('access-control-allow-headers'))).toEqual(
        expect.arrayContaining(['x-api-key', 'authorization', 'content-type', 'accept']),
      );
    });

    it('a preflight does not need an API key', async () => {
      const res = await api(url, '/api/users', {
        method: 'OPTIONS',
        headers: {
          origin: 'http://elsewhere.test',
          'access-control-request-method': 'GET',
          'access-control-request-headers': 'x-api-key',
        },
      });
      expect([200, 204]).toContain(res.status);
      expect(['http://elsewhere.test', '*']).toContain(res.headers.get('access-control-allow-origin'));
    });

    it('responses to a cross-origin request expose Link, Location and Content-Location', async () => {
      const get = await api(url, '/api/bundeslands', { headers: { origin: ORIGIN } });
      expect(get.status).toBe(200);
      expect([ORIGIN, '*']).toContain(get.headers.get('access-control-allow-origin'));
      expect(tokens(get.headers.get('access-control-expose-headers'))).toEqual(
        expect.arrayContaining(['link', 'location', 'content-location']),
      );

      const post = await api(url, '/api/users', {
        method: 'POST',
        headers: { origin: ORIGIN },
        body: { name: 'Cors', email: uniqueEmail() },
      });
      expect(post.status).toBe(201);
      expect(tokens(post.headers.get('access-control-expose-headers'))).toEqual(
        expect.arrayContaining(['link', 'location', 'content-location']),
      );
    });

    it('error responses carry the CORS headers too, so a browser can read them', async () => {
      const res = await api(url, '/api/immobilies', { headers: { origin: ORIGIN } });
      expect(res.status).toBe(401);
      expect([ORIGIN, '*']).toContain(res.headers.get('access-control-allow-origin'));
      expect(tokens(res.headers.get('access-control-expose-headers'))).toContain('link');
    });
  });
});

describe('CORS with a list of allowed origins (PROPERTY_CORS_ORIGINS)', () => {
  let server: Server;
  const OTHER = 'http://evil.example.test';

  beforeAll(async () => {
    server = await startPropertyServer({ env: { PROPERTY_CORS_ORIGINS: `${ORIGIN},http://second.example.test` } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('an allowed origin is echoed, with Vary: Accept, Origin (and the key where it matters)', async () => {
    const res = await api(server.url, '/api/bundeslands/1', { headers: { origin: ORIGIN } });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(tokens(res.headers.get('vary'))).toEqual(['accept', 'origin']);
    const keyed = await api(server.url, '/api/immobilies', { headers: { origin: ORIGIN } });
    expect(tokens(keyed.headers.get('vary'))).toEqual(['accept', 'x-api-key', 'origin']);
    expect(tokens(res.headers.get('access-control-expose-headers'))).toEqual(
      expect.arrayContaining(['link', 'location', 'content-location']),
    );
  });

  it('another origin gets no CORS headers, but Vary still names Origin', async () => {
    for (const headers of [{ origin: OTHER }, {}] as Record<string, string>[]) {
      const res = await api(server.url, '/api/bundeslands/1', { headers });
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      expect(res.headers.get('access-control-expose-headers')).toBeNull();
      expect(tokens(res.headers.get('vary'))).toEqual(['accept', 'origin']);
    }
  });

  it('preflights follow the same list', async () => {
    const allowed = await api(server.url, '/api/immobilies', {
      method: 'OPTIONS',
      headers: {
        origin: ORIGIN,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'x-api-key',
      },
    });
    expect([200, 204]).toContain(allowed.status);
    expect(allowed.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    const refused = await api(server.url, '/api/immobilies', {
      method: 'OPTIONS',
      headers: {
        origin: OTHER,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'x-api-key',
      },
    });
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
  });
});
