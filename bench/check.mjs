import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import Sqlite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { comparable, PLAN, sqlFor } from './baseline/sql.mjs';

/**
 * Guards that make the comparison fair, run before each scenario is measured: the baseline issues
 * the statements the property server issues, and both answer with the same bytes.
 */

export function loggingKysely(dialect, url, log) {
  if (dialect === 'sqlite')
    return new Kysely({ dialect: new SqliteDialect({ database: new Sqlite(url.replace(/^sqlite:/, '')) }), log });
  const u = new URL(url);
  const schema = u.searchParams.get('schema');
  u.searchParams.delete('schema');
  const pool = new pg.Pool({
    connectionString: u.toString(),
    max: 10,
    ...(schema ? { options: `-c search_path="${schema}"` } : {}),
  });
  return new Kysely({ dialect: new PostgresDialect({ pool }), log });
}

/**
 * Runs the scenario's request through the built property app (the `app.js` beside the server's
 * `main.js`) on a Kysely that logs every statement, without touching the server's code, and
 * compares what it ran with PLAN.
 */
export async function checkSql({ main, dialect, url, env, scenario, request }) {
  const load = (file) => import(pathToFileURL(path.join(path.dirname(main), file)).href);
  const [{ buildPropertyApp }, { loadConfig }, { propertyConfigSpec }] = await Promise.all([
    load('app.js'),
    load('../platform/config/config.js'),
    load('property.config.js'),
  ]);
  const issued = [];
  const db = loggingKysely(dialect, url, (event) => issued.push(event.query.sql));
  const app = await buildPropertyApp({
    config: loadConfig(propertyConfigSpec, env),
    // The Mercure hub's signal is not SQL the scenario runs: a no-op here (issue 31).
    database: {
      db,
      dialect,
      description: 'bench',
      ping: async () => {},
      destroy: () => db.destroy(),
      notifyIn: async () => {},
      listen: async () => async () => {},
    },
  });
  try {
    const res = await app.inject({
      method: request.method,
      url: request.path,
      headers: request.headers,
      payload: request.body,
    });
    if (res.statusCode >= 300) throw new Error(`${scenario}: the property app answered ${res.statusCode}: ${res.body}`);
  } finally {
    await app.close();
    await db.destroy();
  }
  // Statements of one parallel step are logged as they finish, so a step is compared as a set.
  const sql = sqlFor(dialect);
  const expected = PLAN[scenario].map((step) => step.map((name) => sql[name]));
  let at = 0;
  const got = expected.map((step) => issued.slice(at, (at += step.length)));
  const sorted = (step) => JSON.stringify(step.map(comparable).sort());
  if (at !== issued.length || got.some((step, i) => sorted(step) !== sorted(expected[i]))) {
    throw new Error(
      `${dialect} ${scenario}: the server's SQL differs from the baseline's.\nserver:\n  ${issued.join('\n  ')}\nbaseline:\n  ${expected.flat().join('\n  ')}`,
    );
  }
}

/** One request over a keep-alive connection (as autocannon sends it); raw headers in order. */
export function fetchRaw(port, { method, path, headers, body }) {
  const agent = new http.Agent({ keepAlive: true });
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers, agent }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        agent.destroy();
        const pairs = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2)
          pairs.push([res.rawHeaders[i].toLowerCase(), res.rawHeaders[i + 1]]);
        resolve({ status: res.statusCode, headers: pairs, body: Buffer.concat(chunks).toString('utf8') });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * What may legitimately differ: the date, the request id, the seconds to the rate-limit window's
 * end, and the id and timestamps (the second it was written) of what a POST created.
 */
function normalized(response) {
  const created = /^\/api\/immobilies\/(\d+)$/.exec(
    response.headers.find(([name]) => name === 'location')?.[1] ?? '',
  )?.[1];
  const unid = (text) =>
    created
      ? text
          .replaceAll(`/api/immobilies/${created}`, '/api/immobilies/ID')
          .replaceAll(`"id":${created},`, '"id":ID,')
          .replace(/"(createdAt|updatedAt)":"[^"]*"/g, '"$1":"(time)"')
      : text;
  const headers = response.headers.map(([name, value]) => {
    if (name === 'date') return [name, '(date)'];
    if (name === 'ratelimit-reset') return [name, /^[1-9]\d*$/.test(value) ? '(seconds)' : value];
    if (name === 'x-request-id') return [name, UUID.test(value) ? '(uuid)' : value];
    return [name, unid(value)];
  });
  return { status: response.status, headers: headers.map((h) => h.join(': ')).join('\n'), body: unid(response.body) };
}

/** `serve(kind, fn)` starts that server, calls fn(port) and stops it again. */
export async function checkBytes({ name, serve, request }) {
  const ours = normalized(await serve('ours', (port) => fetchRaw(port, request)));
  const limit = normalized(await serve('baseline', (port) => fetchRaw(port, request)));
  for (const part of ['status', 'headers', 'body']) {
    if (ours[part] === limit[part]) continue;
    let i = 0;
    while (String(ours[part])[i] === String(limit[part])[i]) i++;
    const around = (s) => JSON.stringify(String(s).slice(Math.max(0, i - 60), i + 60));
    throw new Error(
      `${name}: the baseline's ${part} differs from the server's at offset ${i}:\n  server:   ${around(ours[part])}\n  baseline: ${around(limit[part])}`,
    );
  }
  return Buffer.byteLength(ours.body);
}
