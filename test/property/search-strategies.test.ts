import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/platform/db/database.js';
import { anyone, defineResource, f, searchFilter, SEARCH_STRATEGIES } from '../../src/property/engine/define.js';
import { createEngine } from '../../src/property/engine/operations.js';
import type { AnyDb } from '../../src/property/engine/persistence.js';
import { parseQuery } from '../../src/property/engine/query.js';
import { buildRegistry } from '../../src/property/engine/registry.js';
import { dialects, freshPostgresSchema } from '../support/dialects.js';

/**
 * Every SearchFilter strategy of the engine, on a real SQLite file and a real PostgreSQL schema:
 * one column, one filter per strategy (each through its own field on that column), the same rows
 * and the same answers on both dialects, non-ASCII letters and LIKE/GLOB wildcards included.
 */

const ROWS = [
  'Müllerstraße 5',
  'Am Müllerplatz',
  'MÜLLER',
  'müller',
  'Schulz & Söhne',
  'a%b_c*d?e[f]',
  'Lindenweg 4, 04109 Leipzig',
  'leipziger Allee',
];

const Probe = defineResource({
  shortName: 'Probe',
  path: '/api/probes',
  table: 'probe',
  fields: { id: f.id(), ...Object.fromEntries(SEARCH_STRATEGIES.map((s) => [s, f.string({ column: 'name' })])) },
  operations: { getCollection: { security: anyone } },
  filters: searchFilter(Object.fromEntries(SEARCH_STRATEGIES.map((s) => [s, s]))),
});

/** Query → the ROWS it must select, per strategy. */
const CASES: readonly [string, readonly string[]][] = [
  ['exact=MÜLLER', ['MÜLLER']],
  ['exact=müller', ['müller']],
  ['iexact=MÜLLER', ['MÜLLER', 'müller']],
  ['iexact=mÜller', ['MÜLLER', 'müller']],
  ['partial=üller', ['Müllerstraße 5', 'Am Müllerplatz', 'müller']],
  ['partial=ÜLLER', ['MÜLLER']],
  ['ipartial=ÜLLER', ['Müllerstraße 5', 'Am Müllerplatz', 'MÜLLER', 'müller']],
  ['ipartial=LEIPZIG', ['Lindenweg 4, 04109 Leipzig', 'leipziger Allee']],
  ['start=Mü', ['Müllerstraße 5']],
  ['istart=mü', ['Müllerstraße 5', 'MÜLLER', 'müller']],
  ['end=Leipzig', ['Lindenweg 4, 04109 Leipzig']],
  ['iend=LLER', ['MÜLLER', 'müller']],
  ['word_start=Mü', ['Müllerstraße 5', 'Am Müllerplatz']],
  ['word_start=Allee', ['leipziger Allee']],
  ['iword_start=mü', ['Müllerstraße 5', 'Am Müllerplatz', 'MÜLLER', 'müller']],
  ['iword_start=SÖH', ['Schulz & Söhne']],
  // Wildcards of LIKE (% _) and GLOB (* ? [) are literal characters in a search term.
  ['partial=%', ['a%b_c*d?e[f]']],
  ['partial=_c*d?', ['a%b_c*d?e[f]']],
  ['ipartial=E[F', ['a%b_c*d?e[f]']],
  ['exact=a%25b_c*d?e[f]', ['a%b_c*d?e[f]']],
  ['partial=*', ['a%b_c*d?e[f]']],
  // Several values: any of them.
  ['ipartial[]=söhne&ipartial[]=allee', ['Schulz & Söhne', 'leipziger Allee']],
  ['exact[]=MÜLLER&exact[]=müller', ['MÜLLER', 'müller']],
  // Two filters: both.
  ['ipartial=müller&start=Am', ['Am Müllerplatz']],
  ['partial=nothing-like-this', []],
];

describe.each(dialects)('%s: search strategies', (dialect) => {
  let database: Database<unknown>;
  let dir: string;
  let drop: (() => Promise<void>) | undefined;
  let engine: ReturnType<typeof createEngine>;
  const registry = buildRegistry([Probe], { prefix: '/api', title: 't', description: 'd', version: '1' });
  const probe = registry.byShortName('Probe');
  let idOf: Map<string, number>;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'search-strategies-'));
    const pgSchema = dialect === 'postgres' ? freshPostgresSchema() : undefined;
    drop = pgSchema?.drop;
    database = await openDatabase({
      url: pgSchema?.url ?? `sqlite:${path.join(dir, 'probe.db')}`,
      dataDir: dir,
      defaultFile: 'probe.db',
      poolSize: 2,
    });
    const db = database.db as AnyDb;
    await db.schema
      .createTable('probe')
      .addColumn('id', dialect === 'postgres' ? 'serial' : 'integer', (c) => c.primaryKey())
      .addColumn('name', 'varchar(255)')
      .execute();
    idOf = new Map();
    for (const name of ROWS) {
      const row = await db.insertInto('probe').values({ name }).returning('id').executeTakeFirstOrThrow();
      idOf.set(name, Number(row.id));
    }
    engine = createEngine({
      registry,
      db,
      pagination: {
        pageParameter: 'page',
        itemsPerPageParameter: 'itemsPerPage',
        defaultItemsPerPage: 30,
        maximumItemsPerPage: 100,
        countCap: 100,
      },
    });
  });
  afterAll(async () => {
    await database?.destroy();
    await drop?.();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(CASES)('%s', async (query, expected) => {
    const result = await engine.getCollection(probe as never, parseQuery(query), null);
    expect(result.items.map((item) => item.id)).toEqual(expected.map((name) => idOf.get(name)));
    expect(result.totalItems).toBe(expected.length);
  });

  it('lists `x[]` in the description of the exact strategy only, as API Platform does', async () => {
    const { filterDescriptions } = await import('../../src/property/engine/filters.js');
    const variables = filterDescriptions(registry, probe as never).map((d) => d.variable);
    expect(variables).toEqual(['exact', 'exact[]', ...SEARCH_STRATEGIES.filter((s) => s !== 'exact')]);
  });
});
