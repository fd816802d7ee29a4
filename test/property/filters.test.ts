import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api } from '../support/http.js';
import { dialects, startPropertyServer } from '../support/property-server.js';
import {
  IMMOBILIE_SEARCH_VARIABLES,
  TIMESTAMP,
  createImmobilie,
  expectHydraError,
  expectProblemViolations,
  expectViolations,
  ids,
  members,
  violation,
  type Item,
  type Violation,
} from './fixtures.js';

/**
 * Issue 12 §2 and §5 over HTTP, on both dialects: range, date, exists, reference and order filters
 * (the price per m² included), the property filter, unusable values as 400 violations, timestamps,
 * the subresource /api/users/{id}/immobilies, client-controlled and partial pagination, the count
 * cap, and totals the database maintains.
 */

type Server = Awaited<ReturnType<typeof startPropertyServer>>;
type Account = Awaited<ReturnType<Server['createAccount']>>;
type Body = Record<string, unknown>;

const TYPE_ERROR = 'ba785a8c-82cb-4283-967c-3cf342181b40';
const typeViolation = (propertyPath: string, message: string): Violation => ({
  propertyPath,
  message,
  code: TYPE_ERROR,
});
const dateViolation = (propertyPath: string): Violation => ({
  propertyPath,
  message: 'This value is not a valid datetime.',
  code: '1a9da513-2640-4f84-9b6a-4d99dcddc628',
});

