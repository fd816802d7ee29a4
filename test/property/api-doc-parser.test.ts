import {
  parseHydraDocumentation,
  parseOpenApi3Documentation,
  type Api,
  type Field,
  type Resource,
} from '@api-platform/api-doc-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { api as request } from '../support/http.js';
import { dialects, startPropertyServer, type PropertyTestServer } from '../support/property-server.js';
import { IMMOBILIE_SEARCH_VARIABLES } from './fixtures.js';

/**
 * The official JS client of API Platform (used by @api-platform/admin and the client generator),
 * run against the real server: if it cannot build the model of our API from the entrypoint, the
 * Link header, the contexts and /api/docs.jsonld, neither can the admin.
 */

interface ExpectedField {
  readonly name: string;
  readonly required: boolean;
  readonly type?: string;
  /** Name of the referenced resource (its collection segment). */
  readonly reference?: string;
  readonly readable?: boolean;
  readonly writable?: boolean;
  /** The RDF property (field.id) when it is a shared one, such as schema.org `name` for labels. */
  readonly iri?: string;
}

interface ExpectedResource {
  readonly name: string;
  readonly title: string;
  readonly fields: readonly ExpectedField[];
  /** Operation types in the parser's order: collection operations, then item operations. */
  readonly operations: readonly string[];
  readonly methods: readonly string[];
}

const CRUD = ['list', 'create', 'show', 'edit', 'edit', 'delete'];
const CRUD_METHODS = ['GET', 'POST', 'GET', 'PUT', 'PATCH', 'DELETE'];
const SCHEMA_NAME = 'https://schema.org/name';
const computed = (name: string, type?: string): ExpectedField => ({
  name,
  required: false,
  ...(type ? { type } : {}),
  readable: true,
  writable: false,
});

const EXPECTED: readonly ExpectedResource[] = [
  {
    name: 'immobilies',
    title: 'Immobilie',
    fields: [
      { name: 'verwalter', required: false, reference: 'users' },
      { name: 'adresse', required: true, type: 'string', iri: SCHEMA_NAME },
      { name: 'wohnflaeche', required: false, type: 'decimal' },
      { name: 'nutzflaeche', required: false, type: 'decimal' },
      { name: 'zimmer', required: false, type: 'integer' },
      { name: 'typ', required: true, type: 'string' },
      { name: 'kaufpreis', required: false, type: 'decimal' },
      { name: 'kaltmiete', required: false, type: 'decimal' },
      { name: 'bundesland', required: true, reference: 'bundeslands' },
      { name: 'heizungstyp', required: false, reference: 'heizungstyps' },
      { name: 'createdAt', required: false, type: 'dateTime', readable: true, writable: false },
      { name: 'updatedAt', required: false, type: 'dateTime', readable: true, writable: false },
      // Computed, so readable and never writable.
      computed('preisProQuadratmeter', 'decimal'),
      computed('grunderwerbsteuer', 'decimal'),
      computed('kaufnebenkosten'),
      computed('gesamtkosten', 'decimal'),
      computed('bruttomietrendite', 'decimal'),
      computed('kaufpreisfaktor', 'decimal'),
    ],
    operations: CRUD,
    methods: CRUD_METHODS,
  },
  {
    name: 'bundeslands',
    title: 'Bundesland',
    fields: [
      { name: 'name', required: true, type: 'string', iri: SCHEMA_NAME },
      { name: 'code', required: true, type: 'string' },
      { name: 'grunderwerbsteuerSatz', required: false, type: 'decimal' },
    ],
    operations: CRUD,
    methods: CRUD_METHODS,
  },
  {
    name: 'heizungstyps',
    title: 'Heizungstyp',
    fields: [{ name: 'name', required: true, type: 'string', iri: SCHEMA_NAME }],
    operations: CRUD,
    methods: CRUD_METHODS,
  },
  {
    name: 'users',
    title: 'User',
    fields: [
      { name: 'name', required: true, type: 'string', iri: SCHEMA_NAME },
      { name: 'email', required: true, type: 'string' },
      { name: 'role', required: false, type: 'string' },
      // Shown once, in the response to POST: readable there, never writable.
      { name: 'apiKey', required: false, type: 'string', readable: true, writable: false },
    ],
    operations: CRUD,
    methods: CRUD_METHODS,
  },
  {
    name: 'finanzierungsrechners',
    title: 'Finanzierungsrechner',
    fields: [
      { name: 'kaufpreis', required: false, type: 'decimal' },
      { name: 'immobilie', required: false, reference: 'immobilies', readable: false, writable: true },
      { name: 'eigenkapital', required: true, type: 'decimal' },
      { name: 'zinssatz', required: true, type: 'decimal' },
      { name: 'tilgungssatz', required: false, type: 'decimal' },
      { name: 'wunschrate', required: false, type: 'decimal' },
      { name: 'zinsbindungJahre', required: true, type: 'integer' },
      { name: 'anschlusszins', required: false, type: 'decimal' },
      { name: 'sondertilgung', required: false, type: 'decimal' },
      { name: 'sondertilgungAbJahr', required: false, type: 'integer' },
      { name: 'sondertilgungMaxProzent', required: false, type: 'decimal' },
      { name: 'monatlich', required: false, type: 'boolean', readable: false, writable: true },
      computed('darlehensbetrag', 'decimal'),
      computed('monatsrate', 'decimal'),
      computed('anfaenglicheTilgung', 'decimal'),
      computed('effektivzinsOhneGebuehren', 'decimal'),
      computed('tilgungsplan'),
      computed('monatsplan'),
      computed('restschuldNachZinsbindung', 'decimal'),
      computed('abbezahltImJahr', 'integer'),
      computed('laufzeitMonate', 'integer'),
      computed('summenZinsbindung'),
      computed('summenGesamt'),
    ],
    // Not persisted: computed from a POST, nothing to list, show, edit or delete.
    operations: ['create'],
    methods: ['POST'],
  },
];

