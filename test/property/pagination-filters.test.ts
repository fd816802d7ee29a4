import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startPropertyServer } from '../support/property-server.js';
import { api } from '../support/http.js';
import {
  IMMOBILIE_SEARCH_VARIABLES,
  JSON_TYPE,
  JSONLD,
  TIMESTAMP,
  createImmobilie,
  createItem,
  expectHydraError,
  expectViolations,
  ids,
  members,
  violation,
  type Item,
} from './fixtures.js';

type Server = Awaited<ReturnType<typeof startPropertyServer>>;
type Account = Awaited<ReturnType<Server['createAccount']>>;

const FILTER_VARIABLES = IMMOBILIE_SEARCH_VARIABLES;
const TEMPLATE = `/api/immobilies{?${FILTER_VARIABLES.map(([v]) => v).join(',')}}`;

const SEARCH_3X = {
  '@type': 'hydra:IriTemplate',
  'hydra:template': TEMPLATE,
  'hydra:variableRepresentation': 'BasicRepresentation',
  'hydra:mapping': FILTER_VARIABLES.map(([variable, property]) => ({
    '@type': 'IriTemplateMapping',
    variable,
    property,
    required: false,
  })),
};
const SEARCH_4X = {
  '@type': 'IriTemplate',
  template: TEMPLATE,
  variableRepresentation: 'BasicRepresentation',
  mapping: FILTER_VARIABLES.map(([variable, property]) => ({
    '@type': 'IriTemplateMapping',
    variable,
    property,
    required: false,
  })),
};

/** The owner's properties; every sort key is distinct except zimmer of #1 and #4 (a tie for multi-key ordering). */
const FIXTURE = [
  { typ: 'haus', bundesland: 3, kaufpreis: 300000, wohnflaeche: 120, zimmer: 5 },
  { typ: 'wohnung', bundesland: 3, kaufpreis: 150000, wohnflaeche: 60, zimmer: 2 },
  { typ: 'haus', bundesland: 5, kaufpreis: 500000, wohnflaeche: 200, zimmer: 7 },
  { typ: 'buero', bundesland: 9, kaufpreis: 250000, wohnflaeche: 300, zimmer: 10 },
  { typ: 'wohnung', bundesland: 13, kaufpreis: 90000, wohnflaeche: 45, zimmer: 2 },
  { typ: 'grundstueck', bundesland: 13, kaufpreis: 50000, wohnflaeche: 0.5, zimmer: 0 },
  { typ: 'gewerbe', bundesland: 3, kaufpreis: 750000, wohnflaeche: 400, zimmer: 12 },
] as const;

const PAGE_ERROR = 'Page should not be less than 1';
const LIMIT_ERROR = 'Limit should not be less than 0';

