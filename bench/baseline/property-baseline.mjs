import { createHash, randomUUID } from 'node:crypto';
import http from 'node:http';
import { URLSearchParams } from 'node:url';
import Sqlite from 'better-sqlite3';
import pg from 'pg';
import { kaufkosten } from '../../dist/src/property/calculator/kaufnebenkosten.js';
import { expandIn, SQL, sqlFor } from './sql.mjs';

/**
 * The limit for the property server's benchmark scenarios: a minimal node:http program that runs
 * the same statements on the same database (same pragmas, same pool size) and writes the same
 * bytes (body and headers). It knows only the three benchmark routes and validates almost nothing.
 *
 * Env: BASELINE_DATABASE_URL (`sqlite:/file.db` or `postgres://…?schema=name`), PORT, HOST.
 */

const CONTENT_TYPE = 'application/ld+json; charset=utf-8';
const PAGE_SIZE = 30;
const DOCS_REL = 'http://www.w3.org/ns/hydra/core#apiDocumentation';

// The filters of Immobilie as the server declares them (immobilie.resource.ts), in its order.
const RANGE = ['between', 'gt', 'gte', 'lt', 'lte'];
const DATES = ['before', 'strictly_before', 'after', 'strictly_after'];
const SEARCH_VARIABLES = [
  ...['typ', 'bundesland', 'heizungstyp', 'verwalter'].flatMap((p) => [
    [p, p],
    [`${p}[]`, p],
  ]),
  ['adresse', 'adresse'],
  ...['kaufpreis', 'wohnflaeche', 'nutzflaeche', 'zimmer', 'preisProQuadratmeter'].flatMap((p) =>
    RANGE.map((op) => [`${p}[${op}]`, p]),
  ),
  ...['createdAt', 'updatedAt'].flatMap((p) => DATES.map((op) => [`${p}[${op}]`, p])),
  ...['heizungstyp', 'wohnflaeche', 'nutzflaeche', 'zimmer', 'kaufpreis'].map((p) => [`exists[${p}]`, p]),
  ...[
    'id',
    'kaufpreis',
    'wohnflaeche',
    'zimmer',
    'nutzflaeche',
    'adresse',
    'typ',
    'preisProQuadratmeter',
    'createdAt',
    'updatedAt',
  ].map((p) => [`order[${p}]`, p]),
  ['properties[]', null],
];
const SEARCH = {
  '@type': 'hydra:IriTemplate',
  'hydra:template': `/api/immobilies{?${SEARCH_VARIABLES.map(([v]) => v).join(',')}}`,
  'hydra:variableRepresentation': 'BasicRepresentation',
  'hydra:mapping': SEARCH_VARIABLES.map(([variable, property]) => ({
    '@type': 'IriTemplateMapping',
    variable,
    property,
    required: false,
  })),
};
/** The cost percentages' defaults (PROPERTY_NOTAR_PERCENT, …), as the server's config has them. */
const SAETZE = { notarProzent: 1.5, grundbuchProzent: 0.5, maklerProzent: 3.57 };
/** PROPERTY_COUNT_CAP's default: filtered counts stop at cap + 1. */
const COUNT_CAP = 10_000;
/** BASELINE_PAGE_ONLY=1: the scale scenarios' limit, which never counts (totals read once at start). */
const PAGE_ONLY = process.env.BASELINE_PAGE_ONLY === '1';