/** api-doc-parser skips mappings without a property (the property filter's `properties[]`). */
const IMMOBILIE_PARAMETERS = IMMOBILIE_SEARCH_VARIABLES.filter(([, property]) => property !== null).map(
  ([variable]) => variable,
);

function resourceNamed(api: Api, name: string): Resource {
  const resource = api.resources?.find((r) => r.name === name);
  if (!resource)
    throw new Error(`resource ${name} not found; got ${(api.resources ?? []).map((r) => r.name).join(', ')}`);
  return resource;
}

function referenceName(field: Field): string | undefined {
  const ref = field.reference;
  return ref && typeof ref === 'object' ? ref.name : undefined;
}

describe.each(dialects)('%s: api-doc-parser', (dialect) => {
  let server: PropertyTestServer;
  let adminKey: string;

  beforeAll(async () => {
    server = await startPropertyServer({ dialect });
    adminKey = (await server.createAccount('admin')).key;
  });
  afterAll(async () => {
    await server?.close();
  });

  describe.each([
    ['with an API key', true],
    ['anonymously', false],
  ] as const)('parseHydraDocumentation %s', (_label, withKey) => {
    let api: Api;

    beforeAll(async () => {
      const options = withKey ? { headers: { 'X-API-KEY': adminKey } } : {};
      const parsed = await parseHydraDocumentation(`${server.url}/api`, options).catch((failure: unknown) => {
        // The parser throws a plain object ({ api, error, response, status }); show what went wrong.
        const detail = failure as { error?: unknown; status?: number };
        throw new Error(
          `parseHydraDocumentation failed (status ${String(detail.status)}): ${String(detail.error ?? failure)}`,
        );
      });
      expect(parsed.status).toBe(200);
      api = parsed.api;
    });

    it('finds the API title and exactly the five resources', () => {
      expect(api.title).toBe('Property Calculator Service API');
      expect((api.resources ?? []).map((r) => r.name).sort()).toEqual(EXPECTED.map((r) => r.name).sort());
      for (const expected of EXPECTED) {
        const resource = resourceNamed(api, expected.name);
        expect(resource.title).toBe(expected.title);
        expect(resource.url).toBe(`${server.url}/api/${expected.name}`);
      }
    });

    it.each(EXPECTED.map((r) => [r.name, r] as const))('reads the fields of %s', (_name, expected) => {
      const resource = resourceNamed(api, expected.name);
      expect((resource.fields ?? []).map((f) => f.name)).toEqual(expected.fields.map((f) => f.name));
      const readable = new Set((resource.readableFields ?? []).map((f) => f.name));
      const writable = new Set((resource.writableFields ?? []).map((f) => f.name));
      for (const want of expected.fields) {
        const field = resource.fields?.find((f) => f.name === want.name) as Field;
        expect({ field: want.name, required: field.required }).toEqual({ field: want.name, required: want.required });
        if (want.type) expect({ field: want.name, type: field.type }).toEqual({ field: want.name, type: want.type });
        expect({ field: want.name, reference: referenceName(field) }).toEqual({
          field: want.name,
          reference: want.reference,
        });
        if (want.reference) expect(field.maxCardinality).toBe(1);
        // Labels: the admin shows the field whose id is schema.org name instead of the IRI.
        if (want.iri) expect({ field: want.name, id: field.id }).toEqual({ field: want.name, id: want.iri });
        else expect(field.id).not.toBe(SCHEMA_NAME);
        expect({ field: want.name, readable: readable.has(want.name) }).toEqual({
          field: want.name,
          readable: want.readable ?? true,
        });
        expect({ field: want.name, writable: writable.has(want.name) }).toEqual({
          field: want.name,
          writable: want.writable ?? true,
        });
      }
    });

    it.each(EXPECTED.map((r) => [r.name, r] as const))('reads the operations of %s', (_name, expected) => {
      const operations = resourceNamed(api, expected.name).operations ?? [];
      expect(operations.map((o) => o.type)).toEqual(expected.operations);
      expect(operations.map((o) => o.method)).toEqual(expected.methods);
      for (const operation of operations) {
        expect(operation.name).toMatch(/^(Retrieves|Creates|Replaces|Updates|Deletes) /);
        expect(operation.returns).toBeTruthy();
      }
    });

    if (withKey) {
      it('reads the search parameters of immobilies', async () => {
        const resource = resourceNamed(api, 'immobilies');
        const parameters = await (resource.getParameters as () => Promise<{ variable: string; required: boolean }[]>)();
        expect(parameters.map((p) => p.variable)).toEqual(IMMOBILIE_PARAMETERS);
        expect(parameters.every((p) => p.required === false)).toBe(true);
      });
    } else {
      it('gets no search parameters for immobilies without a key (the collection needs one)', async () => {
        const resource = resourceNamed(api, 'immobilies');
        const parameters = await (resource.getParameters as () => Promise<unknown[]>)();
        expect(parameters).toEqual([]);
      });
    }
  });

  it('describes the enums typ and role by their values (owl:oneOf) in the Hydra documentation', async () => {
    const docs = (await request(server.url, '/api/docs.jsonld')).body as {
      'hydra:supportedClass': {
        '@id': string;
        'hydra:supportedProperty': { 'hydra:title': string; 'hydra:property': { range: unknown } }[];
      }[];
    };
    const rangeOf = (cls: string, field: string) =>
      docs['hydra:supportedClass']
        .find((c) => c['@id'] === `#${cls}`)
        ?.['hydra:supportedProperty'].find((p) => p['hydra:title'] === field)?.['hydra:property'].range;
    expect(rangeOf('Immobilie', 'typ')).toEqual([
      'xmls:string',
      { '@type': 'rdfs:Datatype', 'owl:oneOf': { '@list': ['wohnung', 'haus', 'grundstueck', 'gewerbe', 'buero'] } },
    ]);
    expect(rangeOf('User', 'role')).toEqual([
      'xmls:string',
      { '@type': 'rdfs:Datatype', 'owl:oneOf': { '@list': ['user', 'admin', 'moderator', 'technical'] } },
    ]);
  });

  it('serves the OpenAPI document as YAML too (docs.yaml, docs.yamlopenapi), as API Platform does', async () => {
    const json = (await request(server.url, '/api/docs.json', { accept: 'application/json' })).body;
    for (const [path, type] of [
      ['/api/docs.yaml', 'application/x-yaml; charset=utf-8'],
      ['/api/docs.yamlopenapi', 'application/vnd.openapi+yaml; charset=utf-8'],
    ] as const) {
      const res = await request(server.url, path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type')).toBe(type);
      expect(parseYaml(res.text)).toEqual(json);
    }
    const negotiated = await request(server.url, '/api/docs', { accept: 'application/vnd.openapi+yaml' });
    expect(negotiated.headers.get('content-type')).toBe('application/vnd.openapi+yaml; charset=utf-8');
    expect((await request(server.url, '/api/docs.yaml', { accept: 'text/csv' })).status).toBe(406);
  });

  describe.each([
    ['docs.json', { headers: { Accept: 'application/json' } }],
    ['docs.jsonopenapi', {}],
  ] as const)('parseOpenApi3Documentation on /api/%s', (file, options) => {
    let api: Api;

    beforeAll(async () => {
      const parsed = await parseOpenApi3Documentation(`${server.url}/api/${file}`, options);
      expect(parsed.status).toBe(200);
      api = parsed.api;
    });

    it('finds the four persisted resources with their item operations, fields, read-only computed fields and enums', () => {
      expect(api.title).toBe('Property Calculator Service API');
      // The parser derives resources from item paths (`/x/{id}`): the financing calculation has
      // none (it is computed from a POST), so only the Hydra parser above lists it.
      const persisted = EXPECTED.filter((r) => r.name !== 'finanzierungsrechners');
      expect((api.resources ?? []).map((r) => r.name).sort()).toEqual(persisted.map((r) => r.name).sort());
      for (const expected of persisted) {
        const resource = resourceNamed(api, expected.name);
        // The parser looks collection operations up under `/<name>`, without the /api prefix,
        // so it only ever finds the item operations of an API Platform document.
        expect((resource.operations ?? []).map((o) => `${o.type} ${String(o.method)}`)).toEqual([
          'show GET',
          'edit PUT',
          'edit PATCH',
          'delete DELETE',
        ]);
        const names = (resource.fields ?? []).map((f) => f.name);
        expect(names).toEqual(['id', ...expected.fields.map((f) => f.name)]);
        const writable = new Set((resource.writableFields ?? []).map((f) => f.name));
        for (const want of expected.fields) {
          const field = resource.fields?.find((f) => f.name === want.name) as Field;
          expect({ field: want.name, required: field.required }).toEqual({ field: want.name, required: want.required });
          expect({ field: want.name, writable: writable.has(want.name) }).toEqual({
            field: want.name,
            writable: want.writable ?? true,
          });
        }
      }
      // Enums: HydraAdmin and OpenApiAdmin offer a select for fields with `enum`.
      expect(Object.values(resourceNamed(api, 'immobilies').fields?.find((f) => f.name === 'typ')?.enum ?? {})).toEqual(
        ['wohnung', 'haus', 'grundstueck', 'gewerbe', 'buero'],
      );
      expect(Object.values(resourceNamed(api, 'users').fields?.find((f) => f.name === 'role')?.enum ?? {})).toEqual([
        'user',
        'admin',
        'moderator',
        'technical',
      ]);
      // References are guessed from field names that match a resource title.
      expect(
        referenceName(resourceNamed(api, 'immobilies').fields?.find((f) => f.name === 'bundesland') as Field),
      ).toBe('bundeslands');
      expect(resourceNamed(api, 'users').fields?.find((f) => f.name === 'email')?.type).toBe('email');
    });
  });
});

/** Issue 12: the filter set as the official client reads it (kept apart to ease merging). */
describe.each(dialects)('%s: api-doc-parser reads the filters', (dialect) => {
  let server: PropertyTestServer;
  let api: Api;
  const options = () => ({ headers: { 'X-API-KEY': adminKey } });
  let adminKey: string;

  beforeAll(async () => {
    server = await startPropertyServer({ dialect });
    adminKey = (await server.createAccount('admin')).key;
    api = (await parseHydraDocumentation(`${server.url}/api`, options())).api;
  });
  afterAll(async () => {
    await server?.close();
  });

  const parametersOf = async (name: string) =>
    (
      await (
        resourceNamed(api, name).getParameters as () => Promise<
          { variable: string; range: string | null; required: boolean }[]
        >
      )()
    ).map((p) => ({
      variable: p.variable,
      range: p.range,
    }));
  const rangeOf = (resource: string, field: string) =>
    resourceNamed(api, resource).fields?.find((f) => f.name === field)?.range ?? null;

  it('finds range, date, exists and order parameters of immobilies typed by their field', async () => {
    const parameters = await parametersOf('immobilies');
    const byVariable = new Map(parameters.map((p) => [p.variable, p.range]));
    expect(byVariable.get('kaufpreis[gte]')).toBe(rangeOf('immobilies', 'kaufpreis'));
    expect(byVariable.get('kaufpreis[gte]')).toBe('http://www.w3.org/2001/XMLSchema#decimal');
    expect(byVariable.get('createdAt[after]')).toBe('http://www.w3.org/2001/XMLSchema#dateTime');
    expect(byVariable.get('exists[heizungstyp]')).toBe(rangeOf('immobilies', 'heizungstyp'));
    expect(byVariable.get('adresse')).toBe('http://www.w3.org/2001/XMLSchema#string');
    expect(byVariable.has('order[preisProQuadratmeter]')).toBe(true);
    expect(byVariable.has('properties[]')).toBe(false);
  });

  it('finds the search and order parameters of the reference data and users', async () => {
    expect((await parametersOf('bundeslands')).map((p) => p.variable)).toEqual([
      'name',
      'code',
      'order[id]',
      'order[name]',
      'order[code]',
    ]);
    expect((await parametersOf('heizungstyps')).map((p) => p.variable)).toEqual(['name', 'order[id]', 'order[name]']);
    expect((await parametersOf('users')).map((p) => p.variable)).toEqual([
      'name',
      'email',
      'role',
      'role[]',
      'order[id]',
      'order[name]',
      'order[email]',
    ]);
  });

  it('reads createdAt and updatedAt as readable, not writable date-times', () => {
    const resource = resourceNamed(api, 'immobilies');
    for (const name of ['createdAt', 'updatedAt']) {
      const field = resource.fields?.find((f) => f.name === name) as Field;
      expect({
        name,
        type: field.type,
        readable: (resource.readableFields ?? []).some((f) => f.name === name),
        writable: (resource.writableFields ?? []).some((f) => f.name === name),
        required: field.required,
      }).toEqual({ name, type: 'dateTime', readable: true, writable: false, required: false });
    }
  });
});
