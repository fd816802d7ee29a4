import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startPropertyServer } from '../support/property-server.js';
import { api } from '../support/http.js';
import {
  JSONLD,
  NOT_FOUND,
  createImmobilie,
  createItem,
  docsLink,
  docsUrl,
  expectHydraError,
  immobilieBody,
  members,
  uniqueEmail,
  type Item,
  TIMESTAMP,
} from './fixtures.js';

type Server = Awaited<ReturnType<typeof startPropertyServer>>;
type Account = Awaited<ReturnType<Server['createAccount']>>;

/** Name, code and the transfer tax rate in force since 1 July 2025 (percent). */
const BUNDESLAENDER = [
  ['Baden-Württemberg', 'BW', 5],
  ['Bayern', 'BY', 3.5],
  ['Berlin', 'BE', 6],
  ['Brandenburg', 'BB', 6.5],
  ['Bremen', 'HB', 5.5],
  ['Hamburg', 'HH', 5.5],
  ['Hessen', 'HE', 6],
  ['Mecklenburg-Vorpommern', 'MV', 6],
  ['Niedersachsen', 'NI', 5],
  ['Nordrhein-Westfalen', 'NW', 6.5],
  ['Rheinland-Pfalz', 'RP', 5],
  ['Saarland', 'SL', 6.5],
  ['Sachsen', 'SN', 5.5],
  ['Sachsen-Anhalt', 'ST', 5],
  ['Schleswig-Holstein', 'SH', 6.5],
  ['Thüringen', 'TH', 5],
] as const;

const IMMOBILIE_KEYS = [
  '@context',
  '@id',
  '@type',
  'id',
  'verwalter',
  'adresse',
  'wohnflaeche',
  'nutzflaeche',
  'zimmer',
  'typ',
  'kaufpreis',
  'bundesland',
  'heizungstyp',
  'createdAt',
  'updatedAt',
  'preisProQuadratmeter',
  'grunderwerbsteuer',
  'kaufnebenkosten',
  'gesamtkosten',
];

/** The computed costs of immobilieBody() (420,000 EUR, 92.5 m², Sachsen at 5.5 %), worked out by hand. */
const COSTS_SACHSEN = {
  preisProQuadratmeter: 4540.54, // 4540.5405…
  grunderwerbsteuer: 23100,
  kaufnebenkosten: { grunderwerbsteuer: 23100, notar: 6300, grundbuch: 2100, makler: 14994, summe: 46494 },
  gesamtkosten: 466494,
};