/** `query(name, params)` resolves to rows; `transaction(fn)` runs fn(query) between begin and commit. */
function openSqlite(file, sql) {
  const db = new Sqlite(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  // database.ts SQLITE_CACHE_KIB.
  db.pragma('cache_size = -32768');
  // database.ts SQLITE_TEMP_STORE.
  db.pragma('temp_store = MEMORY');
  const statements = Object.fromEntries(
    Object.entries(sql)
      .filter(([, text]) => !text.includes('…'))
      .map(([name, text]) => [name, db.prepare(text)]),
  );
  const query = async (name, params = []) => {
    const stmt = statements[name] ?? (statements[name] = db.prepare(name));
    if (stmt.reader) return stmt.all(params);
    stmt.run(params);
    return [];
  };
  // One connection: a transaction keeps it to itself until it ends, as Kysely's SQLite driver does.
  let lock = Promise.resolve();
  const transaction = (fn) => {
    const run = lock.then(async () => {
      await query('begin');
      try {
        const result = await fn(query);
        await query('commit');
        return result;
      } catch (err) {
        db.exec('rollback');
        throw err;
      }
    });
    lock = run.catch(() => {});
    return run;
  };
  return { query, transaction, totals: () => totalsFrom(query) };
}

function openPostgres(rawUrl, sql) {
  const url = new URL(rawUrl);
  const schema = url.searchParams.get('schema');
  url.searchParams.delete('schema');
  pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
  const pool = new pg.Pool({
    connectionString: url.toString(),
    max: 10,
    ...(schema ? { options: `-c search_path="${schema}"` } : {}),
  });
  const on =
    (client) =>
    async (name, params = []) =>
      (await client.query(sql[name] ?? name, params)).rows;
  const transaction = async (fn) => {
    const client = await pool.connect();
    const query = on(client);
    try {
      await query('begin');
      const result = await fn(query);
      await query('commit');
      return result;
    } catch (err) {
      await client.query('rollback');
      throw err;
    } finally {
      client.release();
    }
  };
  return { query: on(pool), transaction, totals: () => totalsFrom(on(pool)) };
}

/** Owner id → number of rows, and 0 → all rows: counted once, at start. */
async function totalsFrom(query) {
  const rows = await query('ownerTotals');
  const out = new Map([[0, 0]]);
  for (const row of rows) {
    out.set(Number(row.owner), Number(row.total));
    out.set(0, (out.get(0) ?? 0) + Number(row.total));
  }
  return out;
}

function immobilie(row, embedded) {
  const out = embedded ? {} : { '@context': '/api/contexts/Immobilie' };
  out['@id'] = `/api/immobilies/${row.id}`;
  out['@type'] = 'Immobilie';
  out.id = row.id;
  out.verwalter = `/api/users/${row.verwalter_id}`;
  out.adresse = row.adresse;
  if (row.wohnflaeche !== null) out.wohnflaeche = row.wohnflaeche;
  if (row.nutzflaeche !== null) out.nutzflaeche = row.nutzflaeche;
  if (row.zimmer !== null) out.zimmer = row.zimmer;
  out.typ = row.typ;
  if (row.kaufpreis !== null) out.kaufpreis = row.kaufpreis;
  if (row.kaltmiete !== null) out.kaltmiete = row.kaltmiete;
  out.bundesland = `/api/bundeslands/${row.bundesland_id}`;
  if (row.heizungstyp_id !== null) out.heizungstyp = `/api/heizungstyps/${row.heizungstyp_id}`;
  if (row.created_at !== null) out.createdAt = timestamp(row.created_at);
  if (row.updated_at !== null) out.updatedAt = timestamp(row.updated_at);
  const satz = row.satz ?? null;
  const costs = kaufkosten(
    {
      kaufpreis: row.kaufpreis,
      wohnflaeche: row.wohnflaeche,
      grunderwerbsteuerSatz: satz === null ? null : Number(satz),
      kaltmiete: row.kaltmiete,
    },
    SAETZE,
  );
  for (const name of [
    'preisProQuadratmeter',
    'grunderwerbsteuer',
    'kaufnebenkosten',
    'gesamtkosten',
    'bruttomietrendite',
    'kaufpreisfaktor',
  ])
    if (costs[name] !== undefined) out[name] = costs[name];
  return out;
}

const timestamp = (value) => `${new Date(value).toISOString().slice(0, 19)}+00:00`;

/** `query` is the request's query string as written (`''` for none); `total` undefined = partial. */
function collection(total, rows, query) {
  const body = { '@context': '/api/contexts/Immobilie', '@id': '/api/immobilies', '@type': 'hydra:Collection' };
  if (total !== undefined) body['hydra:totalItems'] = total;
  body['hydra:member'] = rows.map((row) => immobilie(row, true));
  const link = (n) => `/api/immobilies?${query ? `${query}&` : ''}page=${n}`;
  if (total === undefined) {
    body['hydra:view'] = { '@id': link(1), '@type': 'hydra:PartialCollectionView' };
    if (rows.length >= PAGE_SIZE) body['hydra:view']['hydra:next'] = link(2);
  } else {
    const lastPage = Math.max(1, Math.ceil(total / PAGE_SIZE));
    if (lastPage > 1) {
      body['hydra:view'] = {
        '@id': link(1),
        '@type': 'hydra:PartialCollectionView',
        'hydra:first': link(1),
        'hydra:last': link(lastPage),
        'hydra:next': link(2),
      };
    } else if (query) {
      body['hydra:view'] = { '@id': `/api/immobilies?${query}`, '@type': 'hydra:PartialCollectionView' };
    }
  }
  body['hydra:search'] = SEARCH;
  return body;
}

/** The case-insensitive contains-pattern of a term, as persistence.ts builds it per dialect. */
function containsPattern(dialect, term) {
  if (dialect === 'postgres') return `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const glob = (c) => (c === '*' || c === '?' || c === '[' ? `[${c}]` : c);
  const cls = (c) => {
    const forms = new Set([c, c.toLowerCase(), c.toUpperCase()].filter((x) => [...x].length === 1));
    return forms.size > 1 ? `[${[...forms].join('')}]` : glob(c);
  };
  return `*${[...term].map(cls).join('')}*`;
}

/**
 * The server's request budgets (security/rate-limits.ts) as the bench configures them: every
 * request counts against its address and, with a key, against the key's hash, in one-minute
 * windows; the answer carries the tightest budget's RateLimit-* headers.
 */
const RATE_LIMIT = 10_000_000;
const budgets = new Map();
function countAgainst(name, t) {
  const start = t - (t % 60_000);
  let w = budgets.get(name);
  if (!w || w.start !== start) budgets.set(name, (w = { start, count: 0 }));
  w.count++;
  return { remaining: Math.max(0, RATE_LIMIT - w.count), reset: Math.ceil((start + 60_000 - t) / 1000) };
}
function rateLimitHeaders(req) {
  const t = Date.now();
  const key = req.headers['x-api-key'];
  const byAddress = countAgainst(`a:${req.socket.remoteAddress}`, t);
  const byKey =
    typeof key === 'string' && key !== ''
      ? countAgainst(`k:${createHash('sha256').update(key).digest('hex').slice(0, 32)}`, t)
      : undefined;
  const tightest = byKey && byKey.remaining < byAddress.remaining ? byKey : byAddress;
  return {
    'ratelimit-limit': String(RATE_LIMIT),
    'ratelimit-remaining': String(tightest.remaining),
    'ratelimit-reset': String(tightest.reset),
  };
}

/** The IRIs a page of properties contains, as the service's Cache-Tags name them (engine/http-cache.ts). */
function immobilieTags(rows) {
  const tags = new Set(['/api/immobilies']);
  for (const row of rows) {
    tags.add(`/api/immobilies/${row.id}`);
    tags.add(`/api/users/${row.verwalter_id}`);
    tags.add(`/api/bundeslands/${row.bundesland_id}`);
    if (row.heizungstyp_id !== null) tags.add(`/api/heizungstyps/${row.heizungstyp_id}`);
  }
  return [...tags].join(',');
}

/** The service's defaults for public answers (PROPERTY_HTTP_CACHE_MAX_AGE, …_SHARED_MAX_AGE). */
const HTTP_CACHE_MAX_AGE = 60;
const HTTP_CACHE_SHARED_MAX_AGE = 3600;

function send(req, res, status, body, headers = {}, tags = undefined) {
  const text = JSON.stringify(body);
  const out = {
    'x-request-id': randomUUID(),
    ...req.rateLimit,
    link: `<http://${req.headers.host}/api/docs.jsonld>; rel="${DOCS_REL}",<http://${req.headers.host}/.well-known/mercure>; rel="mercure"`,
    vary: 'Accept, X-API-KEY',
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'deny',
    'cache-control': 'no-cache, private',
    'access-control-allow-origin': '*',
    'access-control-expose-headers': 'Link, Location, Content-Location, ETag, Accept-Patch, X-Request-Id',
    ...headers,
    ...(tags !== undefined ? { 'cache-tags': tags } : {}),
    'content-type': CONTENT_TYPE,
  };
  if (status === 200) out.etag = `"${createHash('md5').update(text).digest('hex')}"`;
  out['content-length'] = Buffer.byteLength(text);
  res.writeHead(status, out);
  res.end(text);
}