describe.each(dialects)('%s: pagination and filters (3.x spelling)', (dialect) => {
  let server: Server;
  let url: string;
  let admin: Account;
  let owner: Account;
  let other: Account;
  /** Ids of the owner's properties, in FIXTURE order. */
  let p: number[] = [];
  let others: number[] = [];

  const list = (query: string, key = owner.key, accept?: string) =>
    api(url, `/api/immobilies${query}`, { key, accept });
  /** Ids of the FIXTURE rows selected by `pick`, in FIXTURE (= id) order. */
  const where = (pick: (row: (typeof FIXTURE)[number]) => boolean): number[] =>
    FIXTURE.flatMap((row, i) => (pick(row) ? [p[i] as number] : []));
  const sortedBy = (compare: (a: (typeof FIXTURE)[number], b: (typeof FIXTURE)[number]) => number): number[] =>
    FIXTURE.map((row, i) => ({ row, id: p[i] as number }))
      .sort((a, b) => compare(a.row, b.row))
      .map((x) => x.id);

  beforeAll(async () => {
    server = await startPropertyServer({ dialect });
    url = server.url;
    admin = await server.createAccount('admin');
    owner = await server.createAccount('user');
    other = await server.createAccount('user');
    p = [];
    for (const [i, row] of FIXTURE.entries()) {
      const item = await createImmobilie(url, owner.key, {
        ...row,
        adresse: `Fixturestraße ${i + 1}`,
        bundesland: `/api/bundeslands/${row.bundesland}`,
      });
      p.push(item.id);
    }
    others = [];
    for (const n of [1, 2])
      others.push(
        (
          await createImmobilie(url, other.key, {
            typ: 'haus',
            bundesland: '/api/bundeslands/3',
            adresse: `Fremdweg ${n}`,
          })
        ).id,
      );
  });
  afterAll(async () => {
    await server?.close();
  });

  describe('collection shape', () => {
    it('one page without parameters: totalItems, members in id order without @context, hydra:search, no hydra:view', async () => {
      const res = await list('');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(JSONLD);
      const body = res.body as Record<string, unknown>;
      expect(Object.keys(body)).toEqual([
        '@context',
        '@id',
        '@type',
        'hydra:totalItems',
        'hydra:member',
        'hydra:search',
      ]);
      expect(body['@context']).toBe('/api/contexts/Immobilie');
      expect(body['@id']).toBe('/api/immobilies');
      expect(body['@type']).toBe('hydra:Collection');
      expect(body['hydra:totalItems']).toBe(7);
      expect(ids(members(res))).toEqual(p);
      expect(body['hydra:search']).toEqual(SEARCH_3X);
      const first = members(res)[0];
      expect(first).toEqual({
        '@id': `/api/immobilies/${p[0]}`,
        '@type': 'Immobilie',
        id: p[0],
        verwalter: owner.iri,
        adresse: 'Fixturestraße 1',
        wohnflaeche: 120,
        nutzflaeche: 15,
        zimmer: 5,
        typ: 'haus',
        kaufpreis: 300000,
        bundesland: '/api/bundeslands/3',
        heizungstyp: '/api/heizungstyps/2',
        createdAt: expect.stringMatching(TIMESTAMP),
        updatedAt: expect.stringMatching(TIMESTAMP),
        // Berlin, 6.0 %: the computed costs are part of every member.
        preisProQuadratmeter: 2500,
        grunderwerbsteuer: 18000,
        kaufnebenkosten: { grunderwerbsteuer: 18000, notar: 4500, grundbuch: 1500, makler: 10710, summe: 34710 },
        gesamtkosten: 334710,
      });
    });

    it('?page=1 alone on a single page still has no hydra:view', async () => {
      const res = await list('?page=1');
      expect(res.status).toBe(200);
      expect(res.body).not.toHaveProperty('hydra:view');
      expect(ids(members(res))).toEqual(p);
    });

    it('one page but query parameters: hydra:view has only @id (without page) and @type', async () => {
      const res = await list('?typ=haus');
      expect(res.status).toBe(200);
      const body = res.body as Record<string, unknown>;
      expect(body['hydra:totalItems']).toBe(2);
      expect(body['hydra:view']).toEqual({ '@id': '/api/immobilies?typ=haus', '@type': 'hydra:PartialCollectionView' });
      expect(body['hydra:search']).toEqual(SEARCH_3X);
    });

    it('an unknown parameter is ignored but kept in the view @id', async () => {
      const res = await list('?foo=bar');
      expect(res.status).toBe(200);
      expect(ids(members(res))).toEqual(p);
      expect((res.body as Record<string, unknown>)['hydra:view']).toEqual({
        '@id': '/api/immobilies?foo=bar',
        '@type': 'hydra:PartialCollectionView',
      });
    });

    it('reference data and users list their own filters in hydra:search', async () => {
      const res = await api(url, '/api/bundeslands');
      expect((res.body as Record<string, Record<string, unknown>>)['hydra:search']?.['hydra:template']).toBe(
        '/api/bundeslands{?name,code,order[id],order[name],order[code],properties[]}',
      );
      const users = await api(url, '/api/users', { key: admin.key });
      expect((users.body as Record<string, Record<string, unknown>>)['hydra:search']?.['hydra:template']).toBe(
        '/api/users{?name,email,role,role[],order[id],order[name],order[email],properties[]}',
      );
    });
  });

  describe('pagination', () => {
    it('page 1 of 4: first, last, next, no previous', async () => {
      const res = await list('?itemsPerPage=2');
      expect(res.status).toBe(200);
      const body = res.body as Record<string, unknown>;
      expect(body['hydra:totalItems']).toBe(7);
      expect(ids(members(res))).toEqual(p.slice(0, 2));
      expect(body['hydra:view']).toEqual({
        '@id': '/api/immobilies?itemsPerPage=2&page=1',
        '@type': 'hydra:PartialCollectionView',
        'hydra:first': '/api/immobilies?itemsPerPage=2&page=1',
        'hydra:last': '/api/immobilies?itemsPerPage=2&page=4',
        'hydra:next': '/api/immobilies?itemsPerPage=2&page=2',
      });
      expect(Object.keys(body)).toEqual([
        '@context',
        '@id',
        '@type',
        'hydra:totalItems',
        'hydra:member',
        'hydra:view',
        'hydra:search',
      ]);
    });

    it('a middle page has previous and next', async () => {
      const res = await list('?itemsPerPage=2&page=2');
      expect(ids(members(res))).toEqual(p.slice(2, 4));
      expect((res.body as Record<string, unknown>)['hydra:view']).toEqual({
        '@id': '/api/immobilies?itemsPerPage=2&page=2',
        '@type': 'hydra:PartialCollectionView',
        'hydra:first': '/api/immobilies?itemsPerPage=2&page=1',
        'hydra:last': '/api/immobilies?itemsPerPage=2&page=4',
        'hydra:previous': '/api/immobilies?itemsPerPage=2&page=1',
        'hydra:next': '/api/immobilies?itemsPerPage=2&page=3',
      });
    });

    it('the last page has no next', async () => {
      const res = await list('?itemsPerPage=2&page=4');
      expect(ids(members(res))).toEqual(p.slice(6));
      expect((res.body as Record<string, unknown>)['hydra:view']).toEqual({
        '@id': '/api/immobilies?itemsPerPage=2&page=4',
        '@type': 'hydra:PartialCollectionView',
        'hydra:first': '/api/immobilies?itemsPerPage=2&page=1',
        'hydra:last': '/api/immobilies?itemsPerPage=2&page=4',
        'hydra:previous': '/api/immobilies?itemsPerPage=2&page=3',
      });
    });

    it('page is taken out of its place and appended last', async () => {
      const res = await list('?page=3&itemsPerPage=2');
      expect(ids(members(res))).toEqual(p.slice(4, 6));
      expect((res.body as Record<string, unknown>)['hydra:view']).toEqual({
        '@id': '/api/immobilies?itemsPerPage=2&page=3',
        '@type': 'hydra:PartialCollectionView',
        'hydra:first': '/api/immobilies?itemsPerPage=2&page=1',
        'hydra:last': '/api/immobilies?itemsPerPage=2&page=4',
        'hydra:previous': '/api/immobilies?itemsPerPage=2&page=2',
        'hydra:next': '/api/immobilies?itemsPerPage=2&page=4',
      });
    });

    it('a page past the end answers 200 with no members; last is the real last page', async () => {
      const res = await list('?itemsPerPage=2&page=10');
      expect(res.status).toBe(200);
      const body = res.body as Record<string, unknown>;
      expect(body['hydra:totalItems']).toBe(7);
      expect(body['hydra:member']).toEqual([]);
      expect(body['hydra:view']).toEqual({
        '@id': '/api/immobilies?itemsPerPage=2&page=10',
        '@type': 'hydra:PartialCollectionView',
        'hydra:first': '/api/immobilies?itemsPerPage=2&page=1',
        'hydra:last': '/api/immobilies?itemsPerPage=2&page=4',
        'hydra:previous': '/api/immobilies?itemsPerPage=2&page=9',
      });
    });

    it('view links keep filters and orderings in request order, RFC 3986-encoded', async () => {
      const res = await list('?order[kaufpreis]=desc&itemsPerPage=3');
      const expected = sortedBy((a, b) => b.kaufpreis - a.kaufpreis);
      expect(ids(members(res))).toEqual(expected.slice(0, 3));
      expect((res.body as Record<string, unknown>)['hydra:view']).toEqual({
        '@id': '/api/immobilies?order%5Bkaufpreis%5D=desc&itemsPerPage=3&page=1',
        '@type': 'hydra:PartialCollectionView',
        'hydra:first': '/api/immobilies?order%5Bkaufpreis%5D=desc&itemsPerPage=3&page=1',
        'hydra:last': '/api/immobilies?order%5Bkaufpreis%5D=desc&itemsPerPage=3&page=3',
        'hydra:next': '/api/immobilies?order%5Bkaufpreis%5D=desc&itemsPerPage=3&page=2',
      });
    });

    it('an IRI filter value is percent-encoded in the view links', async () => {
      const res = await list('?bundesland=/api/bundeslands/3&itemsPerPage=1&page=2');
      expect(ids(members(res))).toEqual(where((r) => r.bundesland === 3).slice(1, 2));
      expect((res.body as Record<string, unknown>)['hydra:totalItems']).toBe(3);
      expect((res.body as Record<string, unknown>)['hydra:view']).toEqual({
        '@id': '/api/immobilies?bundesland=%2Fapi%2Fbundeslands%2F3&itemsPerPage=1&page=2',
        '@type': 'hydra:PartialCollectionView',
        'hydra:first': '/api/immobilies?bundesland=%2Fapi%2Fbundeslands%2F3&itemsPerPage=1&page=1',
        'hydra:last': '/api/immobilies?bundesland=%2Fapi%2Fbundeslands%2F3&itemsPerPage=1&page=3',
        'hydra:previous': '/api/immobilies?bundesland=%2Fapi%2Fbundeslands%2F3&itemsPerPage=1&page=1',
        'hydra:next': '/api/immobilies?bundesland=%2Fapi%2Fbundeslands%2F3&itemsPerPage=1&page=3',
      });
    });

    it('array parameters keep their [] (and indexed keys lose the index) in view links', async () => {
      const plain = await list('?typ[]=haus&typ[]=wohnung&itemsPerPage=3');
      expect((plain.body as Record<string, unknown>)['hydra:totalItems']).toBe(4);
      expect(ids(members(plain))).toEqual(where((r) => r.typ === 'haus' || r.typ === 'wohnung').slice(0, 3));
      expect((plain.body as Record<string, unknown>)['hydra:view']).toEqual({
        '@id': '/api/immobilies?typ%5B%5D=haus&typ%5B%5D=wohnung&itemsPerPage=3&page=1',
        '@type': 'hydra:PartialCollectionView',
        'hydra:first': '/api/immobilies?typ%5B%5D=haus&typ%5B%5D=wohnung&itemsPerPage=3&page=1',
        'hydra:last': '/api/immobilies?typ%5B%5D=haus&typ%5B%5D=wohnung&itemsPerPage=3&page=2',
        'hydra:next': '/api/immobilies?typ%5B%5D=haus&typ%5B%5D=wohnung&itemsPerPage=3&page=2',
      });
      const indexed = await list('?typ[0]=haus&typ[1]=wohnung&itemsPerPage=3');
      expect(ids(members(indexed))).toEqual(ids(members(plain)));
      expect((indexed.body as Record<string, unknown>)['hydra:view']).toEqual(
        (plain.body as Record<string, unknown>)['hydra:view'],
      );
    });

    it('a space in a kept parameter is encoded as %20', async () => {
      const res = await list('?x=a%20b&itemsPerPage=5');
      expect((res.body as Record<string, unknown>)['hydra:view']).toMatchObject({
        '@id': '/api/immobilies?x=a%20b&itemsPerPage=5&page=1',
        'hydra:next': '/api/immobilies?x=a%20b&itemsPerPage=5&page=2',
      });
    });

    it('itemsPerPage=0 answers an empty page with the total still counted', async () => {
      const res = await list('?itemsPerPage=0');
      expect(res.status).toBe(200);
      expect((res.body as Record<string, unknown>)['hydra:member']).toEqual([]);
      expect((res.body as Record<string, unknown>)['hydra:totalItems']).toBe(7);
    });

    it('page < 1 or not a number answers 400', async () => {
      for (const query of ['?page=0', '?page=-1', '?page=abc', '?page=']) {
        expectHydraError(await list(query), 400, PAGE_ERROR);
      }
      expectHydraError(await api(url, '/api/bundeslands?page=0'), 400, PAGE_ERROR);
    });

    it('itemsPerPage < 0 answers 400', async () => {
      expectHydraError(await list('?itemsPerPage=-1'), 400, LIMIT_ERROR);
      expectHydraError(await api(url, '/api/heizungstyps?itemsPerPage=-5'), 400, LIMIT_ERROR);
    });

    it('itemsPerPage=0 with page > 1 answers 400', async () => {
      expectHydraError(await list('?itemsPerPage=0&page=2'), 400);
    });

    it('plain JSON collections are paginated the same way', async () => {
      const res = await list('?itemsPerPage=2&page=2', owner.key, 'application/json');
      expect(res.headers.get('content-type')).toBe(JSON_TYPE);
      expect(ids(res.body as Item[])).toEqual(p.slice(2, 4));
    });
  });

  describe('page size limits', () => {
    const EXTRA = 100;
    beforeAll(async () => {
      for (let i = 1; i <= EXTRA; i++)
        await createItem(url, '/api/heizungstyps', admin.key, { name: `Heizung ${String(i).padStart(3, '0')}` });
    });

    it('the default page size is 30', async () => {
      const res = await api(url, '/api/heizungstyps');
      const body = res.body as Record<string, unknown>;
      expect(body['hydra:totalItems']).toBe(8 + EXTRA);
      expect(ids(members(res))).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
      expect(body['hydra:view']).toEqual({
        '@id': '/api/heizungstyps?page=1',
        '@type': 'hydra:PartialCollectionView',
        'hydra:first': '/api/heizungstyps?page=1',
        'hydra:last': '/api/heizungstyps?page=4',
        'hydra:next': '/api/heizungstyps?page=2',
      });
      const last = await api(url, '/api/heizungstyps?page=4');
      expect(ids(members(last))).toEqual(Array.from({ length: 18 }, (_, i) => i + 91));
    });

    it('itemsPerPage above 100 is clamped to 100', async () => {
      const res = await api(url, '/api/heizungstyps?itemsPerPage=1000');
      expect(res.status).toBe(200);
      const body = res.body as Record<string, unknown>;
      expect(members(res)).toHaveLength(100);
      expect(body['hydra:view']).toMatchObject({
        '@id': '/api/heizungstyps?itemsPerPage=1000&page=1',
        'hydra:last': '/api/heizungstyps?itemsPerPage=1000&page=2',
        'hydra:next': '/api/heizungstyps?itemsPerPage=1000&page=2',
      });
      expect(members(await api(url, '/api/heizungstyps?itemsPerPage=101'))).toHaveLength(100);
      expect(ids(members(await api(url, '/api/heizungstyps?itemsPerPage=1000&page=2')))).toEqual(
        Array.from({ length: 8 }, (_, i) => i + 101),
      );
    });

    it('itemsPerPage=100 is honoured exactly, also in plain JSON', async () => {
      expect(members(await api(url, '/api/heizungstyps?itemsPerPage=100'))).toHaveLength(100);
      const plain = await api(url, '/api/heizungstyps?itemsPerPage=500', { accept: 'application/json' });
      expect(plain.body).toHaveLength(100);
      expect(
        await api(url, '/api/heizungstyps', { accept: 'application/json' }).then((r) => (r.body as unknown[]).length),
      ).toBe(30);
    });
  });

  describe('filters', () => {
    it('typ=haus selects by exact value', async () => {
      const res = await list('?typ=haus');
      expect(ids(members(res))).toEqual(where((r) => r.typ === 'haus'));
    });

    it('typ with a value that is no ImmobilienTyp answers 400 with a violation', async () => {
      expectViolations(await list('?typ=villa'), [violation.choice('typ')]);
      expectViolations(await list('?typ[]=haus&typ[]=castle'), [violation.choice('typ')]);
    });

    it('typ[] selects any of several values', async () => {
      expect(ids(members(await list('?typ[]=haus&typ[]=buero')))).toEqual(
        where((r) => r.typ === 'haus' || r.typ === 'buero'),
      );
      expect(ids(members(await list('?typ%5B%5D=grundstueck')))).toEqual(where((r) => r.typ === 'grundstueck'));
      expect(ids(members(await list('?typ[0]=gewerbe')))).toEqual(where((r) => r.typ === 'gewerbe'));
    });

    it('bundesland takes an IRI or a bare id', async () => {
      const expected = where((r) => r.bundesland === 3);
      expect(ids(members(await list('?bundesland=/api/bundeslands/3')))).toEqual(expected);
      expect(ids(members(await list('?bundesland=%2Fapi%2Fbundeslands%2F3')))).toEqual(expected);
      expect(ids(members(await list('?bundesland=3')))).toEqual(expected);
    });

    it('bundesland[] takes several IRIs or ids', async () => {
      const expected = where((r) => r.bundesland === 3 || r.bundesland === 13);
      expect(ids(members(await list('?bundesland[]=/api/bundeslands/3&bundesland[]=/api/bundeslands/13')))).toEqual(
        expected,
      );
      expect(ids(members(await list('?bundesland[]=3&bundesland[]=13')))).toEqual(expected);
      expect(ids(members(await list('?bundesland[]=/api/bundeslands/3&bundesland[]=13')))).toEqual(expected);
    });

    it('a well-formed IRI of a missing Bundesland matches nothing', async () => {
      const res = await list('?bundesland=/api/bundeslands/999');
      expect(res.status).toBe(200);
      expect((res.body as Record<string, unknown>)['hydra:totalItems']).toBe(0);
    });

    it('a bundesland value that is no IRI of a Bundesland answers 400', async () => {
      expectViolations(await list('?bundesland=foo'), [violation.invalidIri('bundesland', 'foo')]);
      expectViolations(await list('?bundesland=/api/heizungstyps/1'), [
        violation.invalidIri('bundesland', '/api/heizungstyps/1'),
      ]);
    });

    it('filters AND together', async () => {
      expect(ids(members(await list('?typ=haus&bundesland=/api/bundeslands/5')))).toEqual(
        where((r) => r.typ === 'haus' && r.bundesland === 5),
      );
      expect(ids(members(await list('?typ=wohnung&bundesland[]=3&bundesland[]=13')))).toEqual(
        where((r) => r.typ === 'wohnung'),
      );
      expect(ids(members(await list('?typ=buero&bundesland=3')))).toEqual([]);
    });

    it('filters apply inside the caller scope: a user sees only its own matches, an admin all', async () => {
      expect(ids(members(await list('?typ=haus&bundesland=3', other.key)))).toEqual(others);
      const all = await list('?typ=haus&bundesland=3', admin.key);
      expect(ids(members(all))).toEqual([...where((r) => r.typ === 'haus' && r.bundesland === 3), ...others]);
      expect((all.body as Record<string, unknown>)['hydra:totalItems']).toBe(3);
    });

    it('filters work with plain JSON output', async () => {
      const res = await list('?typ=haus', owner.key, 'application/json');
      expect(res.headers.get('content-type')).toBe(JSON_TYPE);
      expect(ids(res.body as Item[])).toEqual(where((r) => r.typ === 'haus'));
    });
  });

  describe('ordering', () => {
    it('order[kaufpreis]=desc and =asc', async () => {
      expect(ids(members(await list('?order[kaufpreis]=desc')))).toEqual(sortedBy((a, b) => b.kaufpreis - a.kaufpreis));
      expect(ids(members(await list('?order[kaufpreis]=asc')))).toEqual(sortedBy((a, b) => a.kaufpreis - b.kaufpreis));
    });

    it('directions are case-insensitive', async () => {
      expect(ids(members(await list('?order[kaufpreis]=DESC')))).toEqual(sortedBy((a, b) => b.kaufpreis - a.kaufpreis));
      expect(ids(members(await list('?order[wohnflaeche]=Asc')))).toEqual(
        sortedBy((a, b) => a.wohnflaeche - b.wohnflaeche),
      );
    });

    it('order[wohnflaeche], order[zimmer] and order[id]', async () => {
      expect(ids(members(await list('?order[wohnflaeche]=desc')))).toEqual(
        sortedBy((a, b) => b.wohnflaeche - a.wohnflaeche),
      );
      const byZimmer = members(await list('?order[zimmer]=desc')).map((m) => m.zimmer as number);
      expect(byZimmer).toEqual([...FIXTURE.map((r) => r.zimmer)].sort((a, b) => b - a));
      expect(ids(members(await list('?order[id]=desc')))).toEqual([...p].reverse());
    });

    it('several order keys apply in the given order', async () => {
      const zimmerAscPreisDesc = sortedBy((a, b) => a.zimmer - b.zimmer || b.kaufpreis - a.kaufpreis);
      expect(ids(members(await list('?order[zimmer]=asc&order[kaufpreis]=desc')))).toEqual(zimmerAscPreisDesc);
      const zimmerAscPreisAsc = sortedBy((a, b) => a.zimmer - b.zimmer || a.kaufpreis - b.kaufpreis);
      expect(ids(members(await list('?order[zimmer]=asc&order[kaufpreis]=asc')))).toEqual(zimmerAscPreisAsc);
      expect(zimmerAscPreisAsc).not.toEqual(zimmerAscPreisDesc);
    });

    it('an invalid direction answers 400; an undeclared field is ignored (default id order)', async () => {
      expectViolations(await list('?order[kaufpreis]=sideways'), [violation.choice('order[kaufpreis]')]);
      expect(ids(members(await list('?order[verwalter]=desc')))).toEqual(p);
      expect(ids(members(await list('?order[bundesland]=desc')))).toEqual(p);
    });

    it('ordering combines with filters and pagination', async () => {
      const expected = sortedBy((a, b) => b.kaufpreis - a.kaufpreis);
      expect(ids(members(await list('?order[kaufpreis]=desc&itemsPerPage=3&page=2')))).toEqual(expected.slice(3, 6));
      const haus = sortedBy((a, b) => a.kaufpreis - b.kaufpreis).filter((id) =>
        where((r) => r.typ === 'haus').includes(id),
      );
      expect(ids(members(await list('?typ=haus&order[kaufpreis]=asc')))).toEqual(haus);
    });
  });
});