describe.each(dialects)('%s: property CRUD', (dialect) => {
  let server: Server;
  let url: string;
  let admin: Account;
  let user: Account;
  let technical: Account;

  beforeAll(async () => {
    server = await startPropertyServer({ dialect });
    url = server.url;
    admin = await server.createAccount('admin');
    user = await server.createAccount('user');
    technical = await server.createAccount('technical');
  });
  afterAll(async () => {
    await server?.close();
  });

  describe('entrypoint and contexts', () => {
    it('GET /api lists every resource collection under its lcfirst short name', async () => {
      const res = await api(url, '/api');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(JSONLD);
      expect(res.headers.get('link')).toBe(docsLink(url));
      expect(res.body).toEqual({
        '@context': '/api/contexts/Entrypoint',
        '@id': '/api',
        '@type': 'Entrypoint',
        bundesland: '/api/bundeslands',
        // Listed although it has no GET collection: its URL is where the calculation is POSTed.
        finanzierungsrechner: '/api/finanzierungsrechners',
        heizungstyp: '/api/heizungstyps',
        immobilie: '/api/immobilies',
        user: '/api/users',
      });
    });

    it('GET /api/contexts/Entrypoint maps each key to a vocab-relative IRI typed @id', async () => {
      const res = await api(url, '/api/contexts/Entrypoint');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(JSONLD);
      expect(res.body).toEqual({
        '@context': {
          '@vocab': `${docsUrl(url)}#`,
          hydra: 'http://www.w3.org/ns/hydra/core#',
          immobilie: { '@id': 'Entrypoint/immobilie', '@type': '@id' },
          bundesland: { '@id': 'Entrypoint/bundesland', '@type': '@id' },
          heizungstyp: { '@id': 'Entrypoint/heizungstyp', '@type': '@id' },
          user: { '@id': 'Entrypoint/user', '@type': '@id' },
          finanzierungsrechner: { '@id': 'Entrypoint/finanzierungsrechner', '@type': '@id' },
        },
      });
    });

    it('GET /api/contexts/Immobilie maps scalars to strings and relations to @id-typed objects', async () => {
      const res = await api(url, '/api/contexts/Immobilie');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(JSONLD);
      expect(res.headers.get('link')).toBe(docsLink(url));
      expect(res.body).toEqual({
        '@context': {
          '@vocab': `${docsUrl(url)}#`,
          hydra: 'http://www.w3.org/ns/hydra/core#',
          verwalter: { '@id': 'Immobilie/verwalter', '@type': '@id' },
          adresse: 'https://schema.org/name',
          wohnflaeche: 'Immobilie/wohnflaeche',
          nutzflaeche: 'Immobilie/nutzflaeche',
          zimmer: 'Immobilie/zimmer',
          typ: 'Immobilie/typ',
          kaufpreis: 'Immobilie/kaufpreis',
          kaltmiete: 'Immobilie/kaltmiete',
          bundesland: { '@id': 'Immobilie/bundesland', '@type': '@id' },
          heizungstyp: { '@id': 'Immobilie/heizungstyp', '@type': '@id' },
          createdAt: 'Immobilie/createdAt',
          updatedAt: 'Immobilie/updatedAt',
          preisProQuadratmeter: 'Immobilie/preisProQuadratmeter',
          grunderwerbsteuer: 'Immobilie/grunderwerbsteuer',
          kaufnebenkosten: 'Immobilie/kaufnebenkosten',
          gesamtkosten: 'Immobilie/gesamtkosten',
          bruttomietrendite: 'Immobilie/bruttomietrendite',
          kaufpreisfaktor: 'Immobilie/kaufpreisfaktor',
        },
      });
    });

    it('GET /api/contexts/Bundesland and /api/contexts/Heizungstyp list their fields', async () => {
      const bundesland = await api(url, '/api/contexts/Bundesland');
      expect(bundesland.status).toBe(200);
      expect(bundesland.body).toEqual({
        '@context': {
          '@vocab': `${docsUrl(url)}#`,
          hydra: 'http://www.w3.org/ns/hydra/core#',
          name: 'https://schema.org/name',
          code: 'Bundesland/code',
          grunderwerbsteuerSatz: 'Bundesland/grunderwerbsteuerSatz',
        },
      });
      const heizungstyp = await api(url, '/api/contexts/Heizungstyp');
      expect(heizungstyp.status).toBe(200);
      expect(heizungstyp.body).toEqual({
        '@context': {
          '@vocab': `${docsUrl(url)}#`,
          hydra: 'http://www.w3.org/ns/hydra/core#',
          name: 'https://schema.org/name',
        },
      });
    });

    it('every context document has @vocab = the absolute docs URL + #', async () => {
      for (const shortName of [
        'Entrypoint',
        'Immobilie',
        'Bundesland',
        'Heizungstyp',
        'User',
        'Error',
        'ConstraintViolationList',
      ]) {
        const res = await api(url, `/api/contexts/${shortName}`);
        expect(res.status, shortName).toBe(200);
        expect(res.headers.get('content-type'), shortName).toBe(JSONLD);
        const context = (res.body as { '@context': Record<string, unknown> })['@context'];
        expect(context['@vocab'], shortName).toBe(`${docsUrl(url)}#`);
        expect(context.hydra, shortName).toBe('http://www.w3.org/ns/hydra/core#');
      }
    });

    it('the Error and ConstraintViolationList contexts hold only @vocab and hydra', async () => {
      for (const shortName of ['Error', 'ConstraintViolationList']) {
        const res = await api(url, `/api/contexts/${shortName}`);
        expect(res.body, shortName).toEqual({
          '@context': { '@vocab': `${docsUrl(url)}#`, hydra: 'http://www.w3.org/ns/hydra/core#' },
        });
      }
    });

    it('GET /api/contexts/Immobilie.jsonld answers like /api/contexts/Immobilie', async () => {
      const plain = await api(url, '/api/contexts/Immobilie');
      const suffixed = await api(url, '/api/contexts/Immobilie.jsonld');
      expect(suffixed.status).toBe(200);
      expect(suffixed.body).toEqual(plain.body);
    });

    it('an unknown context answers 404', async () => {
      expectHydraError(await api(url, '/api/contexts/Nope'), 404, NOT_FOUND);
    });
  });

  describe('reference data present on first start', () => {
    it('lists the 16 federal states with name and two-letter code, ids 1..16 alphabetical', async () => {
      const res = await api(url, '/api/bundeslands');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(JSONLD);
      expect(res.body).toEqual({
        '@context': '/api/contexts/Bundesland',
        '@id': '/api/bundeslands',
        '@type': 'hydra:Collection',
        'hydra:totalItems': 16,
        'hydra:member': BUNDESLAENDER.map(([name, code, grunderwerbsteuerSatz], i) => ({
          '@id': `/api/bundeslands/${i + 1}`,
          '@type': 'Bundesland',
          id: i + 1,
          name,
          code,
          grunderwerbsteuerSatz,
        })),
        'hydra:search': expect.objectContaining({ '@type': 'hydra:IriTemplate' }),
      });
    });

    it('lists 8 heating types, ids 1..8, each with a distinct name', async () => {
      const res = await api(url, '/api/heizungstyps');
      expect(res.status).toBe(200);
      const body = res.body as Record<string, unknown>;
      expect(body['@context']).toBe('/api/contexts/Heizungstyp');
      expect(body['@id']).toBe('/api/heizungstyps');
      expect(body['@type']).toBe('hydra:Collection');
      expect(body['hydra:totalItems']).toBe(8);
      expect(body).not.toHaveProperty('hydra:view');
      expect(body['hydra:search']).toMatchObject({
        'hydra:template': '/api/heizungstyps{?name,order[id],order[name],properties[]}',
      });
      const items = members(res);
      expect(items.map((m) => Object.keys(m))).toEqual(Array.from({ length: 8 }, () => ['@id', '@type', 'id', 'name']));
      expect(items.map((m) => [m['@id'], m['@type'], m.id])).toEqual(
        Array.from({ length: 8 }, (_, i) => [`/api/heizungstyps/${i + 1}`, 'Heizungstyp', i + 1]),
      );
      const names = items.map((m) => m.name as string);
      expect(names.every((n) => typeof n === 'string' && n.length > 0)).toBe(true);
      expect(new Set(names).size).toBe(8);
    });

    it('GET /api/bundeslands/13 is Sachsen', async () => {
      const res = await api(url, '/api/bundeslands/13');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(JSONLD);
      expect(res.body).toEqual({
        '@context': '/api/contexts/Bundesland',
        '@id': '/api/bundeslands/13',
        '@type': 'Bundesland',
        id: 13,
        name: 'Sachsen',
        code: 'SN',
        grunderwerbsteuerSatz: 5.5,
      });
    });

    it('GET /api/heizungstyps/1 has @context, @id, @type, id and name', async () => {
      const res = await api(url, '/api/heizungstyps/1');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        '@context': '/api/contexts/Heizungstyp',
        '@id': '/api/heizungstyps/1',
        '@type': 'Heizungstyp',
        id: 1,
        name: expect.any(String),
      });
    });

    it('unknown reference-data ids answer 404', async () => {
      expectHydraError(await api(url, '/api/bundeslands/999'), 404, NOT_FOUND);
      expectHydraError(await api(url, '/api/heizungstyps/999'), 404, NOT_FOUND);
    });
  });

  describe('Immobilie', () => {
    it('POST creates with 201, Location, Content-Location, the item in field order, relations as IRIs', async () => {
      const res = await api(url, '/api/immobilies', { method: 'POST', key: user.key, body: immobilieBody() });
      expect(res.status).toBe(201);
      expect(res.headers.get('content-type')).toBe(JSONLD);
      const item = res.body as Item;
      expect(item['@id']).toMatch(/^\/api\/immobilies\/\d+$/);
      expect(res.headers.get('location')).toBe(item['@id']);
      expect(res.headers.get('content-location')).toBe(item['@id']);
      expect(item).toEqual({
        '@context': '/api/contexts/Immobilie',
        '@id': `/api/immobilies/${item.id}`,
        '@type': 'Immobilie',
        id: item.id,
        verwalter: user.iri,
        adresse: 'Lindenweg 4, 04109 Leipzig',
        wohnflaeche: 92.5,
        nutzflaeche: 15,
        zimmer: 4,
        typ: 'haus',
        kaufpreis: 420000,
        bundesland: '/api/bundeslands/13',
        heizungstyp: '/api/heizungstyps/2',
        createdAt: expect.stringMatching(TIMESTAMP),
        updatedAt: item.createdAt,
        ...COSTS_SACHSEN,
      });
      expect(Object.keys(item)).toEqual(IMMOBILIE_KEYS);
    });

    it('GET returns the stored item', async () => {
      const created = await createImmobilie(url, user.key, {
        adresse: 'Am Markt 1',
        typ: 'wohnung',
        bundesland: '/api/bundeslands/2',
      });
      const res = await api(url, created['@id'], { key: user.key });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(JSONLD);
      expect(res.body).toEqual(created);
      expect(Object.keys(res.body as object)).toEqual(IMMOBILIE_KEYS);
    });

    it('null and missing optional fields are omitted from the output', async () => {
      const res = await api(url, '/api/immobilies', {
        method: 'POST',
        key: user.key,
        body: {
          adresse: 'Nur Pflichtfelder 1',
          typ: 'grundstueck',
          bundesland: '/api/bundeslands/1',
          heizungstyp: null,
          kaufpreis: null,
        },
      });
      expect(res.status).toBe(201);
      const item = res.body as Item;
      expect(item).toEqual({
        '@context': '/api/contexts/Immobilie',
        '@id': `/api/immobilies/${item.id}`,
        '@type': 'Immobilie',
        id: item.id,
        verwalter: user.iri,
        adresse: 'Nur Pflichtfelder 1',
        typ: 'grundstueck',
        bundesland: '/api/bundeslands/1',
        createdAt: expect.stringMatching(TIMESTAMP),
        updatedAt: expect.stringMatching(TIMESTAMP),
      });
      const again = await api(url, item['@id'], { key: user.key });
      expect(again.body).toEqual(item);
    });

    it('verwalter defaults to the caller', async () => {
      const mine = await createImmobilie(url, technical.key, { verwalter: undefined });
      expect(mine.verwalter).toBe(technical.iri);
      const adminOwn = await createImmobilie(url, admin.key);
      expect(adminOwn.verwalter).toBe(admin.iri);
    });

    it('every ImmobilienTyp value is accepted', async () => {
      for (const typ of ['wohnung', 'haus', 'grundstueck', 'gewerbe', 'buero']) {
        const item = await createImmobilie(url, user.key, { typ });
        expect(item.typ).toBe(typ);
      }
    });

    it('integers are accepted for number fields and come back as numbers', async () => {
      const item = await createImmobilie(url, user.key, { wohnflaeche: 80, nutzflaeche: 0, kaufpreis: 0, zimmer: 0 });
      expect([item.wohnflaeche, item.nutzflaeche, item.kaufpreis, item.zimmer]).toEqual([80, 0, 0, 0]);
    });

    it('unknown and read-only keys in the body are ignored', async () => {
      const res = await api(url, '/api/immobilies', {
        method: 'POST',
        key: user.key,
        body: immobilieBody({ id: 424242, '@id': '/api/immobilies/424242', foo: 'bar' }),
      });
      expect(res.status).toBe(201);
      const item = res.body as Item;
      expect(item.id).not.toBe(424242);
      expect(item['@id']).toBe(`/api/immobilies/${item.id}`);
      expect(item).not.toHaveProperty('foo');
      expect((await api(url, '/api/immobilies/424242', { key: admin.key })).status).toBe(404);
    });

    it('PATCH changes only the sent keys, answers 200 with Content-Location, and GET shows the change', async () => {
      const created = await createImmobilie(url, user.key);
      const res = await api(url, created['@id'], {
        method: 'PATCH',
        key: user.key,
        body: { zimmer: 5, kaufpreis: 399999.5 },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(JSONLD);
      expect(res.headers.get('content-location')).toBe(created['@id']);
      // The costs follow the new price; each line rounds half up on its own (1999.9975 → 2000).
      const expected = {
        ...created,
        zimmer: 5,
        kaufpreis: 399999.5,
        preisProQuadratmeter: 4324.32,
        grunderwerbsteuer: 21999.97,
        kaufnebenkosten: {
          grunderwerbsteuer: 21999.97,
          notar: 5999.99,
          grundbuch: 2000,
          makler: 14279.98,
          summe: 44279.94,
        },
        gesamtkosten: 444279.44,
        updatedAt: (res.body as Item).updatedAt,
      };
      expect(res.body).toEqual(expected);
      expect(Date.parse(expected.updatedAt as string)).toBeGreaterThanOrEqual(Date.parse(created.updatedAt as string));
      const after = await api(url, created['@id'], { key: user.key });
      expect(after.status).toBe(200);
      expect(after.body).toEqual(expected);
    });

    it('PATCH with an explicit null clears an optional field (heizungstyp, nutzflaeche)', async () => {
      const created = await createImmobilie(url, user.key);
      const res = await api(url, created['@id'], {
        method: 'PATCH',
        key: user.key,
        body: { heizungstyp: null, nutzflaeche: null },
      });
      expect(res.status).toBe(200);
      const { heizungstyp: _h, nutzflaeche: _n, ...rest } = created;
      const expected = { ...rest, updatedAt: (res.body as Item).updatedAt };
      expect(res.body).toEqual(expected);
      const after = await api(url, created['@id'], { key: user.key });
      expect(after.body).toEqual(expected);
      expect(after.body).not.toHaveProperty('heizungstyp');
    });

    it('PATCH sets relations by IRI and an empty patch changes nothing', async () => {
      const created = await createImmobilie(url, user.key, { heizungstyp: undefined });
      const set = await api(url, created['@id'], {
        method: 'PATCH',
        key: user.key,
        body: {
          heizungstyp: '/api/heizungstyps/3',
          bundesland: '/api/bundeslands/7',
          typ: 'buero',
          adresse: 'Neue Straße 2',
        },
      });
      expect(set.status).toBe(200);
      // updatedAt moves with the change (to the second); the empty patch below keeps it.
      // Hessen taxes at 6.0 %: the costs follow the state.
      const expected = {
        ...created,
        heizungstyp: '/api/heizungstyps/3',
        bundesland: '/api/bundeslands/7',
        typ: 'buero',
        adresse: 'Neue Straße 2',
        grunderwerbsteuer: 25200,
        kaufnebenkosten: { grunderwerbsteuer: 25200, notar: 6300, grundbuch: 2100, makler: 14994, summe: 48594 },
        gesamtkosten: 468594,
        updatedAt: (set.body as Item).updatedAt,
      };
      expect(set.body).toEqual(expected);
      const empty = await api(url, created['@id'], { method: 'PATCH', key: user.key, body: {} });
      expect(empty.status).toBe(200);
      expect(empty.body).toEqual(expected);
      expect((await api(url, created['@id'], { key: user.key })).body).toEqual(expected);
    });

    it('DELETE answers 204 with an empty body; the item is gone afterwards', async () => {
      const created = await createImmobilie(url, user.key);
      const res = await api(url, created['@id'], { method: 'DELETE', key: user.key });
      expect(res.status).toBe(204);
      expect(res.text).toBe('');
      expectHydraError(await api(url, created['@id'], { key: user.key }), 404, NOT_FOUND);
      expectHydraError(await api(url, created['@id'], { method: 'DELETE', key: user.key }), 404, NOT_FOUND);
      expectHydraError(
        await api(url, created['@id'], { method: 'PATCH', key: user.key, body: { zimmer: 1 } }),
        404,
        NOT_FOUND,
      );
    });

    it('an unknown id answers 404 for GET, PATCH and DELETE', async () => {
      expectHydraError(await api(url, '/api/immobilies/999999', { key: admin.key }), 404, NOT_FOUND);
      expectHydraError(
        await api(url, '/api/immobilies/999999', { method: 'PATCH', key: admin.key, body: { zimmer: 1 } }),
        404,
        NOT_FOUND,
      );
      expectHydraError(await api(url, '/api/immobilies/999999', { method: 'DELETE', key: admin.key }), 404, NOT_FOUND);
    });
  });

  describe('Bundesland and Heizungstyp', () => {
    it('POST, GET, PUT (full replacement), DELETE a Bundesland', async () => {
      const created = await api(url, '/api/bundeslands', {
        method: 'POST',
        key: admin.key,
        body: { name: 'Testland', code: 'TL' },
      });
      expect(created.status).toBe(201);
      const item = created.body as Item;
      expect(item).toEqual({
        '@context': '/api/contexts/Bundesland',
        '@id': `/api/bundeslands/${item.id}`,
        '@type': 'Bundesland',
        id: item.id,
        name: 'Testland',
        code: 'TL',
      });
      expect(item.id).toBeGreaterThan(16);
      expect(created.headers.get('location')).toBe(item['@id']);
      expect(created.headers.get('content-location')).toBe(item['@id']);

      const put = await api(url, item['@id'], { method: 'PUT', key: admin.key, body: { name: 'Neuland', code: 'NL' } });
      expect(put.status).toBe(200);
      expect(put.headers.get('content-type')).toBe(JSONLD);
      expect(put.headers.get('content-location')).toBe(item['@id']);
      expect(put.body).toEqual({ ...item, name: 'Neuland', code: 'NL' });
      expect((await api(url, item['@id'])).body).toEqual({ ...item, name: 'Neuland', code: 'NL' });

      const del = await api(url, item['@id'], { method: 'DELETE', key: admin.key });
      expect(del.status).toBe(204);
      expect(del.text).toBe('');
      expectHydraError(await api(url, item['@id']), 404, NOT_FOUND);
    });

    it('PUT with the same name and a new code changes only the code', async () => {
      const created = await createItem(url, '/api/bundeslands', technical.key, { name: 'Kurzland', code: 'KL' });
      const put = await api(url, created['@id'], {
        method: 'PUT',
        key: technical.key,
        body: { name: 'Kurzland', code: 'KZ' },
      });
      expect(put.status).toBe(200);
      expect(put.body).toEqual({ ...created, code: 'KZ' });
    });

    it('PUT on an unknown id answers 404 (no upsert)', async () => {
      expectHydraError(
        await api(url, '/api/bundeslands/9999', {
          method: 'PUT',
          key: admin.key,
          body: { name: 'Nirgendwo', code: 'NW' },
        }),
        404,
        NOT_FOUND,
      );
      expectHydraError(
        await api(url, '/api/heizungstyps/9999', { method: 'PUT', key: admin.key, body: { name: 'Nichts' } }),
        404,
        NOT_FOUND,
      );
      expectHydraError(await api(url, '/api/bundeslands/9999', { method: 'DELETE', key: admin.key }), 404, NOT_FOUND);
    });

    it('POST, PUT, DELETE a Heizungstyp (technical)', async () => {
      const created = await api(url, '/api/heizungstyps', {
        method: 'POST',
        key: technical.key,
        body: { name: 'Infrarotheizung' },
      });
      expect(created.status).toBe(201);
      const item = created.body as Item;
      expect(item).toEqual({
        '@context': '/api/contexts/Heizungstyp',
        '@id': `/api/heizungstyps/${item.id}`,
        '@type': 'Heizungstyp',
        id: item.id,
        name: 'Infrarotheizung',
      });
      expect(created.headers.get('location')).toBe(item['@id']);

      const put = await api(url, item['@id'], { method: 'PUT', key: technical.key, body: { name: 'Infrarot' } });
      expect(put.status).toBe(200);
      expect(put.body).toEqual({ ...item, name: 'Infrarot' });
      expect((await api(url, item['@id'])).body).toEqual({ ...item, name: 'Infrarot' });

      expect((await api(url, item['@id'], { method: 'DELETE', key: technical.key })).status).toBe(204);
      expectHydraError(await api(url, item['@id']), 404, NOT_FOUND);
    });

    it('a new Bundesland and Heizungstyp can be used by an Immobilie', async () => {
      const land = await createItem(url, '/api/bundeslands', admin.key, { name: 'Verwendetland', code: 'VL' });
      const heizung = await createItem(url, '/api/heizungstyps', admin.key, { name: 'Verwendetheizung' });
      const item = await createImmobilie(url, user.key, { bundesland: land['@id'], heizungstyp: heizung['@id'] });
      expect([item.bundesland, item.heizungstyp]).toEqual([land['@id'], heizung['@id']]);
    });

    it('deleting a Bundesland still used by an Immobilie answers 409; once unused it deletes with 204', async () => {
      const land = await createItem(url, '/api/bundeslands', admin.key, { name: 'Belegtland', code: 'BL' });
      const item = await createImmobilie(url, user.key, { bundesland: land['@id'] });
      const res = await api(url, land['@id'], { method: 'DELETE', key: admin.key });
      expectHydraError(res, 409);
      expect((await api(url, land['@id'])).status).toBe(200);
      expect((await api(url, item['@id'], { key: user.key })).body).toEqual(item);

      expect((await api(url, item['@id'], { method: 'DELETE', key: user.key })).status).toBe(204);
      expect((await api(url, land['@id'], { method: 'DELETE', key: admin.key })).status).toBe(204);
    });

    it('deleting a seeded Bundesland in use answers 409, an unused seeded one 204', async () => {
      await createImmobilie(url, user.key, { bundesland: '/api/bundeslands/5' });
      expectHydraError(await api(url, '/api/bundeslands/5', { method: 'DELETE', key: technical.key }), 409);
      const unused = await api(url, '/api/bundeslands/12', { method: 'DELETE', key: technical.key });
      expect(unused.status).toBe(204);
      expectHydraError(await api(url, '/api/bundeslands/12'), 404, NOT_FOUND);
    });

    it('deleting a Heizungstyp still used by an Immobilie answers 409', async () => {
      const heizung = await createItem(url, '/api/heizungstyps', admin.key, { name: 'Belegtheizung' });
      await createImmobilie(url, user.key, { heizungstyp: heizung['@id'] });
      expectHydraError(await api(url, heizung['@id'], { method: 'DELETE', key: admin.key }), 409);
      expect((await api(url, heizung['@id'])).status).toBe(200);
    });
  });

  describe('User', () => {
    it('anonymous POST /api/users creates role user and returns the API key once', async () => {
      const email = uniqueEmail('anon');
      const res = await api(url, '/api/users', { method: 'POST', body: { name: 'Erika Mustermann', email } });
      expect(res.status).toBe(201);
      expect(res.headers.get('content-type')).toBe(JSONLD);
      const item = res.body as Item & { apiKey: string };
      expect(item).toEqual({
        '@context': '/api/contexts/User',
        '@id': `/api/users/${item.id}`,
        '@type': 'User',
        id: item.id,
        name: 'Erika Mustermann',
        email,
        role: 'user',
        apiKey: expect.any(String),
      });
      expect(res.headers.get('location')).toBe(item['@id']);
      expect(res.headers.get('content-location')).toBe(item['@id']);
      expect(item.apiKey).toMatch(/^prop_[A-Za-z0-9_-]{43,}$/);
    });

    it('the returned key authenticates and never appears again (GET item, GET collection, PUT)', async () => {
      const email = uniqueEmail('key');
      const created = await api(url, '/api/users', { method: 'POST', body: { name: 'Key Holder', email } });
      expect(created.status).toBe(201);
      const { apiKey, ...user } = created.body as Item & { apiKey: string };
      const { '@context': _c, ...member } = user;

      const get = await api(url, user['@id'], { key: apiKey });
      expect(get.status).toBe(200);
      expect(get.body).toEqual(user);
      expect(get.text).not.toContain(apiKey);
      expect(get.text).not.toContain('apiKey');

      const list = await api(url, '/api/users', { key: apiKey });
      expect(list.status).toBe(200);
      expect(members(list)).toEqual([member]);
      expect(list.text).not.toContain('apiKey');

      const asAdmin = await api(url, '/api/users?itemsPerPage=100', { key: admin.key });
      expect(asAdmin.text).not.toContain('apiKey');
      expect(asAdmin.text).not.toContain(apiKey);
      const plain = await api(url, '/api/users?itemsPerPage=100', { key: admin.key, accept: 'application/json' });
      expect(plain.text).not.toContain('apiKey');

      const put = await api(url, user['@id'], { method: 'PUT', key: apiKey, body: { name: 'Key Holder 2', email } });
      expect(put.status).toBe(200);
      expect(put.body).toEqual({ ...user, name: 'Key Holder 2' });
      expect(put.text).not.toContain('apiKey');
    });

    it('an apiKey sent in the body is ignored: the server issues its own', async () => {
      const res = await api(url, '/api/users', {
        method: 'POST',
        body: {
          name: 'Chooser',
          email: uniqueEmail('chooser'),
          apiKey: 'prop_chosen_by_client_000000000000000000000000',
        },
      });
      expect(res.status).toBe(201);
      const item = res.body as Item & { apiKey: string };
      expect(item.apiKey).not.toBe('prop_chosen_by_client_000000000000000000000000');
      const withChosen = await api(url, '/api/users', { key: 'prop_chosen_by_client_000000000000000000000000' });
      expectHydraError(withChosen, 401, 'Invalid credentials.');
    });

    it('two registrations get different keys', async () => {
      const a = (await api(url, '/api/users', { method: 'POST', body: { name: 'A', email: uniqueEmail('a') } }))
        .body as { apiKey: string };
      const b = (await api(url, '/api/users', { method: 'POST', body: { name: 'B', email: uniqueEmail('b') } }))
        .body as { apiKey: string };
      expect(a.apiKey).not.toBe(b.apiKey);
    });

    it('PUT replaces name and email, keeps the role when it is left out, and GET shows it', async () => {
      const account = await server.createAccount('technical');
      const email = uniqueEmail('renamed');
      const res = await api(url, account.iri, { method: 'PUT', key: account.key, body: { name: 'Renamed', email } });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-location')).toBe(account.iri);
      expect(res.body).toEqual({
        '@context': '/api/contexts/User',
        '@id': account.iri,
        '@type': 'User',
        id: account.id,
        name: 'Renamed',
        email,
        role: 'technical',
      });
      expect((await api(url, account.iri, { key: account.key })).body).toEqual(res.body);
    });

    it('DELETE of the own record answers 204; the key stops working', async () => {
      const account = await server.createAccount('user');
      const res = await api(url, account.iri, { method: 'DELETE', key: account.key });
      expect(res.status).toBe(204);
      expect(res.text).toBe('');
      expectHydraError(await api(url, account.iri, { key: account.key }), 401, 'Invalid credentials.');
      expectHydraError(await api(url, account.iri, { key: admin.key }), 404, NOT_FOUND);
    });

    it('the harness accounts are real users with the expected roles', async () => {
      const res = await api(url, admin.iri, { key: admin.key });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ '@id': admin.iri, id: admin.id, role: 'admin' });
      expect(admin.iri).toBe(`/api/users/${admin.id}`);
    });
  });
});