function fail(res, status) {
  res.writeHead(status, { 'content-type': 'text/plain' });
  res.end(http.STATUS_CODES[status]);
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

const iriId = (iri, prefix) =>
  typeof iri === 'string' && iri.startsWith(prefix) ? Number(iri.slice(prefix.length)) : undefined;

function createHandler(db) {
  /** The page's rows with their state's tax rate (`row.satz`): one query for the page's distinct states. */
  const withStates = async (rows) => {
    const ids = [...new Set(rows.map((row) => row.bundesland_id))];
    if (!ids.length) return rows;
    const states = await db.query(expandIn(dialect, SQL.states, ids.length), [...ids, ids.length, 0]);
    const rate = new Map(states.map((state) => [Number(state.id), state.grunderwerbsteuer_satz]));
    // Object.assign rather than a spread, as the service does: spreading a row costs about 3 µs
    // on Node 20, which would make the limit slower than it has to be.
    return rows.map((row) => Object.assign({}, row, { satz: rate.get(row.bundesland_id) }));
  };

  const principal = async (req) => {
    const key = req.headers['x-api-key'];
    if (typeof key !== 'string' || key === '') return undefined;
    const [row] = await db.query('auth', [createHash('sha256').update(key, 'utf8').digest('hex')]);
    return row;
  };

  const seesAll = (user) => user.role === 'admin' || user.role === 'moderator';
  // The page-only limit knows every total from the start and never counts while serving.
  const totals = PAGE_ONLY ? db.totals() : undefined;

  const getCollection = async (req, res) => {
    const user = await principal(req);
    if (!user) return fail(res, 401);
    const all = seesAll(user);
    const owner = all ? 0 : user.id;
    const page = (all ? db.query('pageAll', [PAGE_SIZE, 0]) : db.query('page', [user.id, PAGE_SIZE, 0])).then(
      withStates,
    );
    if (PAGE_ONLY) {
      const rows = await page;
      return send(req, res, 200, collection((await totals).get(owner) ?? 0, rows, ''), {}, immobilieTags(rows));
    }
    const [[counted], rows] = await Promise.all([db.query('counted', ['immobilie', owner]), page]);
    send(req, res, 200, collection(Number(counted?.total ?? 0), rows, ''), {}, immobilieTags(rows));
  };

  /** `?adresse=<term>&kaufpreis[gte]=<n>` in the owner's scope, with the capped count. */
  const getFiltered = async (req, res, query) => {
    const user = await principal(req);
    if (!user || seesAll(user)) return fail(res, user ? 400 : 401);
    const params = new URLSearchParams(query);
    const values = [user.id, containsPattern(dialect, params.get('adresse')), Number(params.get('kaufpreis[gte]'))];
    const [[{ total }], rows] = await Promise.all([
      db.query('cappedCount', [...values, COUNT_CAP + 1]),
      db.query('pageFiltered', [...values, PAGE_SIZE, 0]).then(withStates),
    ]);
    send(
      req,
      res,
      200,
      collection(Number(total) > COUNT_CAP ? undefined : Number(total), rows, query),
      {},
      immobilieTags(rows),
    );
  };

  const getBundesland = async (req, res, id) => {
    const [row] = await db.query('bundesland', [id]);
    if (!row) return fail(res, 404);
    const body = { '@context': '/api/contexts/Bundesland', '@id': `/api/bundeslands/${row.id}`, '@type': 'Bundesland' };
    Object.assign(body, { id: row.id, name: row.name, code: row.code });
    if (row.grunderwerbsteuer_satz !== null) body.grunderwerbsteuerSatz = Number(row.grunderwerbsteuer_satz);
    // Reference data is public (decision 0047): the same answer for every caller, kept by shared caches.
    send(
      req,
      res,
      200,
      body,
      {
        vary: 'Accept',
        'cache-control': `public, max-age=${HTTP_CACHE_MAX_AGE}, s-maxage=${HTTP_CACHE_SHARED_MAX_AGE}`,
        'content-location': `/api/bundeslands/${row.id}`,
        'accept-patch': 'application/merge-patch+json',
      },
      `/api/bundeslands/${row.id}`,
    );
  };

  const postImmobilie = async (req, res) => {
    const user = await principal(req);
    if (!user) return fail(res, 401);
    if (!/^application\/(ld\+)?json\b/.test(req.headers['content-type'] ?? '')) return fail(res, 415);
    const input = JSON.parse(await readBody(req));
    const bundesland = iriId(input.bundesland, '/api/bundeslands/');
    const heizungstyp = iriId(input.heizungstyp, '/api/heizungstyps/');
    const row = await db.transaction(async (query) => {
      if ((await query('bundeslandExists', [bundesland])).length === 0) return undefined;
      if (heizungstyp !== undefined && (await query('heizungstypExists', [heizungstyp])).length === 0) return undefined;
      const now = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString();
      const values = [
        user.id,
        input.adresse,
        input.wohnflaeche ?? null,
        input.nutzflaeche ?? null,
        input.zimmer ?? null,
        input.typ,
        input.kaufpreis ?? null,
        input.kaltmiete ?? null,
        bundesland,
        heizungstyp ?? null,
        now,
        now,
      ];
      const [{ id }] = await query('insert', values);
      const [created] = await query('immobilie', [id]);
      const [state] = await query('state', [created.bundesland_id, 1, 0]);
      return Object.assign({}, created, { satz: state?.grunderwerbsteuer_satz });
    });
    if (!row) return fail(res, 400);
    const iri = `/api/immobilies/${row.id}`;
    send(req, res, 201, immobilie(row, false), { location: iri, 'content-location': iri });
  };

  return (req, res) => {
    req.rateLimit = rateLimitHeaders(req);
    const item = /^\/api\/bundeslands\/([1-9]\d{0,9})$/.exec(req.url);
    let done;
    if (req.method === 'GET' && req.url === '/api/immobilies') done = getCollection(req, res);
    else if (req.method === 'GET' && req.url.startsWith('/api/immobilies?adresse='))
      done = getFiltered(req, res, req.url.slice('/api/immobilies?'.length));
    else if (req.method === 'POST' && req.url === '/api/immobilies') done = postImmobilie(req, res);
    else if (req.method === 'GET' && item) done = getBundesland(req, res, Number(item[1]));
    else return fail(res, 404);
    done.catch((err) => {
      console.error(err);
      if (!res.headersSent) fail(res, 500);
    });
  };
}

const url = process.env.BASELINE_DATABASE_URL ?? '';
const dialect = /^postgres(ql)?:\/\//.test(url) ? 'postgres' : 'sqlite';
// Used once at start by the page-only limit; never while serving.
const STARTUP = { ownerTotals: 'select verwalter_id as owner, count(*) as total from immobilie group by verwalter_id' };
const db =
  dialect === 'postgres'
    ? openPostgres(url, { ...sqlFor(dialect), ...STARTUP })
    : openSqlite(url.replace(/^sqlite:/, ''), { ...sqlFor(dialect), ...STARTUP });
const server = http.createServer(createHandler(db));
server.keepAliveTimeout = 72_000; // as the property server's Fastify setting, so Keep-Alive headers match
server.listen(Number(process.env.PORT ?? 3900), process.env.HOST ?? '127.0.0.1', () => {
  const { address, port } = server.address();
  process.stdout.write(`Property baseline: http://${address}:${port}/api (${dialect})\n`);
});
process.once('SIGTERM', () => process.exit(0));
