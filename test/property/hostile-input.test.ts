import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, socketExchange } from '../support/http.js';
import { dialects, startPropertyServer } from '../support/property-server.js';
import {
  createImmobilie,
  expectHydraError,
  expectProblem,
  expectViolation,
  immobilieBody,
  uniqueEmail,
} from './fixtures.js';

type Server = Awaited<ReturnType<typeof startPropertyServer>>;
type Account = Awaited<ReturnType<Server['createAccount']>>;

const TYPE = 'ba785a8c-82cb-4283-967c-3cf342181b40';
const nul = (propertyPath: string) => ({
  propertyPath,
  message: 'This value must not contain a NUL character (U+0000).',
  code: TYPE,
});

/** Hostile and odd input (issue 13, item 7): the same 400 on both dialects, nothing stored. */
describe.each(dialects)('%s: property hostile input', (dialect) => {
  let server: Server;
  let url: string;
  let user: Account;

  beforeAll(async () => {
    server = await startPropertyServer({ dialect, env: { REQUEST_TIMEOUT_MS: '1500' } });
    url = server.url;
    user = await server.createAccount('user');
  });
  afterAll(async () => {
    await server?.close();
  });

  describe('a NUL character (U+0000)', () => {
    it.each([
      ['name', () => ({ name: 'a\u0000b', email: uniqueEmail() })],
      ['email', () => ({ name: 'n', email: `a\u0000${uniqueEmail()}` })],
    ])('in a registration (%s) is a violation', async (path, body) => {
      const sent = body();
      const res = await api(url, '/api/users', { method: 'POST', body: sent });
      expectViolation(res, nul(path));
    });

    it('in a created or patched property is a violation, and nothing changes', async () => {
      expectViolation(
        await api(url, '/api/immobilies', {
          method: 'POST',
          key: user.key,
          body: immobilieBody({ adresse: 'Weg\u00001' }),
        }),
        nul('adresse'),
      );
      const item = await createImmobilie(url, user.key);
      expectViolation(
        await api(url, item['@id'] as string, { method: 'PATCH', key: user.key, body: { adresse: '\u0000' } }),
        nul('adresse'),
      );
      expectViolation(
        await api(url, item['@id'] as string, { method: 'PATCH', key: user.key, body: { typ: 'haus\u0000' } }),
        nul('typ'),
      );
      expectViolation(
        await api(url, '/api/immobilies', {
          method: 'POST',
          key: user.key,
          body: immobilieBody({ bundesland: '/api/bundeslands/1\u0000' }),
        }),
        nul('bundesland'),
      );
      expectViolation(
        await api(url, '/api/immobilies', {
          method: 'POST',
          key: user.key,
          body: { ...immobilieBody(), 'x\u0000': 1 },
        }),
        nul('x\u0000'),
      );
      const after = await api(url, item['@id'] as string, { key: user.key });
      expect((after.body as Record<string, unknown>).adresse).toBe(immobilieBody().adresse);
      const list = await api(url, '/api/immobilies', { key: user.key });
      expect((list.body as Record<string, unknown>)['hydra:totalItems']).toBe(1);
    });

    it.each([
      '/api/immobilies/1%00',
      '/api/immobilies/%00',
      '/api/users/1%00.jsonld',
      '/api/bundeslands/%00',
      '/api/nowhere%00',
    ])('in the path %s names nothing: 404', async (path) => {
      expectHydraError(await api(url, path, { key: user.key }), 404, 'Not Found');
      expectProblem(await api(url, path, { key: user.key, accept: 'application/json' }), 404, 'Not Found');
    });

    it.each([
      '/api/immobilies?typ=haus%00',
      '/api/immobilies?order%5Bid%00%5D=asc',
      '/api/bundeslands?page=1%00',
      '/api/users?%00',
    ])('in the query %s is a 400 hydra:Error (problem+json when asked)', async (path) => {
      expectHydraError(await api(url, path, { key: user.key }), 400);
      expectProblem(await api(url, path, { key: user.key, accept: 'application/json' }), 400);
    });
  });

  describe('bytes that never become a request answer in the hydra:Error format', () => {
    const hydraError = (status: number) => ({
      '@context': '/api/contexts/Error',
      '@type': 'hydra:Error',
      'hydra:title': 'An error occurred',
      'hydra:description': expect.any(String),
      status,
    });
    const request = (line: Buffer | string, headers = '') =>
      Buffer.concat([Buffer.from(line), Buffer.from(` HTTP/1.1\r\nHost: x\r\n${headers}Connection: close\r\n\r\n`)]);

    it.each([
      [
        'raw non-ASCII bytes in the request line',
        request(Buffer.concat([Buffer.from('GET /api/immobilies/'), Buffer.from([0xff, 0xc3, 0xa4])])),
        400,
      ],
      ['a control character in a header', request('GET /api/immobilies', 'X-A: a\u0001b\r\n'), 400],
      ['a request line that is not HTTP', Buffer.from('HELLO WORLD\r\n\r\n'), 400],
      ['a 17 KB URL', request(`GET /api/immobilies?x=${'a'.repeat(17 * 1024)}`), 431],
      ['20 KB of headers', request('GET /api/immobilies', `X-Big: ${'a'.repeat(20 * 1024)}\r\n`), 431],
      ['a malformed percent escape', request('GET /api/immobilies/%E0%A4%A'), 400],
      ['a path parameter over 1000 characters', request(`GET /api/immobilies/${'1'.repeat(2000)}`), 414],
    ])('%s → %i', async (_name, bytes, status) => {
      const res = await socketExchange(url, bytes);
      expect({ status: res.status, contentType: res.headers['content-type'], body: res.body }).toEqual({
        status,
        contentType: 'application/ld+json; charset=utf-8',
        body: hydraError(status),
      });
    });

    it('a body trickled a byte at a time is cut off at REQUEST_TIMEOUT_MS with 408, and nothing is stored', async () => {
      const email = uniqueEmail('slow');
      const head = `POST /api/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/ld+json\r\nContent-Length: 4000\r\n\r\n{"name":"slow","email":"${email}"`;
      const res = await socketExchange(url, Buffer.from(head), { trickle: { everyMs: 200 }, timeoutMs: 15_000 });
      expect({ status: res.status, body: res.body }).toEqual({ status: 408, body: hydraError(408) });
      expect(res.headers.connection).toBe('close');
      // Not before the deadline: the client had its whole REQUEST_TIMEOUT_MS.
      expect(res.closedAfterMs).toBeGreaterThanOrEqual(1400);
      const admin = await server.createAccount('admin');
      const users = await api(url, '/api/users?itemsPerPage=100', { key: admin.key });
      expect(users.status).toBe(200);
      expect(JSON.stringify(users.body)).toContain(admin.email);
      expect(JSON.stringify(users.body)).not.toContain(email);
    });

    it('a body that arrives slowly but within the deadline is served', async () => {
      const body = JSON.stringify({ name: 'steady', email: uniqueEmail('steady') });
      const head = `POST /api/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/ld+json\r\nContent-Length: ${body.length + 3}\r\nConnection: close\r\n\r\n${body}`;
      // Three trickled spaces complete the body (trailing whitespace is valid JSON).
      const res = await socketExchange(url, Buffer.from(head), {
        trickle: { everyMs: 100, bytes: 3 },
        timeoutMs: 15_000,
      });
      expect(res.status).toBe(201);
    });
  });
});
