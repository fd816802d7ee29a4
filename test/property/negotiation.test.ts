import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startPropertyServer } from '../support/property-server.js';
import { api, rawRequest } from '../support/http.js';
import {
  JSONLD,
  JSON_TYPE,
  NOT_ACCEPTABLE,
  NOT_FOUND,
  NO_CONTENT_TYPE,
  NO_KEY,
  UNSUPPORTED_PATCH,
  UNSUPPORTED_WRITE,
  createImmobilie,
  docsLink,
  expectHydraError,
  expectProblem,
  expectProblemViolations,
  immobilieBody,
  uniqueEmail,
  violation,
  type Item,
  TIMESTAMP,
} from './fixtures.js';

type Server = Awaited<ReturnType<typeof startPropertyServer>>;
type Account = Awaited<ReturnType<Server['createAccount']>>;

const SACHSEN_LD = {
  '@context': '/api/contexts/Bundesland',
  '@id': '/api/bundeslands/13',
  '@type': 'Bundesland',
  id: 13,
  name: 'Sachsen',
  code: 'SN',
  grunderwerbsteuerSatz: 5.5,
};
const SACHSEN_JSON = { id: 13, name: 'Sachsen', code: 'SN', grunderwerbsteuerSatz: 5.5 };

describe.each(dialects)('%s: content negotiation', (dialect) => {
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

  describe('output format', () => {
    it('no Accept header at all gives JSON-LD', async () => {
      const res = await rawRequest(url, '/api/bundeslands/13');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe(JSONLD);
      expect(res.body).toEqual(SACHSEN_LD);
      const list = await rawRequest(url, '/api/immobilies', { headers: { 'x-api-key': user.key } });
      expect(list.status).toBe(200);
      expect(list.headers['content-type']).toBe(JSONLD);
      expect(list.body).toMatchObject({ '@type': 'hydra:Collection', 'hydra:totalItems': 1 });
    });

    it('Accept */* gives JSON-LD', async () => {
      const res = await api(url, '/api/bundeslands/13', { accept: '*/*' });
      expect(res.headers.get('content-type')).toBe(JSONLD);
      expect(res.body).toEqual(SACHSEN_LD);
    });

    it('Accept application/ld+json gives JSON-LD', async () => {
      const res = await api(url, '/api/bundeslands/13', { accept: 'application/ld+json' });
      expect(res.headers.get('content-type')).toBe(JSONLD);
      expect(res.body).toEqual(SACHSEN_LD);
    });

    it('Accept application/json gives the plain item without @-keys', async () => {
      const res = await api(url, '/api/bundeslands/13', { accept: 'application/json' });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(JSON_TYPE);
      expect(res.body).toEqual(SACHSEN_JSON);
    });

    it('Accept application/json gives a plain Immobilie with relations still as IRIs', async () => {
      const res = await api(url, item['@id'], { key: user.key, accept: 'application/json' });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(JSON_TYPE);
      const { '@context': _c, '@id': _i, '@type': _t, ...plain } = item;
      expect(res.body).toEqual(plain);
      expect(plain).toMatchObject({
        verwalter: user.iri,
        bundesland: '/api/bundeslands/13',
        heizungstyp: '/api/heizungstyps/2',
      });
    });

    it('Accept application/json on a collection gives a bare array', async () => {
      const res = await api(url, '/api/bundeslands', { accept: 'application/json' });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(JSON_TYPE);
      expect(Array.isArray(res.body)).toBe(true);
      const list = res.body as Record<string, unknown>[];
      expect(list).toHaveLength(16);
      expect(list[12]).toEqual(SACHSEN_JSON);
      expect(list.every((m) => !Object.keys(m).some((k) => k.startsWith('@')))).toBe(true);
    });

    it('q-values are honoured', async () => {
      const json = await api(url, '/api/bundeslands/13', {
        accept: 'application/ld+json;q=0.5, application/json;q=0.9',
      });
      expect(json.headers.get('content-type')).toBe(JSON_TYPE);
      const ld = await api(url, '/api/bundeslands/13', { accept: 'application/ld+json;q=0.9, application/json;q=0.5' });
      expect(ld.headers.get('content-type')).toBe(JSONLD);
    });

    it('a list with an unsupported type first still finds a supported one', async () => {
      const res = await api(url, '/api/bundeslands/13', { accept: 'text/csv, application/json' });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(JSON_TYPE);
    });

    it('an unsupported Accept answers 406 with the supported MIME types', async () => {
      const res = await api(url, '/api/bundeslands/13', { accept: 'text/csv' });
      expectHydraError(res, 406, NOT_ACCEPTABLE('text/csv'));
      expect(res.headers.get('link')).toContain(docsLink(url));
    });

    it('406 on collections and protected items too', async () => {
      expectHydraError(
        await api(url, '/api/bundeslands', { accept: 'application/xml' }),
        406,
        NOT_ACCEPTABLE('application/xml'),
      );
      expectHydraError(
        await api(url, item['@id'], { key: user.key, accept: 'text/csv' }),
        406,
        NOT_ACCEPTABLE('text/csv'),
      );
    });
  });

  describe('format suffixes', () => {
    it('.jsonld on an item gives JSON-LD with the IRI without suffix', async () => {
      const res = await api(url, '/api/bundeslands/13.jsonld');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(JSONLD);
      expect(res.body).toEqual(SACHSEN_LD);
    });

    it('.json on an item gives plain JSON even with Accept */*', async () => {
      const res = await api(url, '/api/bundeslands/13.json', { accept: '*/*' });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(JSON_TYPE);
      expect(res.body).toEqual(SACHSEN_JSON);
    });

    it('.json without any Accept header gives plain JSON', async () => {
      const res = await rawRequest(url, '/api/bundeslands/13.json');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe(JSON_TYPE);
      expect(res.body).toEqual(SACHSEN_JSON);
    });

    it('.json on a collection gives a bare array; .jsonld a hydra:Collection', async () => {
      const json = await api(url, '/api/bundeslands.json');
      expect(json.status).toBe(200);
      expect(json.headers.get('content-type')).toBe(JSON_TYPE);
      expect(Array.isArray(json.body)).toBe(true);
      expect(json.body).toHaveLength(16);
      const ld = await api(url, '/api/bundeslands.jsonld');
      expect(ld.status).toBe(200);
      expect(ld.headers.get('content-type')).toBe(JSONLD);
      expect(ld.body).toMatchObject({
        '@context': '/api/contexts/Bundesland',
        '@id': '/api/bundeslands',
        '@type': 'hydra:Collection',
        'hydra:totalItems': 16,
      });
    });

    it('a suffix narrows the choice: .json with Accept application/ld+json answers 406', async () => {
      expectHydraError(
        await api(url, '/api/bundeslands/13.json', { accept: 'application/ld+json' }),
        406,
        'Requested format "application/ld+json" is not supported. Supported MIME types are "application/json".',
      );
      // The error itself is negotiated against the error formats, where application/json means problem+json.
      expectProblem(
        await api(url, '/api/bundeslands/13.jsonld', { accept: 'application/json' }),
        406,
        'Requested format "application/json" is not supported. Supported MIME types are "application/ld+json".',
      );
    });

    it('suffixes work on protected Immobilie items and collections', async () => {
      const res = await api(url, `${item['@id']}.json`, { key: user.key });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(JSON_TYPE);
      expect(res.body).toMatchObject({ id: item.id, adresse: item.adresse });
      const list = await api(url, '/api/immobilies.json', { key: user.key });
      expect(list.status).toBe(200);
      expect(list.body).toEqual([expect.objectContaining({ id: item.id })]);
    });

    it('an unknown suffix answers 404', async () => {
      expectHydraError(await api(url, '/api/bundeslands/13.xml'), 404, NOT_FOUND);
      expectHydraError(await api(url, '/api/bundeslands.csv'), 404, NOT_FOUND);
      expectHydraError(await api(url, `${item['@id']}.html`, { key: user.key }), 404, NOT_FOUND);
    });
  });

  describe('errors follow the Accept header', () => {
    it('Accept application/json turns a 404 into problem+json', async () => {
      expectProblem(await api(url, '/api/bundeslands/999', { accept: 'application/json' }), 404, NOT_FOUND);
    });

    it('Accept application/json turns a 401 into problem+json', async () => {
      const res = await api(url, '/api/immobilies', { accept: 'application/json' });
      expectProblem(res, 401, NO_KEY);
      expect(res.headers.get('link')).toContain(docsLink(url));
    });

    it('Accept application/problem+json alone is no output format: 406, rendered as problem+json', async () => {
      // As in API Platform, format negotiation runs before authentication.
      expectProblem(
        await api(url, '/api/immobilies', { accept: 'application/problem+json' }),
        406,
        NOT_ACCEPTABLE('application/problem+json'),
      );
      expectProblem(
        await api(url, '/api/bundeslands/999', { accept: 'application/problem+json' }),
        406,
        NOT_ACCEPTABLE('application/problem+json'),
      );
    });

    it('Accept application/problem+json next to an output format renders the error as problem+json', async () => {
      expectProblem(
        await api(url, '/api/bundeslands/999', { accept: 'application/problem+json, application/ld+json;q=0.5' }),
        404,
        NOT_FOUND,
      );
    });

    it('Accept application/json turns a violation list into problem+json with violations', async () => {
      const res = await api(url, '/api/immobilies', {
        method: 'POST',
        key: user.key,
        accept: 'application/json',
        body: immobilieBody({ zimmer: 'abc' }),
      });
      expectProblemViolations(res, [violation.type('zimmer', 'int')]);
    });

    it('the default error format is hydra:Error JSON-LD', async () => {
      expectHydraError(await api(url, '/api/bundeslands/999', { accept: '*/*' }), 404, NOT_FOUND);
      const raw = await rawRequest(url, '/api/bundeslands/999');
      expect(raw.status).toBe(404);
      expect(raw.headers['content-type']).toBe(JSONLD);
      expect(raw.body).toEqual({
        '@context': '/api/contexts/Error',
        '@type': 'hydra:Error',
        'hydra:title': 'An error occurred',
        'hydra:description': NOT_FOUND,
        status: 404,
      });
    });
  });

  describe('input formats', () => {
    it('POST accepts application/json and answers in the negotiated output format', async () => {
      const res = await api(url, '/api/immobilies', {
        method: 'POST',
        key: user.key,
        contentType: 'application/json',
        body: immobilieBody(),
      });
      expect(res.status).toBe(201);
      expect(res.headers.get('content-type')).toBe(JSONLD);
      expect(res.body).toMatchObject({ '@type': 'Immobilie', verwalter: user.iri });
    });

    it('POST with Accept application/json answers a plain item, still with Location', async () => {
      const res = await api(url, '/api/immobilies', {
        method: 'POST',
        key: user.key,
        accept: 'application/json',
        contentType: 'application/json',
        body: immobilieBody(),
      });
      expect(res.status).toBe(201);
      expect(res.headers.get('content-type')).toBe(JSON_TYPE);
      const body = res.body as { id: number };
      expect(Object.keys(body).some((k) => k.startsWith('@'))).toBe(false);
      expect(res.headers.get('location')).toBe(`/api/immobilies/${body.id}`);
      expect(res.headers.get('content-location')).toBe(`/api/immobilies/${body.id}`);
    });

    it('a charset parameter on the Content-Type is ignored', async () => {
      const post = await api(url, '/api/immobilies', {
        method: 'POST',
        key: user.key,
        contentType: 'application/ld+json; charset=utf-8',
        body: immobilieBody(),
      });
      expect(post.status).toBe(201);
      const patch = await api(url, (post.body as Item)['@id'], {
        method: 'PATCH',
        key: user.key,
        contentType: 'application/merge-patch+json; charset=utf-8',
        body: { zimmer: 9 },
      });
      expect(patch.status).toBe(200);
      expect(patch.body).toMatchObject({ zimmer: 9 });
    });

    it('PUT accepts application/ld+json and application/json', async () => {
      const land = await api(url, '/api/bundeslands', {
        method: 'POST',
        key: admin.key,
        contentType: 'application/json',
        body: { name: 'Formatland', code: 'FL' },
      });
      expect(land.status).toBe(201);
      const iri = (land.body as Item)['@id'];
      const putJson = await api(url, iri, {
        method: 'PUT',
        key: admin.key,
        contentType: 'application/json',
        body: { name: 'Formatland 2', code: 'F2' },
      });
      expect(putJson.status).toBe(200);
      const putLd = await api(url, iri, {
        method: 'PUT',
        key: admin.key,
        contentType: 'application/ld+json',
        body: { name: 'Formatland 3', code: 'F3' },
      });
      expect(putLd.status).toBe(200);
      expect(putLd.body).toMatchObject({ name: 'Formatland 3', code: 'F3' });
    });

    it('PATCH with application/json answers 415 and changes nothing', async () => {
      const res = await api(url, item['@id'], {
        method: 'PATCH',
        key: user.key,
        contentType: 'application/json',
        body: { zimmer: 7 },
      });
      expectHydraError(res, 415, UNSUPPORTED_PATCH('application/json'));
      expect((await api(url, item['@id'], { key: user.key })).body).toEqual(item);
    });

    it('PATCH with application/ld+json answers 415', async () => {
      expectHydraError(
        await api(url, item['@id'], {
          method: 'PATCH',
          key: user.key,
          contentType: 'application/ld+json',
          body: { zimmer: 7 },
        }),
        415,
        UNSUPPORTED_PATCH('application/ld+json'),
      );
    });

    it('PATCH with application/merge-patch+json answers 200', async () => {
      const created = await createImmobilie(url, user.key);
      const res = await api(url, created['@id'], {
        method: 'PATCH',
        key: user.key,
        contentType: 'application/merge-patch+json',
        body: { zimmer: 7 },
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ ...created, zimmer: 7, updatedAt: expect.stringMatching(TIMESTAMP) });
    });

    it('POST with text/plain or merge-patch+json answers 415', async () => {
      expectHydraError(
        await api(url, '/api/immobilies', {
          method: 'POST',
          key: user.key,
          contentType: 'text/plain',
          body: immobilieBody(),
        }),
        415,
        UNSUPPORTED_WRITE('text/plain'),
      );
      expectHydraError(
        await api(url, '/api/immobilies', {
          method: 'POST',
          key: user.key,
          contentType: 'application/merge-patch+json',
          body: immobilieBody(),
        }),
        415,
        UNSUPPORTED_WRITE('application/merge-patch+json'),
      );
    });

    it('PUT with merge-patch+json answers 415', async () => {
      expectHydraError(
        await api(url, '/api/bundeslands/13', {
          method: 'PUT',
          key: admin.key,
          contentType: 'application/merge-patch+json',
          body: { name: 'Sachsen', code: 'SN' },
        }),
        415,
        UNSUPPORTED_WRITE('application/merge-patch+json'),
      );
    });

    it('a body operation without Content-Type answers 415', async () => {
      expectHydraError(
        await api(url, '/api/immobilies', { method: 'POST', key: user.key, contentType: null, body: immobilieBody() }),
        415,
        NO_CONTENT_TYPE,
      );
      expectHydraError(
        await api(url, item['@id'], { method: 'PATCH', key: user.key, contentType: null, body: { zimmer: 1 } }),
        415,
        NO_CONTENT_TYPE,
      );
      expectHydraError(
        await api(url, '/api/bundeslands/13', {
          method: 'PUT',
          key: admin.key,
          contentType: null,
          body: { name: 'Sachsen', code: 'SN' },
        }),
        415,
        NO_CONTENT_TYPE,
      );
      expectHydraError(
        await api(url, '/api/users', { method: 'POST', contentType: null, body: { name: 'X', email: uniqueEmail() } }),
        415,
        NO_CONTENT_TYPE,
      );
    });

    it('415 errors follow the Accept header', async () => {
      expectProblem(
        await api(url, item['@id'], {
          method: 'PATCH',
          key: user.key,
          accept: 'application/json',
          contentType: 'application/json',
          body: { zimmer: 7 },
        }),
        415,
        UNSUPPORTED_PATCH('application/json'),
      );
    });

    it('a Content-Type header on a GET is ignored', async () => {
      for (const contentType of ['application/ld+json', 'text/plain', 'application/merge-patch+json']) {
        const res = await api(url, '/api/bundeslands/13', { contentType });
        expect(res.status, contentType).toBe(200);
        expect(res.body, contentType).toEqual(SACHSEN_LD);
        const list = await api(url, '/api/immobilies', { key: user.key, contentType });
        expect(list.status, contentType).toBe(200);
      }
      const entry = await api(url, '/api', { contentType: 'application/ld+json', accept: 'application/ld+json' });
      expect(entry.status).toBe(200);
    });

    it('DELETE answers 204 with an empty body whatever the Accept', async () => {
      const created = await createImmobilie(url, user.key);
      const res = await api(url, created['@id'], { method: 'DELETE', key: user.key, accept: 'application/json' });
      expect(res.status).toBe(204);
      expect(res.text).toBe('');
    });
  });
});