describe.each(dialects)('%s: collections in the 4.x spelling (PROPERTY_HYDRA_PREFIX=false)', (dialect) => {
  let server: Server;
  let url: string;
  let owner: Account;
  let p: number[] = [];

  beforeAll(async () => {
    server = await startPropertyServer({ dialect, env: { PROPERTY_HYDRA_PREFIX: 'false' } });
    url = server.url;
    owner = await server.createAccount('user');
    p = [];
    for (const n of [1, 2, 3]) p.push((await createImmobilie(url, owner.key, { adresse: `Vierweg ${n}` })).id);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('uses member, totalItems, view, search and @type Collection', async () => {
    const res = await api(url, '/api/immobilies?itemsPerPage=1&page=2', { key: owner.key });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(JSONLD);
    expect(res.text).not.toContain('hydra:');
    const body = res.body as Record<string, unknown>;
    expect(body).toEqual({
      '@context': '/api/contexts/Immobilie',
      '@id': '/api/immobilies',
      '@type': 'Collection',
      totalItems: 3,
      member: [
        expect.objectContaining({
          '@id': `/api/immobilies/${p[1]}`,
          '@type': 'Immobilie',
          id: p[1],
          adresse: 'Vierweg 2',
        }),
      ],
      view: {
        '@id': '/api/immobilies?itemsPerPage=1&page=2',
        '@type': 'PartialCollectionView',
        first: '/api/immobilies?itemsPerPage=1&page=1',
        last: '/api/immobilies?itemsPerPage=1&page=3',
        previous: '/api/immobilies?itemsPerPage=1&page=1',
        next: '/api/immobilies?itemsPerPage=1&page=3',
      },
      search: SEARCH_4X,
    });
    expect((body.member as Record<string, unknown>[])[0]).not.toHaveProperty('@context');
  });

  it('one page without parameters has no view; reference data lists members the same way', async () => {
    const res = await api(url, '/api/bundeslands');
    const body = res.body as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(['@context', '@id', '@type', 'totalItems', 'member', 'search']);
    expect(body['@type']).toBe('Collection');
    expect(body.totalItems).toBe(16);
    expect((body.member as unknown[])[0]).toEqual({
      '@id': '/api/bundeslands/1',
      '@type': 'Bundesland',
      id: 1,
      name: 'Baden-Württemberg',
      code: 'BW',
      grunderwerbsteuerSatz: 5,
    });
  });

  it('a filtered single page has a view with only @id and @type', async () => {
    const res = await api(url, '/api/immobilies?typ=haus', { key: owner.key });
    expect((res.body as Record<string, unknown>).view).toEqual({
      '@id': '/api/immobilies?typ=haus',
      '@type': 'PartialCollectionView',
    });
    expect((res.body as Record<string, unknown>).totalItems).toBe(3);
  });

  it('items are unchanged', async () => {
    const res = await api(url, `/api/immobilies/${p[0]}`, { key: owner.key });
    expect(res.body).toMatchObject({
      '@context': '/api/contexts/Immobilie',
      '@id': `/api/immobilies/${p[0]}`,
      '@type': 'Immobilie',
    });
  });
});
