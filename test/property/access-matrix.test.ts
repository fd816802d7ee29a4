import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startPropertyServer } from '../support/property-server.js';
import { api, type ApiResponse } from '../support/http.js';
import {
  BAD_KEY,
  DENIED,
  NOT_FOUND,
  NO_KEY,
  createImmobilie,
  expectHydraError,
  ids,
  members,
  uniqueEmail,
  type Item,
  TIMESTAMP,
} from './fixtures.js';

type Server = Awaited<ReturnType<typeof startPropertyServer>>;
type Account = Awaited<ReturnType<Server['createAccount']>>;
type Role = 'user' | 'admin' | 'moderator' | 'technical';
type Caller = 'anonymous' | Role;

const CALLERS: readonly Caller[] = ['anonymous', 'user', 'technical', 'moderator', 'admin'];
const ROLES: readonly Role[] = ['user', 'technical', 'moderator', 'admin'];

/** Asserts the status of a denial: 401 (no key), 403 or 404, with its hydra:Error body. */
function expectDenied(res: ApiResponse, status: 401 | 403 | 404): void {
  expectHydraError(res, status, status === 401 ? NO_KEY : status === 403 ? DENIED : NOT_FOUND);
}

describe.each(dialects)('%s: access matrix', (dialect) => {
  let server: Server;
  let url: string;
  /** One account per role, plus a second user whose records are "another account's". */
  const accounts = {} as Record<Role, Account>;
  let other: Account;
  /** Each account's own property. */
  const own = {} as Record<Role, Item>;
  let othersProperty: Item;

  const keyOf = (caller: Caller): string | undefined => (caller === 'anonymous' ? undefined : accounts[caller].key);
  const as = (caller: Caller, path: string, options: Parameters<typeof api>[2] = {}) =>
    api(url, path, { ...options, key: keyOf(caller) });
  const fresh = (role: Role) => server.createAccount(role);

  beforeAll(async () => {
    server = await startPropertyServer({ dialect });
    url = server.url;
    for (const role of ROLES) accounts[role] = await server.createAccount(role);
    other = await server.createAccount('user');
    for (const role of ROLES)
      own[role] = await createImmobilie(url, accounts[role].key, { adresse: `Eigenheim ${role}` });
    othersProperty = await createImmobilie(url, other.key, { adresse: 'Fremdes Haus 1' });
  });
  afterAll(async () => {
    await server?.close();
  });

  // Collections first: later tests add rows, these expect the set-up state.
  describe('collections (state after set-up)', () => {
    it('GET /api/immobilies as anonymous → 401', async () => {
      expectDenied(await as('anonymous', '/api/immobilies'), 401);
    });

    it.each(['user', 'technical'] as const)('GET /api/immobilies as %s → its own properties only', async (role) => {
      const res = await as(role, '/api/immobilies');
      expect(res.status).toBe(200);
      expect(ids(members(res))).toEqual([own[role].id]);
      expect((res.body as Record<string, unknown>)['hydra:totalItems']).toBe(1);
    });

    it.each(['moderator', 'admin'] as const)('GET /api/immobilies as %s → all properties', async (role) => {
      const res = await as(role, '/api/immobilies');
      expect(res.status).toBe(200);
      const all = [...ROLES.map((r) => own[r].id), othersProperty.id].sort((a, b) => a - b);
      expect(ids(members(res))).toEqual(all);
      expect((res.body as Record<string, unknown>)['hydra:totalItems']).toBe(5);
    });

    it('GET /api/users as anonymous → 401', async () => {
      expectDenied(await as('anonymous', '/api/users'), 401);
    });

    it.each(['user', 'technical'] as const)('GET /api/users as %s → only itself', async (role) => {
      const res = await as(role, '/api/users');
      expect(res.status).toBe(200);
      expect(members(res)).toEqual([
        {
          '@id': accounts[role].iri,
          '@type': 'User',
          id: accounts[role].id,
          name: expect.any(String),
          email: expect.any(String),
          role,
        },
      ]);
      expect((res.body as Record<string, unknown>)['hydra:totalItems']).toBe(1);
    });

    it.each(['moderator', 'admin'] as const)('GET /api/users as %s → all users', async (role) => {
      const res = await as(role, '/api/users');
      expect(res.status).toBe(200);
      const all = [...ROLES.map((r) => accounts[r].id), other.id].sort((a, b) => a - b);
      expect(ids(members(res))).toEqual(all);
      expect(members(res).map((m) => m.role)).toEqual(
        all.map((id) => (id === other.id ? 'user' : ROLES.find((r) => accounts[r].id === id))),
      );
    });
  });

  describe('reference data', () => {
    it.each(CALLERS)('GET collections and items of bundeslands and heizungstyps as %s → 200', async (caller) => {
      for (const path of ['/api/bundeslands', '/api/bundeslands/1', '/api/heizungstyps', '/api/heizungstyps/1']) {
        expect((await as(caller, path)).status, path).toBe(200);
      }
    });

    it.each([
      ['anonymous', 401],
      ['user', 403],
      ['moderator', 403],
    ] as const)('POST/PUT/DELETE bundeslands and heizungstyps as %s → %i', async (caller, status) => {
      expectDenied(
        await as(caller, '/api/bundeslands', { method: 'POST', body: { name: `Verboten ${caller}`, code: 'VB' } }),
        status,
      );
      expectDenied(
        await as(caller, '/api/bundeslands/2', { method: 'PUT', body: { name: 'Bayern', code: 'BY' } }),
        status,
      );
      expectDenied(await as(caller, '/api/bundeslands/12', { method: 'DELETE' }), status);
      expectDenied(
        await as(caller, '/api/heizungstyps', { method: 'POST', body: { name: `Verboten ${caller}` } }),
        status,
      );
      expectDenied(await as(caller, '/api/heizungstyps/2', { method: 'PUT', body: { name: 'Geändert' } }), status);
      expectDenied(await as(caller, '/api/heizungstyps/8', { method: 'DELETE' }), status);
      expect((await api(url, '/api/bundeslands/12')).status).toBe(200);
      expect((await api(url, '/api/heizungstyps/8')).status).toBe(200);
      expect((await api(url, '/api/bundeslands?itemsPerPage=100')).body).toMatchObject({ 'hydra:totalItems': 16 });
      expect((await api(url, '/api/heizungstyps?itemsPerPage=100')).body).toMatchObject({ 'hydra:totalItems': 8 });
    });

    it.each([
      ['technical', 'T'],
      ['admin', 'A'],
    ] as const)('POST 201, PUT 200, DELETE 204 on bundeslands and heizungstyps as %s', async (caller, letter) => {
      const land = await as(caller, '/api/bundeslands', {
        method: 'POST',
        body: { name: `Land ${caller}`, code: `${letter}1` },
      });
      expect(land.status).toBe(201);
      const landIri = (land.body as Item)['@id'];
      const putLand = await as(caller, landIri, {
        method: 'PUT',
        body: { name: `Land ${caller} 2`, code: `${letter}2` },
      });
      expect(putLand.status).toBe(200);
      expect(putLand.body).toMatchObject({ name: `Land ${caller} 2`, code: `${letter}2` });
      expect((await as(caller, landIri, { method: 'DELETE' })).status).toBe(204);

      const heizung = await as(caller, '/api/heizungstyps', { method: 'POST', body: { name: `Heizung ${caller}` } });
      expect(heizung.status).toBe(201);
      const heizungIri = (heizung.body as Item)['@id'];
      expect((await as(caller, heizungIri, { method: 'PUT', body: { name: `Heizung ${caller} 2` } })).status).toBe(200);
      expect((await as(caller, heizungIri, { method: 'DELETE' })).status).toBe(204);
    });

    it.each(['technical', 'admin'] as const)('PUT on seeded reference data as %s → 200', async (caller) => {
      const res = await as(caller, '/api/heizungstyps/7', { method: 'PUT', body: { name: `Solar (${caller})` } });
      expect(res.status).toBe(200);
      expect((await api(url, '/api/heizungstyps/7')).body).toMatchObject({ name: `Solar (${caller})` });
    });
  });

  describe('properties of another account', () => {
    it('GET/PATCH/DELETE as anonymous → 401', async () => {
      expectDenied(await as('anonymous', othersProperty['@id']), 401);
      expectDenied(await as('anonymous', othersProperty['@id'], { method: 'PATCH', body: { zimmer: 1 } }), 401);
      expectDenied(await as('anonymous', othersProperty['@id'], { method: 'DELETE' }), 401);
      expectDenied(await as('anonymous', '/api/immobilies/999999'), 401);
    });

    it.each(['user', 'technical'] as const)('GET/PATCH/DELETE as %s → 404, and nothing changes', async (role) => {
      expectDenied(await as(role, othersProperty['@id']), 404);
      expectDenied(await as(role, othersProperty['@id'], { method: 'PATCH', body: { zimmer: 99 } }), 404);
      expectDenied(await as(role, othersProperty['@id'], { method: 'DELETE' }), 404);
      expect((await api(url, othersProperty['@id'], { key: other.key })).body).toEqual(othersProperty);
    });

    it.each(['moderator', 'admin'] as const)('GET 200, PATCH 200, DELETE 204 as %s', async (role) => {
      const get = await as(role, othersProperty['@id']);
      expect(get.status).toBe(200);
      expect((get.body as Item).verwalter).toBe(other.iri);

      const target = await createImmobilie(url, other.key, { adresse: `Zu ändern durch ${role}` });
      const patch = await as(role, target['@id'], { method: 'PATCH', body: { zimmer: 8 } });
      expect(patch.status).toBe(200);
      expect(patch.body).toEqual({ ...target, zimmer: 8, updatedAt: expect.stringMatching(TIMESTAMP) });
      expect((await api(url, target['@id'], { key: other.key })).body).toEqual({
        ...target,
        zimmer: 8,
        updatedAt: expect.stringMatching(TIMESTAMP),
      });

      expect((await as(role, target['@id'], { method: 'DELETE' })).status).toBe(204);
      expectDenied(await api(url, target['@id'], { key: other.key }), 404);
    });

    it.each(ROLES)('own property as %s: GET 200, PATCH 200, DELETE 204', async (role) => {
      expect((await as(role, own[role]['@id'])).body).toEqual(own[role]);
      const target = await createImmobilie(url, accounts[role].key);
      const patch = await as(role, target['@id'], { method: 'PATCH', body: { adresse: 'Selbst geändert' } });
      expect(patch.status).toBe(200);
      expect(patch.body).toEqual({
        ...target,
        adresse: 'Selbst geändert',
        updatedAt: expect.stringMatching(TIMESTAMP),
      });
      expect((await as(role, target['@id'], { method: 'DELETE' })).status).toBe(204);
    });
  });

  describe('verwalter', () => {
    it('POST as anonymous → 401', async () => {
      expectDenied(
        await as('anonymous', '/api/immobilies', {
          method: 'POST',
          body: { adresse: 'x', typ: 'haus', bundesland: '/api/bundeslands/1', verwalter: other.iri },
        }),
        401,
      );
    });

    it.each(['user', 'technical'] as const)('POST with verwalter = someone else as %s → 403', async (role) => {
      const before = (await api(url, '/api/immobilies', { key: other.key })).body;
      const res = await as(role, '/api/immobilies', {
        method: 'POST',
        body: { adresse: 'Untergeschoben 1', typ: 'haus', bundesland: '/api/bundeslands/1', verwalter: other.iri },
      });
      expectDenied(res, 403);
      expect((await api(url, '/api/immobilies', { key: other.key })).body).toEqual(before);
    });

    it.each(ROLES)('POST with verwalter = itself as %s → 201', async (role) => {
      const res = await as(role, '/api/immobilies', {
        method: 'POST',
        body: {
          adresse: 'Selbst verwaltet',
          typ: 'haus',
          bundesland: '/api/bundeslands/1',
          verwalter: accounts[role].iri,
        },
      });
      expect(res.status).toBe(201);
      expect((res.body as Item).verwalter).toBe(accounts[role].iri);
    });

    it.each(['moderator', 'admin'] as const)(
      'POST with verwalter = someone else as %s → 201, and the record belongs to that account',
      async (role) => {
        const res = await as(role, '/api/immobilies', {
          method: 'POST',
          body: {
            adresse: `Im Auftrag (${role})`,
            typ: 'wohnung',
            bundesland: '/api/bundeslands/2',
            verwalter: other.iri,
          },
        });
        expect(res.status).toBe(201);
        const item = res.body as Item;
        expect(item.verwalter).toBe(other.iri);
        expect((await api(url, item['@id'], { key: other.key })).status).toBe(200);
        expect(ids(members(await api(url, '/api/immobilies?itemsPerPage=100', { key: other.key })))).toContain(item.id);
      },
    );

    it('PATCH verwalter as anonymous → 401', async () => {
      expectDenied(await as('anonymous', own.user['@id'], { method: 'PATCH', body: { verwalter: other.iri } }), 401);
    });

    it.each(['user', 'technical'] as const)(
      'PATCH own property verwalter → someone else as %s → 403, unchanged',
      async (role) => {
        expectDenied(await as(role, own[role]['@id'], { method: 'PATCH', body: { verwalter: other.iri } }), 403);
        expectDenied(
          await as(role, own[role]['@id'], {
            method: 'PATCH',
            body: { verwalter: other.iri, adresse: 'Mit Übergabe' },
          }),
          403,
        );
        expect((await as(role, own[role]['@id'])).body).toEqual(own[role]);
      },
    );

    it.each(['user', 'technical'] as const)('PATCH verwalter = itself (no change) as %s → 200', async (role) => {
      const res = await as(role, own[role]['@id'], { method: 'PATCH', body: { verwalter: accounts[role].iri } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual(own[role]);
    });

    it.each(['moderator', 'admin'] as const)(
      'PATCH verwalter → someone else as %s → 200; the new verwalter sees it, the old one no longer',
      async (role) => {
        const owner = await fresh('user');
        const target = await createImmobilie(url, owner.key, { adresse: `Übergabe (${role})` });
        const res = await as(role, target['@id'], { method: 'PATCH', body: { verwalter: other.iri } });
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ ...target, verwalter: other.iri, updatedAt: expect.stringMatching(TIMESTAMP) });
        expect((await api(url, target['@id'], { key: other.key })).status).toBe(200);
        expectDenied(await api(url, target['@id'], { key: owner.key }), 404);
      },
    );
  });

  describe('users', () => {
    it.each(CALLERS)('POST /api/users role=user as %s → 201', async (caller) => {
      const email = uniqueEmail(`reg-${caller}`);
      const res = await as(caller, '/api/users', {
        method: 'POST',
        body: { name: `Registriert (${caller})`, email, role: 'user' },
      });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ email, role: 'user', apiKey: expect.stringMatching(/^prop_/) });
    });

    it('POST /api/users without role creates role user', async () => {
      const res = await as('anonymous', '/api/users', {
        method: 'POST',
        body: { name: 'Ohne Rolle', email: uniqueEmail() },
      });
      expect(res.status).toBe(201);
      expect((res.body as Item).role).toBe('user');
    });

    it.each(['user', 'technical', 'moderator'] as const)('POST /api/users role≠user as %s → 403', async (caller) => {
      for (const role of ['admin', 'moderator', 'technical']) {
        const email = uniqueEmail(`escalate-${caller}`);
        expectDenied(
          await as(caller, '/api/users', { method: 'POST', body: { name: 'Eskalation', email, role } }),
          403,
        );
        const check = await api(url, '/api/users', { method: 'POST', body: { name: 'Probe', email } });
        expect(check.status, `${role}: the refused registration must not have stored ${email}`).toBe(201);
      }
    });

    it('POST /api/users role≠user as anonymous → 403 (not 401)', async () => {
      for (const role of ['admin', 'moderator', 'technical']) {
        const res = await as('anonymous', '/api/users', {
          method: 'POST',
          body: { name: 'Eskalation', email: uniqueEmail('anon-escalate'), role },
        });
        expectDenied(res, 403);
      }
    });

    it('POST /api/users role≠user as admin → 201 with that role; the new key carries it', async () => {
      for (const role of ['admin', 'moderator', 'technical'] as const) {
        const res = await as('admin', '/api/users', {
          method: 'POST',
          body: { name: `Neu ${role}`, email: uniqueEmail(role), role },
        });
        expect(res.status).toBe(201);
        const created = res.body as Item & { apiKey: string };
        expect(created.role).toBe(role);
        const canWriteReference = await api(url, '/api/heizungstyps', {
          method: 'POST',
          key: created.apiKey,
          body: { name: `Probeheizung ${role}` },
        });
        expect(canWriteReference.status, role).toBe(role === 'moderator' ? 403 : 201);
      }
    });

    it('GET /api/users/{id} as anonymous → 401', async () => {
      expectDenied(await as('anonymous', other.iri), 401);
    });

    it.each(['user', 'technical'] as const)(
      'GET another user as %s → 404; itself → 200 without apiKey',
      async (role) => {
        expectDenied(await as(role, other.iri), 404);
        const self = await as(role, accounts[role].iri);
        expect(self.status).toBe(200);
        expect(self.body).toEqual({
          '@context': '/api/contexts/User',
          '@id': accounts[role].iri,
          '@type': 'User',
          id: accounts[role].id,
          name: expect.any(String),
          email: expect.any(String),
          role,
        });
      },
    );

    it.each(['moderator', 'admin'] as const)('GET another user as %s → 200', async (role) => {
      const res = await as(role, other.iri);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        '@context': '/api/contexts/User',
        '@id': other.iri,
        '@type': 'User',
        id: other.id,
        name: expect.any(String),
        email: expect.any(String),
        role: 'user',
      });
    });

    it('PUT/DELETE a user record as anonymous → 401', async () => {
      expectDenied(
        await as('anonymous', other.iri, { method: 'PUT', body: { name: 'Anonym', email: uniqueEmail() } }),
        401,
      );
      expectDenied(await as('anonymous', other.iri, { method: 'DELETE' }), 401);
      expectDenied(
        await as('anonymous', other.iri, {
          method: 'PUT',
          body: { name: 'Anonym', email: uniqueEmail(), role: 'admin' },
        }),
        401,
      );
    });

    it.each(ROLES)('PUT own record as %s → 200; DELETE own record → 204', async (role) => {
      const self = await fresh(role);
      const email = uniqueEmail(`self-${role}`);
      const put = await api(url, self.iri, { method: 'PUT', key: self.key, body: { name: `Selbst ${role}`, email } });
      expect(put.status).toBe(200);
      expect(put.body).toEqual({
        '@context': '/api/contexts/User',
        '@id': self.iri,
        '@type': 'User',
        id: self.id,
        name: `Selbst ${role}`,
        email,
        role,
      });
      expect((await api(url, self.iri, { method: 'DELETE', key: self.key })).status).toBe(204);
      expectHydraError(await api(url, '/api/immobilies', { key: self.key }), 401, BAD_KEY);
    });

    it.each(['user', 'technical'] as const)(
      'PUT/DELETE another user as %s → 404, and nothing changes',
      async (role) => {
        const before = (await api(url, other.iri, { key: other.key })).body;
        expectDenied(
          await as(role, other.iri, { method: 'PUT', body: { name: 'Übernommen', email: uniqueEmail() } }),
          404,
        );
        expectDenied(await as(role, other.iri, { method: 'DELETE' }), 404);
        expect((await api(url, other.iri, { key: other.key })).body).toEqual(before);
      },
    );

    it('PUT/DELETE another user as moderator → 403, and nothing changes', async () => {
      const before = (await api(url, other.iri, { key: other.key })).body;
      expectDenied(
        await as('moderator', other.iri, { method: 'PUT', body: { name: 'Moderiert', email: uniqueEmail() } }),
        403,
      );
      expectDenied(
        await as('moderator', other.iri, { method: 'PUT', body: { ...(before as object), role: 'technical' } }),
        403,
      );
      expectDenied(await as('moderator', other.iri, { method: 'DELETE' }), 403);
      expect((await api(url, other.iri, { key: other.key })).body).toEqual(before);
    });

    it("PUT/DELETE another user as admin → 200/204; admin may change another user's role", async () => {
      const target = await fresh('user');
      const email = uniqueEmail('by-admin');
      const put = await as('admin', target.iri, {
        method: 'PUT',
        body: { name: 'Vom Admin', email, role: 'technical' },
      });
      expect(put.status).toBe(200);
      expect(put.body).toEqual({
        '@context': '/api/contexts/User',
        '@id': target.iri,
        '@type': 'User',
        id: target.id,
        name: 'Vom Admin',
        email,
        role: 'technical',
      });
      expect(
        (await api(url, '/api/heizungstyps', { method: 'POST', key: target.key, body: { name: 'Vom Techniker' } }))
          .status,
      ).toBe(201);
      expect((await as('admin', target.iri, { method: 'DELETE' })).status).toBe(204);
      expectDenied(await as('admin', target.iri), 404);
    });

    it.each(ROLES)('PUT own record changing own role as %s → 403, role unchanged', async (role) => {
      const self = await fresh(role);
      const before = (await api(url, self.iri, { key: self.key })).body as Item;
      const newRole = role === 'admin' ? 'user' : 'admin';
      expectDenied(
        await api(url, self.iri, {
          method: 'PUT',
          key: self.key,
          body: { name: before.name, email: before.email, role: newRole },
        }),
        403,
      );
      expect((await api(url, self.iri, { key: self.key })).body).toEqual(before);
      const same = await api(url, self.iri, {
        method: 'PUT',
        key: self.key,
        body: { name: before.name, email: before.email, role },
      });
      expect(same.status).toBe(200);
      expect((same.body as Item).role).toBe(role);
    });
  });

  describe('authentication', () => {
    it.each([
      ['GET', '/api/immobilies'],
      ['POST', '/api/immobilies'],
      ['GET', '/api/immobilies/1'],
      ['PATCH', '/api/immobilies/1'],
      ['DELETE', '/api/immobilies/1'],
      ['GET', '/api/users'],
      ['GET', '/api/users/1'],
      ['PUT', '/api/users/1'],
      ['DELETE', '/api/users/1'],
      ['POST', '/api/bundeslands'],
      ['PUT', '/api/bundeslands/1'],
      ['DELETE', '/api/heizungstyps/1'],
    ])('%s %s without X-API-KEY → 401', async (method, path) => {
      const body =
        method === 'GET' || method === 'DELETE'
          ? undefined
          : method === 'PATCH'
            ? { zimmer: 1 }
            : {
                name: 'x',
                email: uniqueEmail(),
                code: 'XX',
                adresse: 'x',
                typ: 'haus',
                bundesland: '/api/bundeslands/1',
              };
      expectDenied(await api(url, path, { method, body }), 401);
    });

    it.each([
      ['GET', '/api/bundeslands'],
      ['GET', '/api/bundeslands/1'],
      ['GET', '/api/heizungstyps'],
      ['GET', '/api/heizungstyps/1'],
      ['POST', '/api/users'],
      ['GET', '/api/immobilies'],
      ['GET', '/api/users'],
      ['POST', '/api/immobilies'],
      ['GET', '/api'],
    ])('%s %s with an unknown X-API-KEY → 401 Invalid credentials', async (method, path) => {
      const body =
        method === 'POST'
          ? { name: 'Tippfehler', email: uniqueEmail(), adresse: 'x', typ: 'haus', bundesland: '/api/bundeslands/1' }
          : undefined;
      for (const key of ['nope', `prop_${'A'.repeat(43)}`, `${accounts.admin.key}x`, accounts.admin.key.slice(0, -1)]) {
        expectHydraError(await api(url, path, { method, key, body }), 401, BAD_KEY);
      }
    });

    it('the registration with an unknown key stored nothing', async () => {
      const email = uniqueEmail('typo');
      expectHydraError(
        await api(url, '/api/users', { method: 'POST', key: 'typo', body: { name: 'Typo', email } }),
        401,
        BAD_KEY,
      );
      expect((await api(url, '/api/users', { method: 'POST', body: { name: 'Typo', email } })).status).toBe(201);
    });

    it('401 comes before 404 for anonymous callers', async () => {
      expectDenied(await api(url, '/api/users/999999'), 401);
      expectDenied(await api(url, '/api/immobilies/999999', { method: 'DELETE' }), 401);
    });
  });
});
