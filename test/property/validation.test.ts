import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startPropertyServer } from '../support/property-server.js';
import { api } from '../support/http.js';
import {
  createImmobilie,
  createItem,
  expectHydraError,
  expectViolation,
  expectViolationAt,
  expectViolations,
  immobilieBody,
  required,
  uniqueEmail,
  violation,
  type Item,
} from './fixtures.js';

type Server = Awaited<ReturnType<typeof startPropertyServer>>;
type Account = Awaited<ReturnType<Server['createAccount']>>;

describe.each(dialects)('%s: validation (400 ConstraintViolationList)', (dialect) => {
  let server: Server;
  let url: string;
  let admin: Account;
  let user: Account;

  const postImmobilie = (body: unknown) => api(url, '/api/immobilies', { method: 'POST', key: user.key, body });
  const postRaw = (path: string, text: string, key?: string) =>
    api(url, path, { method: 'POST', key, body: text, contentType: 'application/ld+json' });

  beforeAll(async () => {
    server = await startPropertyServer({ dialect });
    url = server.url;
    admin = await server.createAccount('admin');
    user = await server.createAccount('user');
  });
  afterAll(async () => {
    await server?.close();
  });

  describe('Immobilie type errors', () => {
    it.each([
      ['zimmer "abc"', { zimmer: 'abc' }, violation.type('zimmer', 'int')],
      ['zimmer "4" (no coercion from strings)', { zimmer: '4' }, violation.type('zimmer', 'int')],
      ['zimmer 2.5', { zimmer: 2.5 }, violation.type('zimmer', 'int')],
      ['zimmer true', { zimmer: true }, violation.type('zimmer', 'int')],
      ['wohnflaeche "x"', { wohnflaeche: 'x' }, violation.type('wohnflaeche', 'float')],
      ['nutzflaeche [] ', { nutzflaeche: [] }, violation.type('nutzflaeche', 'float')],
      ['kaufpreis "1000"', { kaufpreis: '1000' }, violation.type('kaufpreis', 'float')],
      ['adresse 5', { adresse: 5 }, violation.type('adresse', 'string')],
      ['adresse {}', { adresse: { strasse: 'x' } }, violation.type('adresse', 'string')],
    ] as const)('%s', async (_label, overrides, expected) => {
      expectViolation(await postImmobilie(immobilieBody(overrides)), expected);
    });

    it('typ must be one of the ImmobilienTyp values', async () => {
      for (const typ of ['villa', 'Haus', 'HAUS', '']) {
        const res = await postImmobilie(immobilieBody({ typ }));
        if (typ === '') expectViolation(res, [violation.choice('typ'), violation.notBlank('typ')]);
        else expectViolation(res, violation.choice('typ'));
      }
    });

    it('typ given as a number is a type error or an invalid choice', async () => {
      expectViolation(await postImmobilie(immobilieBody({ typ: 3 })), [
        violation.type('typ', 'string'),
        violation.choice('typ'),
      ]);
    });

    it('several problems are reported together', async () => {
      expectViolations(await postImmobilie(immobilieBody({ zimmer: 'abc', typ: 'villa', wohnflaeche: -1 })), [
        violation.type('zimmer', 'int'),
        violation.choice('typ'),
        violation.positiveOrZero('wohnflaeche'),
      ]);
    });
  });

  describe('Immobilie ranges', () => {
    it.each([
      ['wohnflaeche -1', { wohnflaeche: -1 }, violation.positiveOrZero('wohnflaeche')],
      ['nutzflaeche -0.5', { nutzflaeche: -0.5 }, violation.positiveOrZero('nutzflaeche')],
      ['zimmer -1', { zimmer: -1 }, violation.positiveOrZero('zimmer')],
      ['kaufpreis -1', { kaufpreis: -1 }, violation.positiveOrZero('kaufpreis')],
      ['zimmer 10001', { zimmer: 10001 }, violation.lessThanOrEqual('zimmer', '10000')],
      ['zimmer 1e12', { zimmer: 1e12 }, violation.lessThanOrEqual('zimmer', '10000')],
    ] as const)('%s', async (_label, overrides, expected) => {
      expectViolation(await postImmobilie(immobilieBody(overrides)), expected);
    });

    it('zimmer 10000 and 0 are accepted', async () => {
      expect((await postImmobilie(immobilieBody({ zimmer: 10000 }))).status).toBe(201);
      expect((await postImmobilie(immobilieBody({ zimmer: 0 }))).status).toBe(201);
    });

    it('kaufpreis 1e308 is over the maximum', async () => {
      const res = await postImmobilie(immobilieBody({ kaufpreis: 1e308 }));
      expectViolationAt(res, 'kaufpreis');
      const only = (res.body as { violations: { message: string; code: string }[] }).violations[0];
      expect(only?.code).toBe('30fbb013-d015-4232-8b3b-8f3be97a7e14');
      expect(only?.message).toMatch(/^This value should be less than or equal to .+\.$/);
    });

    it('wohnflaeche 1e300 is over the maximum', async () => {
      const res = await postImmobilie(immobilieBody({ wohnflaeche: 1e300 }));
      expectViolationAt(res, 'wohnflaeche');
      expect((res.body as { violations: { code: string }[] }).violations[0]?.code).toBe(
        '30fbb013-d015-4232-8b3b-8f3be97a7e14',
      );
    });

    it('a number literal that overflows to Infinity is rejected with 400', async () => {
      const text = JSON.stringify(immobilieBody()).replace('"kaufpreis":420000', '"kaufpreis":1e400');
      expect(text).toContain('1e400');
      expectViolationAt(await postRaw('/api/immobilies', text, user.key), 'kaufpreis');
    });

    it('adresse longer than 255 characters is too long; 255 is fine', async () => {
      expectViolation(
        await postImmobilie(immobilieBody({ adresse: 'a'.repeat(256) })),
        violation.tooLong('adresse', 255),
      );
      expect((await postImmobilie(immobilieBody({ adresse: 'ä'.repeat(255) }))).status).toBe(201);
    });

    it('an empty adresse is blank', async () => {
      expectViolation(await postImmobilie(immobilieBody({ adresse: '' })), violation.notBlank('adresse'));
    });

    it('a NUL character in a string answers 400, not 500', async () => {
      expectViolationAt(await postImmobilie(immobilieBody({ adresse: 'Lindenweg\u00004' })), 'adresse');
      const created = await createImmobilie(url, user.key);
      expectViolationAt(
        await api(url, created['@id'], { method: 'PATCH', key: user.key, body: { adresse: '\u0000' } }),
        'adresse',
      );
    });
  });

  describe('Immobilie relations', () => {
    it.each([
      ['unknown Bundesland IRI', '/api/bundeslands/999', violation.itemNotFound('bundesland', '/api/bundeslands/999')],
      ['malformed IRI foo', 'foo', violation.invalidIri('bundesland', 'foo')],
      ['a bare id is not an IRI', '3', violation.invalidIri('bundesland', '3')],
      ['IRI of another resource', '/api/heizungstyps/1', violation.invalidIri('bundesland', '/api/heizungstyps/1')],
      ['non-numeric id', '/api/bundeslands/abc', violation.invalidIri('bundesland', '/api/bundeslands/abc')],
      ['empty string', '', [violation.invalidIri('bundesland', ''), ...required('bundesland')]],
    ] as const)('bundesland: %s', async (_label, iri, expected) => {
      expectViolation(await postImmobilie(immobilieBody({ bundesland: iri })), expected);
    });

    it.each([
      ['unknown IRI', '/api/heizungstyps/999', violation.itemNotFound('heizungstyp', '/api/heizungstyps/999')],
      ['non-numeric id', '/api/heizungstyps/abc', violation.invalidIri('heizungstyp', '/api/heizungstyps/abc')],
      ['IRI of another resource', '/api/bundeslands/1', violation.invalidIri('heizungstyp', '/api/bundeslands/1')],
    ] as const)('heizungstyp: %s', async (_label, iri, expected) => {
      expectViolation(await postImmobilie(immobilieBody({ heizungstyp: iri })), expected);
    });

    it('an id too large for the database is a 400, never a 500', async () => {
      const res = await postImmobilie(immobilieBody({ bundesland: '/api/bundeslands/99999999999999999999' }));
      expectViolationAt(res, 'bundesland');
    });

    it('nested objects instead of IRIs are refused', async () => {
      expectViolation(
        await postImmobilie(immobilieBody({ bundesland: { '@id': '/api/bundeslands/1' } })),
        violation.nested('bundesland'),
      );
      expectViolation(
        await postImmobilie(immobilieBody({ heizungstyp: { name: 'Neu' } })),
        violation.nested('heizungstyp'),
      );
    });

    it('verwalter must be a known user IRI', async () => {
      const res = await api(url, '/api/immobilies', {
        method: 'POST',
        key: admin.key,
        body: immobilieBody({ verwalter: '/api/users/999999' }),
      });
      expectViolation(res, violation.itemNotFound('verwalter', '/api/users/999999'));
      const wrong = await api(url, '/api/immobilies', {
        method: 'POST',
        key: admin.key,
        body: immobilieBody({ verwalter: '/api/bundeslands/1' }),
      });
      expectViolation(wrong, violation.invalidIri('verwalter', '/api/bundeslands/1'));
    });
  });

  describe('missing required fields', () => {
    it('adresse, typ and bundesland are each required on create', async () => {
      const { adresse: _a, ...noAdresse } = immobilieBody();
      expectViolation(await postImmobilie(noAdresse), violation.notBlank('adresse'));
      const { typ: _t, ...noTyp } = immobilieBody();
      expectViolation(await postImmobilie(noTyp), required('typ'));
      const { bundesland: _b, ...noBundesland } = immobilieBody();
      expectViolation(await postImmobilie(noBundesland), required('bundesland'));
    });

    it('an empty object lists all three', async () => {
      const res = await postImmobilie({});
      expect(res.status).toBe(400);
      const paths = (res.body as { violations: { propertyPath: string }[] }).violations
        .map((v) => v.propertyPath)
        .sort();
      expect(paths).toEqual(['adresse', 'bundesland', 'typ']);
    });

    it('null for a required field on create is refused', async () => {
      expectViolation(await postImmobilie(immobilieBody({ bundesland: null })), required('bundesland'));
      expectViolation(await postImmobilie(immobilieBody({ adresse: null })), required('adresse'));
    });

    it('PATCH with null on a required field answers 400 and changes nothing', async () => {
      const created = await createImmobilie(url, user.key);
      for (const field of ['adresse', 'typ', 'bundesland']) {
        expectViolation(
          await api(url, created['@id'], { method: 'PATCH', key: user.key, body: { [field]: null } }),
          required(field),
        );
      }
      expect((await api(url, created['@id'], { key: user.key })).body).toEqual(created);
    });

    it('an invalid PATCH changes nothing, not even the valid keys sent with it', async () => {
      const created = await createImmobilie(url, user.key);
      expectViolation(
        await api(url, created['@id'], {
          method: 'PATCH',
          key: user.key,
          body: { adresse: 'Geändert 1', zimmer: 'viele' },
        }),
        violation.type('zimmer', 'int'),
      );
      expect((await api(url, created['@id'], { key: user.key })).body).toEqual(created);
    });

    it('PATCH validates types, ranges and IRIs like POST', async () => {
      const created = await createImmobilie(url, user.key);
      const patch = (body: unknown) => api(url, created['@id'], { method: 'PATCH', key: user.key, body });
      expectViolation(await patch({ zimmer: 2.5 }), violation.type('zimmer', 'int'));
      expectViolation(await patch({ kaufpreis: -5 }), violation.positiveOrZero('kaufpreis'));
      expectViolation(await patch({ typ: 'schloss' }), violation.choice('typ'));
      expectViolation(
        await patch({ heizungstyp: '/api/heizungstyps/999' }),
        violation.itemNotFound('heizungstyp', '/api/heizungstyps/999'),
      );
      expectViolation(await patch({ bundesland: 'foo' }), violation.invalidIri('bundesland', 'foo'));
      expectViolation(await patch({ adresse: 'x'.repeat(256) }), violation.tooLong('adresse', 255));
    });
  });

  describe('bodies that are not JSON objects', () => {
    it('malformed JSON is a syntax error on the root path', async () => {
      expectViolation(await postRaw('/api/immobilies', '{"adresse": ', user.key), violation.syntax());
      expectViolation(await postRaw('/api/users', '{name: "x"}'), violation.syntax());
      expectViolation(
        await api(url, '/api/bundeslands/1', { method: 'PUT', key: admin.key, body: '{"name":"a",}' }),
        violation.syntax(),
      );
    });

    it('an empty body with a JSON Content-Type is a syntax error', async () => {
      expectViolation(await postRaw('/api/immobilies', '', user.key), violation.syntax());
    });

    it('a JSON array, number, string or null is not an object', async () => {
      for (const text of ['[]', '[{"adresse":"x"}]', '5', '"text"', 'null', 'true']) {
        expectViolation(await postRaw('/api/immobilies', text, user.key), violation.notObject());
      }
      const created = await createImmobilie(url, user.key);
      expectViolation(
        await api(url, created['@id'], { method: 'PATCH', key: user.key, body: '[1,2]' }),
        violation.notObject(),
      );
    });
  });

  describe('User', () => {
    it('name and email are required on create', async () => {
      expectViolation(
        await api(url, '/api/users', { method: 'POST', body: { email: uniqueEmail() } }),
        violation.notBlank('name'),
      );
      expectViolation(
        await api(url, '/api/users', { method: 'POST', body: { name: 'Ohne Mail' } }),
        violation.notBlank('email'),
      );
      expectViolation(
        await api(url, '/api/users', { method: 'POST', body: { name: '', email: uniqueEmail() } }),
        violation.notBlank('name'),
      );
    });

    it('email must be valid', async () => {
      for (const email of ['not-an-email', 'a@', '@example.org', 'two@@example.org', 'space in@example.org']) {
        expectViolation(
          await api(url, '/api/users', { method: 'POST', body: { name: 'Bad Mail', email } }),
          violation.email('email'),
        );
      }
    });

    it('email must be unique, on create and on update', async () => {
      const email = uniqueEmail('taken');
      expect((await api(url, '/api/users', { method: 'POST', body: { name: 'First', email } })).status).toBe(201);
      expectViolation(
        await api(url, '/api/users', { method: 'POST', body: { name: 'Second', email } }),
        violation.unique('email'),
      );
      expectViolation(
        await api(url, user.iri, { method: 'PUT', key: user.key, body: { name: 'Me', email } }),
        violation.unique('email'),
      );
      expectViolation(
        await api(url, user.iri, { method: 'PUT', key: admin.key, body: { name: 'Me', email } }),
        violation.unique('email'),
      );
    });

    it('strings over their maximum length are too long', async () => {
      expectViolation(
        await api(url, '/api/users', { method: 'POST', body: { name: 'n'.repeat(256), email: uniqueEmail() } }),
        violation.tooLong('name', 255),
      );
      const longEmail = `${'a'.repeat(250)}@example.org`;
      const res = await api(url, '/api/users', { method: 'POST', body: { name: 'Long', email: longEmail } });
      expect(res.status).toBe(400);
      expect((res.body as { violations: { propertyPath: string }[] }).violations.map((v) => v.propertyPath)).toContain(
        'email',
      );
    });

    it('type errors on user fields', async () => {
      expectViolation(
        await api(url, '/api/users', { method: 'POST', body: { name: 42, email: uniqueEmail() } }),
        violation.type('name', 'string'),
      );
      expectViolation(
        await api(url, '/api/users', { method: 'POST', body: { name: 'Typed', email: ['x@example.org'] } }),
        violation.type('email', 'string'),
      );
    });

    it('an unknown role is not a valid choice', async () => {
      expectViolation(
        await api(url, '/api/users', {
          method: 'POST',
          key: admin.key,
          body: { name: 'Role', email: uniqueEmail(), role: 'superuser' },
        }),
        violation.choice('role'),
      );
    });

    it('a NUL character in a user name answers 400', async () => {
      expectViolationAt(
        await api(url, '/api/users', { method: 'POST', body: { name: 'Nul\u0000Name', email: uniqueEmail() } }),
        'name',
      );
    });

    it('a NUL character in an email answers 400, on create and on update', async () => {
      expectViolationAt(
        await api(url, '/api/users', { method: 'POST', body: { name: 'Nul Mail', email: 'nul\u0000@example.org' } }),
        'email',
      );
      expectViolationAt(
        await api(url, user.iri, {
          method: 'PUT',
          key: user.key,
          body: { name: 'Nul Mail', email: 'nul\u0000@example.org' },
        }),
        'email',
      );
    });

    it('PUT missing a required field answers 400', async () => {
      expectViolation(
        await api(url, user.iri, { method: 'PUT', key: user.key, body: { name: 'Nur Name' } }),
        violation.notBlank('email'),
      );
      expectViolation(
        await api(url, user.iri, { method: 'PUT', key: user.key, body: { email: uniqueEmail() } }),
        violation.notBlank('name'),
      );
    });
  });

  describe('reference data', () => {
    it('Bundesland name and code are required, also on PUT', async () => {
      expectViolation(
        await api(url, '/api/bundeslands', { method: 'POST', key: admin.key, body: { name: 'Ohne Code' } }),
        violation.notBlank('code'),
      );
      expectViolation(
        await api(url, '/api/bundeslands', { method: 'POST', key: admin.key, body: { code: 'OC' } }),
        violation.notBlank('name'),
      );
      expectViolation(
        await api(url, '/api/bundeslands/1', { method: 'PUT', key: admin.key, body: { name: 'Baden-Württemberg' } }),
        violation.notBlank('code'),
      );
      expectViolation(
        await api(url, '/api/heizungstyps/1', { method: 'PUT', key: admin.key, body: {} }),
        violation.notBlank('name'),
      );
      expect((await api(url, '/api/bundeslands/1')).body).toMatchObject({ name: 'Baden-Württemberg', code: 'BW' });
    });

    it('Bundesland code has at most 2 and name at most 100 characters', async () => {
      expectViolation(
        await api(url, '/api/bundeslands', {
          method: 'POST',
          key: admin.key,
          body: { name: 'Dreibuchstabenland', code: 'ABC' },
        }),
        violation.tooLong('code', 2),
      );
      expectViolation(
        await api(url, '/api/bundeslands', {
          method: 'POST',
          key: admin.key,
          body: { name: 'L'.repeat(101), code: 'LL' },
        }),
        violation.tooLong('name', 100),
      );
      expectViolation(
        await api(url, '/api/heizungstyps', { method: 'POST', key: admin.key, body: { name: 'H'.repeat(101) } }),
        violation.tooLong('name', 100),
      );
    });

    it('Bundesland name and code are unique, on create and on update', async () => {
      expectViolation(
        await api(url, '/api/bundeslands', { method: 'POST', key: admin.key, body: { name: 'Bayern', code: 'XB' } }),
        violation.unique('name'),
      );
      expectViolation(
        await api(url, '/api/bundeslands', {
          method: 'POST',
          key: admin.key,
          body: { name: 'Neu-Bayern', code: 'BY' },
        }),
        violation.unique('code'),
      );
      expectViolation(
        await api(url, '/api/bundeslands/3', { method: 'PUT', key: admin.key, body: { name: 'Berlin', code: 'BY' } }),
        violation.unique('code'),
      );
      const land = await createItem(url, '/api/bundeslands', admin.key, { name: 'Einzigland', code: 'EL' });
      expectViolation(
        await api(url, land['@id'], { method: 'PUT', key: admin.key, body: { name: 'Sachsen', code: 'EL' } }),
        violation.unique('name'),
      );
    });

    it('Heizungstyp name is unique', async () => {
      const existing = (await api(url, '/api/heizungstyps/1')).body as Item;
      expectViolation(
        await api(url, '/api/heizungstyps', { method: 'POST', key: admin.key, body: { name: existing.name } }),
        violation.unique('name'),
      );
    });

    it('type errors and NUL characters in reference data', async () => {
      expectViolation(
        await api(url, '/api/bundeslands', { method: 'POST', key: admin.key, body: { name: 7, code: 'SI' } }),
        violation.type('name', 'string'),
      );
      expectViolationAt(
        await api(url, '/api/heizungstyps', { method: 'POST', key: admin.key, body: { name: 'Nul\u0000Heizung' } }),
        'name',
      );
      expectViolationAt(
        await api(url, '/api/bundeslands/2', {
          method: 'PUT',
          key: admin.key,
          body: { name: 'Bayern', code: 'B\u0000' },
        }),
        'code',
      );
    });
  });

  describe('never a 500 for bad input', () => {
    const uglyQueries = [
      '?page=1e400',
      '?page=99999999999999999999',
      '?page=1.5',
      '?page[]=1',
      '?itemsPerPage=-0',
      '?itemsPerPage=1e400',
      '?itemsPerPage=abc',
      '?itemsPerPage[]=3',
      '?itemsPerPage=99999999999999999999',
      '?order[kaufpreis]=sideways',
      '?order=kaufpreis',
      '?order[]=desc',
      '?order[kaufpreis][x]=desc',
      '?bundesland[]=',
      '?bundesland=',
      '?bundesland[x][y]=1',
      '?bundesland=/api/bundeslands/99999999999999999999',
      '?bundesland=99999999999999999999',
      '?bundesland=%00',
      '?typ=%00',
      '?typ[]=%00',
      '?typ[a][b]=c',
      '?typ[0]=%00&typ[1]=haus',
      '?bundesland[]=%00',
      '?bundesland[]=/api/bundeslands/%00',
      '?order[kaufpreis]=%00',
      '?order[%00]=desc',
      '?page=%00',
      '?itemsPerPage=%00',
      '?%00=%00',
      '?typ=haus&typ=wohnung',
      '?page=1&page=2',
      '?itemsPerPage=1&itemsPerPage=2',
      '?%ZZ',
      '?typ=%ZZ',
      '?typ=%C3%28',
      '?typ=%F0%9F%92%A9',
      '?typ=%E2%80%AE%E2%80%8B',
      '?typ=%ED%A0%80',
      '?=&&=&[]=',
      `?typ=${'x'.repeat(6000)}`,
      `?${Array.from({ length: 300 }, (_, i) => `k${i}=v${i}`).join('&')}`,
    ];

    it.each(uglyQueries.map((q) => [q.length > 80 ? `${q.slice(0, 60)}… (${q.length} chars)` : q, q]))(
      'GET /api/immobilies%s',
      async (_label, query) => {
        const res = await api(url, `/api/immobilies${query}`, { key: admin.key });
        expect(res.status, res.text).toBeLessThan(500);
        expect([200, 400], res.text).toContain(res.status);
      },
    );

    it.each(uglyQueries.slice(0, 10).map((q) => [q]))('GET /api/bundeslands%s', async (query) => {
      const res = await api(url, `/api/bundeslands${query}`);
      expect([200, 400], res.text).toContain(res.status);
    });

    // Not integers, or integers no item has: the item routes answer 404 (never a database error).
    const badIds = [
      '0',
      '-1',
      '99999999999999999999',
      '1e3',
      'abc',
      '%00',
      '1%00',
      '%20',
      '%E2%82%AC',
      '9'.repeat(400),
    ];
    // Forms a server may reject (400) or treat as some id; only "no 5xx" is required of them.
    const oddIds = ['%ZZ', '+1', '0x10', '01', '1.5', '%2e%2e', '..%2f..%2fetc%2fpasswd'];

    it.each(badIds.map((id) => [id.length > 20 ? `${id.slice(0, 12)}… (${id.length} digits)` : id, id]))(
      'GET/PATCH/DELETE /api/immobilies/%s answers 404',
      async (_label, id) => {
        expectHydraError(await api(url, `/api/immobilies/${id}`, { key: admin.key }), 404, 'Not Found');
        expectHydraError(
          await api(url, `/api/immobilies/${id}`, { method: 'PATCH', key: admin.key, body: { zimmer: 1 } }),
          404,
          'Not Found',
        );
        expectHydraError(
          await api(url, `/api/immobilies/${id}`, { method: 'DELETE', key: admin.key }),
          404,
          'Not Found',
        );
      },
    );

    it.each(badIds.map((id) => [id.length > 20 ? `${id.slice(0, 12)}… (${id.length} digits)` : id, id]))(
      'GET/PUT /api/bundeslands/%s and GET /api/users/… answer 404',
      async (_label, id) => {
        expectHydraError(await api(url, `/api/bundeslands/${id}`), 404, 'Not Found');
        expectHydraError(
          await api(url, `/api/bundeslands/${id}`, { method: 'PUT', key: admin.key, body: { name: 'X', code: 'XX' } }),
          404,
          'Not Found',
        );
        expectHydraError(
          await api(url, `/api/heizungstyps/${id}`, { method: 'DELETE', key: admin.key }),
          404,
          'Not Found',
        );
        expectHydraError(await api(url, `/api/users/${id}`, { key: admin.key }), 404, 'Not Found');
      },
    );

    it.each(oddIds.map((id) => [id]))('odd id %s answers below 500 on every item route', async (id) => {
      for (const path of [`/api/immobilies/${id}`, `/api/bundeslands/${id}`, `/api/users/${id}`]) {
        const res = await api(url, path, { key: admin.key });
        expect(res.status, `${path}: ${res.text}`).toBeLessThan(500);
      }
    });

    it('odd unicode in strings is stored and returned unchanged', async () => {
      const adresse = 'Straße 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 👩‍👩‍👧 \u202Eabc\u200B ﷽ \uFEFF';
      const res = await postImmobilie(immobilieBody({ adresse }));
      expect(res.status).toBe(201);
      const again = await api(url, (res.body as Item)['@id'], { key: user.key });
      expect((again.body as Item).adresse).toBe(adresse);
    });

    it.each([
      ['a lone surrogate', '{"adresse":"\\ud800","typ":"haus","bundesland":"/api/bundeslands/1"}'],
      [
        'deeply nested arrays',
        `{"adresse":${'['.repeat(2000)}${']'.repeat(2000)},"typ":"haus","bundesland":"/api/bundeslands/1"}`,
      ],
      ['a huge exponent on zimmer', '{"adresse":"x","typ":"haus","bundesland":"/api/bundeslands/1","zimmer":1e999999}'],
      [
        '-0 and tiny numbers',
        '{"adresse":"x","typ":"haus","bundesland":"/api/bundeslands/1","zimmer":-0,"wohnflaeche":1e-320}',
      ],
      ['a __proto__ key', '{"__proto__":{"admin":true},"adresse":"x","typ":"haus","bundesland":"/api/bundeslands/1"}'],
      ['duplicated keys', '{"adresse":"x","adresse":5,"typ":"haus","bundesland":"/api/bundeslands/1"}'],
      ['a BOM before the JSON', '\uFEFF{"adresse":"x","typ":"haus","bundesland":"/api/bundeslands/1"}'],
      ['a NUL in a key', '{"adr\\u0000esse":"x","typ":"haus","bundesland":"/api/bundeslands/1"}'],
      ['a NUL in an IRI', '{"adresse":"x","typ":"haus","bundesland":"/api/bundeslands/1\\u0000"}'],
    ])('POST with %s answers below 500', async (_label, text) => {
      const res = await postRaw('/api/immobilies', text, user.key);
      expect(res.status, res.text).toBeLessThan(500);
      expect([201, 400], res.text).toContain(res.status);
    });

    it('a huge exponent on zimmer is a 400', async () => {
      const res = await postRaw(
        '/api/immobilies',
        '{"adresse":"x","typ":"haus","bundesland":"/api/bundeslands/1","zimmer":1e999999}',
        user.key,
      );
      expectViolationAt(res, 'zimmer');
    });
  });
});