/** The owner's rows; price per m² in the comment (null: no area, or an area of 0). */
const ROWS = [
  {
    adresse: 'Lindenweg 4, 04109 Leipzig',
    typ: 'haus',
    kaufpreis: 300000,
    wohnflaeche: 100,
    nutzflaeche: 20,
    zimmer: 4,
    bundesland: 13,
    heizungstyp: 2,
  }, // 3000
  {
    adresse: 'Karl-Liebknecht-Straße 10, 04107 Leipzig',
    typ: 'wohnung',
    kaufpreis: 150000,
    wohnflaeche: 60,
    nutzflaeche: null,
    zimmer: 2,
    bundesland: 13,
    heizungstyp: null,
  }, // 2500
  {
    adresse: 'Hauptstraße 1, 80331 München',
    typ: 'haus',
    kaufpreis: 900000,
    wohnflaeche: 150,
    nutzflaeche: 30,
    zimmer: 6,
    bundesland: 2,
    heizungstyp: 3,
  }, // 6000
  {
    adresse: 'Gartenweg 2, 01067 Dresden',
    typ: 'grundstueck',
    kaufpreis: 50000,
    wohnflaeche: null,
    nutzflaeche: null,
    zimmer: null,
    bundesland: 13,
    heizungstyp: null,
  }, // null
  {
    adresse: 'Am Markt 3, 99084 Erfurt',
    typ: 'buero',
    kaufpreis: null,
    wohnflaeche: 200,
    nutzflaeche: 50,
    zimmer: 8,
    bundesland: 16,
    heizungstyp: 1,
  }, // null
  {
    adresse: 'Uferpromenade 7, 04109 LEIPZIG',
    typ: 'wohnung',
    kaufpreis: 200000,
    wohnflaeche: 0,
    nutzflaeche: 10,
    zimmer: 1,
    bundesland: 13,
    heizungstyp: null,
  }, // null (÷0)
] as const;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(dialects)('%s: filters, pagination options and totals', (dialect) => {
  let server: Server;
  let url: string;
  let admin: Account;
  let moderator: Account;
  let owner: Account;
  let other: Account;
  let p: number[] = [];
  let foreign: number;

  const list = (query: string, key = owner.key, accept?: string) =>
    api(url, `/api/immobilies${query}`, { key, accept });
  const pick = (...n: number[]) => n.map((i) => p[i - 1] as number);
  const total = (res: { body: unknown }) => (res.body as Body)['hydra:totalItems'];

  beforeAll(async () => {
    server = await startPropertyServer({
      dialect,
      env: {
        PROPERTY_PAGINATION_CLIENT_ENABLED: 'true',
        PROPERTY_PAGINATION_CLIENT_PARTIAL: 'true',
        PROPERTY_PAGINATION_MAX_UNPAGINATED: '6',
        PROPERTY_COUNT_CAP: '3',
      },
    });
    url = server.url;
    admin = await server.createAccount('admin');
    moderator = await server.createAccount('moderator');
    owner = await server.createAccount('user');
    other = await server.createAccount('user');
    p = [];
    for (const row of ROWS) {
      const item = await createImmobilie(url, owner.key, {
        ...row,
        bundesland: `/api/bundeslands/${row.bundesland}`,
        heizungstyp: row.heizungstyp === null ? null : `/api/heizungstyps/${row.heizungstyp}`,
      });
      p.push(item.id);
    }
    foreign = (
      await createImmobilie(url, other.key, {
        adresse: 'Fremdweg 1, 04109 Leipzig',
        typ: 'haus',
        kaufpreis: 1,
        bundesland: '/api/bundeslands/13',
      })
    ).id;
  });
  afterAll(async () => {
    await server?.close();
  });

  describe('search, range and exists', () => {
    it('adresse is ipartial: case-insensitive containment', async () => {
      expect(ids(members(await list('?adresse=leipzig')))).toEqual(pick(1, 2, 6));
      expect(ids(members(await list('?adresse=STRASSE')))).toEqual([]);
      expect(ids(members(await list('?adresse=straße')))).toEqual(pick(2, 3));
    });

    it('range operators gt, gte, lt, lte and between (inclusive) on kaufpreis', async () => {
      expect(ids(members(await list('?kaufpreis[gte]=200000')))).toEqual(pick(1, 3, 6));
      expect(ids(members(await list('?kaufpreis[gt]=200000')))).toEqual(pick(1, 3));
      expect(ids(members(await list('?kaufpreis[lt]=150000')))).toEqual(pick(4));
      expect(ids(members(await list('?kaufpreis[lte]=150000')))).toEqual(pick(2, 4));
      expect(ids(members(await list('?kaufpreis[between]=150000..300000')))).toEqual(pick(1, 2, 6));
      expect(ids(members(await list('?kaufpreis[gte]=100000&kaufpreis[lt]=250000')))).toEqual(pick(2, 6));
    });

    it('ranges on wohnflaeche, nutzflaeche and zimmer; nulls never match a bound', async () => {
      expect(ids(members(await list('?wohnflaeche[gt]=0')))).toEqual(pick(1, 2, 3, 5));
      expect(ids(members(await list('?nutzflaeche[lte]=20')))).toEqual(pick(1, 6));
      expect(ids(members(await list('?zimmer[between]=2..4')))).toEqual(pick(1, 2));
      expect(ids(members(await list('?zimmer[gte]=1.5')))).toEqual(pick(1, 2, 3, 5));
      expect(ids(members(await list('?zimmer[lt]=1.5')))).toEqual(pick(6));
      expect(ids(members(await list('?zimmer[gt]=5.9&zimmer[lte]=6.1')))).toEqual(pick(3));
      // Bounds beyond the integer column's range hold for every stored value or for none.
      expect(ids(members(await list('?zimmer[gte]=1e20')))).toEqual([]);
      expect(ids(members(await list('?zimmer[lt]=1e20')))).toEqual(pick(1, 2, 3, 5, 6));
      expect(ids(members(await list('?zimmer[between]=-1e12..1e12')))).toEqual(pick(1, 2, 3, 5, 6));
      expect(ids(members(await list('?kaufpreis[lt]=1e300&kaufpreis[gt]=-1e300')))).toEqual(pick(1, 2, 3, 4, 6));
    });

    it('the price per m² (kaufpreis / wohnflaeche) filters; no area or an area of 0 gives no value', async () => {
      expect(ids(members(await list('?preisProQuadratmeter[gte]=2600')))).toEqual(pick(1, 3));
      expect(ids(members(await list('?preisProQuadratmeter[lt]=2600')))).toEqual(pick(2));
      expect(ids(members(await list('?preisProQuadratmeter[between]=2500..3000')))).toEqual(pick(1, 2));
    });

    it('a search and a range filter combine (AND), with the total', async () => {
      const res = await list('?adresse=leipzig&kaufpreis[gte]=200000');
      expect(ids(members(res))).toEqual(pick(1, 6));
      expect(total(res)).toBe(2);
    });

    it('an unknown range operator is ignored', async () => {
      expect(ids(members(await list('?kaufpreis[foo]=1')))).toEqual(p);
    });

    it('exists[] on references and numbers: true/1/empty present, false/0 absent', async () => {
      expect(ids(members(await list('?exists[heizungstyp]=true')))).toEqual(pick(1, 3, 5));
      expect(ids(members(await list('?exists[heizungstyp]=1')))).toEqual(pick(1, 3, 5));
      expect(ids(members(await list('?exists[heizungstyp]=')))).toEqual(pick(1, 3, 5));
      expect(ids(members(await list('?exists[heizungstyp]=false')))).toEqual(pick(2, 4, 6));
      expect(ids(members(await list('?exists[kaufpreis]=0')))).toEqual(pick(5));
      expect(ids(members(await list('?exists[nutzflaeche]=false&exists[zimmer]=true')))).toEqual(pick(2));
    });

    it('heizungstyp takes an IRI, an id or several; a missing one matches nothing', async () => {
      expect(ids(members(await list('?heizungstyp=/api/heizungstyps/2')))).toEqual(pick(1));
      expect(ids(members(await list('?heizungstyp=3')))).toEqual(pick(3));
      expect(ids(members(await list('?heizungstyp[]=1&heizungstyp[]=/api/heizungstyps/2')))).toEqual(pick(1, 5));
      expect(ids(members(await list('?heizungstyp=/api/heizungstyps/999')))).toEqual([]);
    });

    it('verwalter narrows inside the caller scope: an admin picks an account, a user cannot see others', async () => {
      expect(ids(members(await list(`?verwalter=${owner.iri}`, admin.key)))).toEqual(p);
      expect(ids(members(await list(`?verwalter=${other.id}`, admin.key)))).toEqual([foreign]);
      expect(ids(members(await list(`?verwalter=${other.iri}`)))).toEqual([]);
    });
  });

  describe('unusable values of declared filters answer 400 with one violation each', () => {
    it('numbers, between, booleans, dates, choices and IRIs', async () => {
      expectViolations(await list('?kaufpreis[gte]=abc'), [violation.type('kaufpreis[gte]', 'float')]);
      expectViolations(await list('?zimmer[between]=1..'), [
        typeViolation('zimmer[between]', 'This value should be two numbers separated by "..".'),
      ]);
      expectViolations(await list('?exists[heizungstyp]=maybe'), [violation.type('exists[heizungstyp]', 'bool')]);
      expectViolations(await list('?createdAt[after]=yesterday'), [dateViolation('createdAt[after]')]);
      expectViolations(await list('?updatedAt[before]=2026-02-30'), [dateViolation('updatedAt[before]')]);
      expectViolations(await list('?typ=castle'), [violation.choice('typ')]);
      expectViolations(await list('?heizungstyp=warm'), [violation.invalidIri('heizungstyp', 'warm')]);
      expectViolations(await list('?order[preisProQuadratmeter]=up'), [
        violation.choice('order[preisProQuadratmeter]'),
      ]);
    });

    it('every unusable value is reported at once; plain JSON clients get problem+json', async () => {
      expectViolations(await list('?typ=castle&kaufpreis[lt]=x&createdAt[before]=soon'), [
        violation.choice('typ'),
        violation.type('kaufpreis[lt]', 'float'),
        dateViolation('createdAt[before]'),
      ]);
      expectProblemViolations(await list('?typ=castle', owner.key, 'application/json'), [violation.choice('typ')]);
    });

    it('reference data and users reject unusable values too', async () => {
      expectViolations(await api(url, '/api/bundeslands?order[name]=sideways'), [violation.choice('order[name]')]);
      expectViolations(await api(url, '/api/users?role=king', { key: admin.key }), [violation.choice('role')]);
    });
  });

  describe('search on reference data and users', () => {
    it('bundeslands?name=Sachs (istart) finds Sachsen and Sachsen-Anhalt; code is iexact', async () => {
      const res = await api(url, '/api/bundeslands?name=sachs');
      expect(members(res).map((m) => m.name)).toEqual(['Sachsen', 'Sachsen-Anhalt']);
      expect(members(await api(url, '/api/bundeslands?code=by')).map((m) => m.name)).toEqual(['Bayern']);
      expect(members(await api(url, '/api/bundeslands?name=anhalt'))).toEqual([]);
    });

    it('heizungstyps?name= is ipartial; users?name= is iword_start and email ipartial', async () => {
      expect(members(await api(url, '/api/heizungstyps?name=WÄRME')).map((m) => m.name)).toEqual([
        'Wärmepumpe',
        'Fernwärme',
        'Blockheizkraftwerk (Kraft-Wärme-Kopplung)',
      ]);
      const named = await api(url, `/api/users?name=${encodeURIComponent('moderator')}`, { key: admin.key });
      expect(ids(members(named))).toEqual([moderator.id]);
      expect(
        ids(
          members(
            await api(url, `/api/users?email=${encodeURIComponent(other.email.toUpperCase())}`, { key: admin.key }),
          ),
        ),
      ).toEqual([other.id]);
    });

    it('order on reference data', async () => {
      const res = await api(url, '/api/bundeslands?order[code]=desc&itemsPerPage=2');
      expect(members(res).map((m) => m.code)).toEqual(['TH', 'ST']);
    });
  });

  describe('ordering', () => {
    it('nulls sort as the smallest values on both dialects (the price per m² too)', async () => {
      expect(ids(members(await list('?order[preisProQuadratmeter]=asc')))).toEqual(pick(4, 5, 6, 2, 1, 3));
      expect(ids(members(await list('?order[preisProQuadratmeter]=desc')))).toEqual(pick(3, 1, 2, 4, 5, 6));
      expect(ids(members(await list('?order[kaufpreis]=asc')))).toEqual(pick(5, 4, 2, 6, 1, 3));
      expect(ids(members(await list('?order[zimmer]=desc')))).toEqual(pick(5, 3, 1, 2, 6, 4));
    });

    it('adresse, typ and nutzflaeche order; ties fall back to the id', async () => {
      expect(ids(members(await list('?order[adresse]=asc')))).toEqual(pick(5, 4, 3, 2, 1, 6));
      expect(ids(members(await list('?order[typ]=desc')))).toEqual(pick(2, 6, 1, 3, 4, 5));
      expect(ids(members(await list('?order[nutzflaeche]=asc')))).toEqual(pick(2, 4, 6, 1, 3, 5));
    });
  });

  describe('timestamps and date filters', () => {
    it('createdAt and updatedAt are set by the server, read-only, and change with writes only', async () => {
      const created = await createImmobilie(url, other.key, {
        adresse: 'Zeitweg 1',
        createdAt: '2000-01-01T00:00:00+00:00',
      } as never);
      expect(created.createdAt).toMatch(TIMESTAMP);
      expect(created.createdAt).not.toBe('2000-01-01T00:00:00+00:00');
      expect(created.updatedAt).toBe(created.createdAt);
      await sleep(1100);
      const unchanged = await api(url, created['@id'], {
        method: 'PATCH',
        key: other.key,
        body: { adresse: 'Zeitweg 1' },
        contentType: 'application/merge-patch+json',
      });
      expect((unchanged.body as Item).updatedAt).toBe(created.updatedAt);
      const changed = await api(url, created['@id'], {
        method: 'PATCH',
        key: other.key,
        body: { adresse: 'Zeitweg 2', updatedAt: '2000-01-01' },
        contentType: 'application/merge-patch+json',
      });
      expect(changed.status).toBe(200);
      const after = changed.body as Item;
      expect(after.createdAt).toBe(created.createdAt);
      expect(after.updatedAt).toMatch(TIMESTAMP);
      expect(Date.parse(after.updatedAt as string)).toBeGreaterThan(Date.parse(created.updatedAt as string));

      const mine = (q: string) => api(url, `/api/immobilies${q}`, { key: other.key }).then((r) => ids(members(r)));
      const stamp = encodeURIComponent(after.updatedAt as string);
      expect(await mine(`?updatedAt[after]=${stamp}`)).toEqual([created.id]);
      expect(await mine(`?updatedAt[strictly_after]=${stamp}`)).toEqual([]);
      expect(await mine(`?updatedAt[strictly_before]=${stamp}`)).toEqual([foreign]);
      expect(await mine(`?updatedAt[before]=${stamp}`)).toEqual([foreign, created.id]);
      expect(await mine('?createdAt[after]=2000-01-01')).toEqual([foreign, created.id]);
      expect(await mine('?createdAt[before]=2000-01-01T23:59:59Z')).toEqual([]);
      expect(await mine(`?order[updatedAt]=desc`)).toEqual([created.id, foreign]);
      await api(url, created['@id'], { method: 'DELETE', key: other.key });
    });
  });

  describe('the property filter', () => {
    it('properties[] reduces collection members and items to the named fields', async () => {
      const res = await list('?properties[]=adresse&properties[]=kaufpreis&properties[]=nonsense&typ=haus');
      expect(members(res)).toEqual([
        { '@id': `/api/immobilies/${pick(1)[0]}`, '@type': 'Immobilie', adresse: ROWS[0].adresse, kaufpreis: 300000 },
        { '@id': `/api/immobilies/${pick(3)[0]}`, '@type': 'Immobilie', adresse: ROWS[2].adresse, kaufpreis: 900000 },
      ]);
      const item = await api(url, `/api/immobilies/${p[0]}?properties[]=typ&properties[]=bundesland`, {
        key: owner.key,
      });
      expect(item.body).toEqual({
        '@context': '/api/contexts/Immobilie',
        '@id': `/api/immobilies/${p[0]}`,
        '@type': 'Immobilie',
        typ: 'haus',
        bundesland: '/api/bundeslands/13',
      });
      const json = await list('?properties[]=zimmer&itemsPerPage=2', owner.key, 'application/json');
      expect(json.body).toEqual([{ zimmer: 4 }, { zimmer: 2 }]);
    });
  });

  describe('client-controlled pagination (enabled by configuration here)', () => {
    it('pagination=false returns every item with its total and no view', async () => {
      const res = await list('?pagination=false&itemsPerPage=2');
      expect(ids(members(res))).toEqual(p);
      expect(total(res)).toBe(6);
      const view = (res.body as Body)['hydra:view'] as Body;
      expect(view).toEqual({
        '@id': '/api/immobilies?pagination=false&itemsPerPage=2',
        '@type': 'hydra:PartialCollectionView',
      });
      expect((await list('?pagination=false')).body).not.toHaveProperty('hydra:view');
    });

    it('pagination=false beyond the hard cap answers 400', async () => {
      expectHydraError(
        await list('?pagination=false', admin.key),
        400,
        'Pagination cannot be disabled for more than 6 items; use pages or narrow the filters.',
      );
    });

    it('partial=true: no total; the view has no first or last, and next while pages come back full', async () => {
      const first = await list('?partial=true&itemsPerPage=4');
      expect(first.body).not.toHaveProperty('hydra:totalItems');
      expect(ids(members(first))).toEqual(pick(1, 2, 3, 4));
      expect((first.body as Body)['hydra:view']).toEqual({
        '@id': '/api/immobilies?partial=true&itemsPerPage=4&page=1',
        '@type': 'hydra:PartialCollectionView',
        'hydra:next': '/api/immobilies?partial=true&itemsPerPage=4&page=2',
      });
      const second = await list('?partial=true&itemsPerPage=4&page=2');
      expect(ids(members(second))).toEqual(pick(5, 6));
      expect((second.body as Body)['hydra:view']).toEqual({
        '@id': '/api/immobilies?partial=true&itemsPerPage=4&page=2',
        '@type': 'hydra:PartialCollectionView',
        'hydra:previous': '/api/immobilies?partial=true&itemsPerPage=4&page=1',
      });
    });

    it('a filtered count beyond PROPERTY_COUNT_CAP answers with partial pagination; within it, the exact total', async () => {
      const many = await list('?typ[]=haus&typ[]=wohnung&itemsPerPage=2');
      expect(ids(members(many))).toEqual(pick(1, 2));
      expect(many.body).not.toHaveProperty('hydra:totalItems');
      expect((many.body as Body)['hydra:view']).toMatchObject({
        'hydra:next': '/api/immobilies?typ%5B%5D=haus&typ%5B%5D=wohnung&itemsPerPage=2&page=2',
      });
      expect((many.body as Body)['hydra:view']).not.toHaveProperty('hydra:last');
      expect(total(await list('?typ=haus'))).toBe(2);
      expect(total(await list('?itemsPerPage=2'))).toBe(6);
    });
  });

  describe('the subresource /api/users/{id}/immobilies', () => {
    const sub = (userId: number, key: string | undefined, query = '') =>
      api(url, `/api/users/${userId}/immobilies${query}`, { key });

    it('lists an account’s properties like the collection, with its own @id and template', async () => {
      const res = await sub(owner.id, owner.key);
      expect(res.status).toBe(200);
      const body = res.body as Body;
      expect(body['@id']).toBe(`/api/users/${owner.id}/immobilies`);
      expect(body['hydra:totalItems']).toBe(6);
      expect(ids(members(res))).toEqual(p);
      expect((body['hydra:search'] as Body)['hydra:template']).toBe(
        `/api/users/${owner.id}/immobilies{?${IMMOBILIE_SEARCH_VARIABLES.map(([v]) => v).join(',')}}`,
      );
      const filtered = await sub(owner.id, owner.key, '?typ=haus&itemsPerPage=1');
      expect(ids(members(filtered))).toEqual(pick(1));
      expect((filtered.body as Body)['hydra:view']).toMatchObject({
        'hydra:next': `/api/users/${owner.id}/immobilies?typ=haus&itemsPerPage=1&page=2`,
      });
    });

    it('follows the access matrix: others get 404, anonymous 401, admin and moderator see any account', async () => {
      expectHydraError(await sub(owner.id, other.key), 404, 'Not Found');
      expectHydraError(await sub(owner.id, undefined), 401);
      expect(ids(members(await sub(owner.id, admin.key)))).toEqual(p);
      expect(ids(members(await sub(other.id, moderator.key)))).toEqual([foreign]);
      expectHydraError(await sub(999_999, admin.key), 404, 'Not Found');
      expectHydraError(await api(url, `/api/users/abc/immobilies`, { key: admin.key }), 404, 'Not Found');
      const post = await api(url, `/api/users/${owner.id}/immobilies`, { method: 'POST', key: owner.key, body: {} });
      expect(post.status).toBe(405);
    });
  });

  describe('totals the database maintains', () => {
    it('stay exact through create, move, delete and the deletion of an account', async () => {
      const all = async () => total(await list('', admin.key));
      const before = (await all()) as number;
      const leaving = await server.createAccount('user');
      const a = await createImmobilie(url, leaving.key, { adresse: 'Gehweg 1' });
      await createImmobilie(url, leaving.key, { adresse: 'Gehweg 2' });
      expect(await all()).toBe(before + 2);
      expect(total(await list('', leaving.key))).toBe(2);
      // An admin moves one to the owner: both owners' totals follow.
      const moved = await api(url, a['@id'], {
        method: 'PATCH',
        key: admin.key,
        body: { verwalter: owner.iri },
        contentType: 'application/merge-patch+json',
      });
      expect(moved.status).toBe(200);
      expect(total(await list('', leaving.key))).toBe(1);
      expect(total(await list(''))).toBe(7);
      expect(total(await sub(owner.id))).toBe(7);
      // Deleting the account takes its remaining property with it (a cascade, not the engine).
      expect((await api(url, `/api/users/${leaving.id}`, { method: 'DELETE', key: admin.key })).status).toBe(204);
      expect(await all()).toBe(before + 1);
      expect((await api(url, a['@id'], { method: 'DELETE', key: owner.key })).status).toBe(204);
      expect(await all()).toBe(before);
      expect(total(await list(''))).toBe(6);
      const admins = total(await list('?itemsPerPage=1', admin.key));
      expect(admins).toBe(before);
    });
    const sub = (userId: number) => api(url, `/api/users/${userId}/immobilies`, { key: admin.key });
  });

  describe('documented parameters', () => {
    it('OpenAPI lists the pagination switches and every filter parameter with its schema', async () => {
      const doc = (await api(url, '/api/docs.json', { accept: 'application/json' })).body as {
        paths: Record<string, Record<string, { parameters: Body[] }>>;
      };
      const parameters = doc.paths['/api/immobilies']?.get?.parameters ?? [];
      expect(parameters.map((x) => x.name)).toEqual([
        'page',
        'itemsPerPage',
        'pagination',
        'partial',
        ...IMMOBILIE_SEARCH_VARIABLES.map(([v]) => v),
      ]);
      const byName = new Map(parameters.map((x) => [x.name, x]));
      expect(byName.get('kaufpreis[between]')).toMatchObject({
        in: 'query',
        required: false,
        schema: { type: 'string' },
      });
      expect(byName.get('createdAt[after]')).toMatchObject({ schema: { type: 'string' } });
      expect(byName.get('exists[heizungstyp]')).toMatchObject({ schema: { type: 'boolean' } });
      expect(byName.get('order[preisProQuadratmeter]')).toMatchObject({
        schema: { type: 'string', enum: ['asc', 'desc'] },
      });
      expect(byName.get('typ[]')).toMatchObject({
        schema: {
          type: 'array',
          items: { type: 'string', enum: ['wohnung', 'haus', 'grundstueck', 'gewerbe', 'buero'] },
        },
        explode: true,
      });
      expect(byName.get('properties[]')).toMatchObject({
        schema: { type: 'array', items: { type: 'string' } },
        explode: true,
      });
      const subresource = doc.paths['/api/users/{id}/immobilies']?.get as unknown as {
        operationId: string;
        parameters: Body[];
      };
      expect(subresource.operationId).toBe('api_usersidimmobilies_get_collection');
      expect(subresource.parameters[0]).toMatchObject({ name: 'id', in: 'path', required: true });
    });
  });
});

describe.each(dialects)('%s: client pagination off (the default)', (dialect) => {
  let server: Server;
  let owner: Account;

  beforeAll(async () => {
    server = await startPropertyServer({ dialect });
    owner = await server.createAccount('user');
    for (const n of [1, 2, 3]) await createImmobilie(server.url, owner.key, { adresse: `Standardweg ${n}` });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('pagination=false and partial=true are ignored, and OpenAPI does not offer them', async () => {
    const res = await api(server.url, '/api/immobilies?pagination=false&partial=true&itemsPerPage=1', {
      key: owner.key,
    });
    expect(members(res)).toHaveLength(1);
    expect((res.body as Body)['hydra:totalItems']).toBe(3);
    expect((res.body as Body)['hydra:view']).toMatchObject({
      'hydra:last': '/api/immobilies?pagination=false&partial=true&itemsPerPage=1&page=3',
    });
    const doc = (await api(server.url, '/api/docs.json', { accept: 'application/json' })).body as {
      paths: Record<string, Record<string, { parameters: Body[] }>>;
    };
    const names = (doc.paths['/api/immobilies']?.get?.parameters ?? []).map((x) => x.name);
    expect(names).not.toContain('pagination');
    expect(names).not.toContain('partial');
  });
});
