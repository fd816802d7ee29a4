import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api } from '../support/http.js';
import { dialects, startPropertyServer } from '../support/property-server.js';
import { createImmobilie, expectHydraError, expectProblem, expectViolation, immobilieBody, uniqueEmail } from './fixtures.js';

type Server = Awaited<ReturnType<typeof startPropertyServer>>;
type Account = Awaited<ReturnType<Server['createAccount']>>;

const TYPE = 'ba785a8c-82cb-4283-967c-3cf342181b40';
const nul = (propertyPath: string) => ({ propertyPath, message: 'This value must not contain a NUL character (U+0000).', code: TYPE });

/** Hostile and odd input (issue 13, item 7): the same 400 on both dialects, nothing stored. */
describe.each(dialects)('%s: property hostile input', (dialect) => {
  let server: Server;
  let url: string;
  let user: Account;

  beforeAll(async () => {
    server = await startPropertyServer({ dialect });
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
    ])('in a registration (%s) is a violation, and no account is created', async (path, body) => {
      const sent = body();
      const res = await api(url, '/api/users', { method: 'POST', body: sent });
      expectViolation(res, nul(path));
    });

    it('in a created or patched property is a violation, and nothing changes', async () => {
      expectViolation(await api(url, '/api/immobilies', { method: 'POST', key: user.key, body: immobilieBody({ adresse: 'Weg\u00001' }) }), nul('adresse'));
      const item = await createImmobilie(url, user.key);
      expectViolation(await api(url, item['@id'] as string, { method: 'PATCH', key: user.key, body: { adresse: '\u0000' } }), nul('adresse'));
      expectViolation(await api(url, item['@id'] as string, { method: 'PATCH', key: user.key, body: { typ: 'haus\u0000' } }), nul('typ'));
      expectViolation(await api(url, '/api/immobilies', { method: 'POST', key: user.key, body: immobilieBody({ bundesland: '/api/bundeslands/1\u0000' }) }), nul('bundesland'));
      expectViolation(await api(url, '/api/immobilies', { method: 'POST', key: user.key, body: { ...immobilieBody(), 'x\u0000': 1 } }), nul('x\u0000'));
      const after = await api(url, item['@id'] as string, { key: user.key });
      expect((after.body as Record<string, unknown>).adresse).toBe(immobilieBody().adresse);
      const list = await api(url, '/api/immobilies', { key: user.key });
      expect((list.body as Record<string, unknown>)['hydra:totalItems']).toBe(1);
    });

    it.each(['/api/immobilies/1%00', '/api/immobilies/%00', '/api/users/1%00.jsonld', '/api/immobilies?typ=haus%00', '/api/immobilies?order%5Bid%00%5D=asc', '/api/bundeslands?page=1%00', '/api/nowhere%00'])('in the URL %s is a 400 hydra:Error (problem+json when asked)', async (path) => {
      expectHydraError(await api(url, path, { key: user.key }), 400);
      expectProblem(await api(url, path, { key: user.key, accept: 'application/json' }), 400);
    });
  });
});
