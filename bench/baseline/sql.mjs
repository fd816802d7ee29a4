/**
 * The statements the property server issues per benchmark request, in its order. Each step is a
 * list of statements that run in parallel. Written by hand from persistence.ts, operations.ts and
 * api-key.repository.ts; bench/check.mjs compares them with what the built server really runs.
 */

const IMMOBILIE_COLUMNS = '"id", "verwalter_id", "adresse", "wohnflaeche", "nutzflaeche", "zimmer", "typ", "kaufpreis", "bundesland_id", "heizungstyp_id"';

export const SQL = {
  auth: 'select "id", "role" from "users" where "api_key_hash" = ?',
  count: 'select count(*) as "total" from "immobilie" where "verwalter_id" = ?',
  page: `select ${IMMOBILIE_COLUMNS} from "immobilie" where "verwalter_id" = ? order by "id" asc limit ? offset ?`,
  bundesland: 'select "id", "name", "code" from "bundesland" where "id" = ?',
  begin: 'begin',
  bundeslandExists: 'select "id" from "bundesland" where "id" in (?)',
  heizungstypExists: 'select "id" from "heizungstyp" where "id" in (?)',
  insert: `insert into "immobilie" ("verwalter_id", "adresse", "wohnflaeche", "nutzflaeche", "zimmer", "typ", "kaufpreis", "bundesland_id", "heizungstyp_id") values (?, ?, ?, ?, ?, ?, ?, ?, ?) returning "id"`,
  immobilie: `select ${IMMOBILIE_COLUMNS} from "immobilie" where "id" = ?`,
  commit: 'commit',
};

/** Per scenario: the steps of one request (a POST naming both a Bundesland and a Heizungstyp). */
export const PLAN = {
  collection: [['auth'], ['count', 'page']],
  item: [['bundesland']],
  post: [['auth'], ['begin'], ['bundeslandExists'], ['heizungstypExists'], ['insert'], ['immobilie'], ['commit']],
};

/** The statements in a dialect's placeholder syntax: `?` for SQLite, `$1, $2, …` for PostgreSQL. */
export function sqlFor(dialect) {
  if (dialect === 'sqlite') return SQL;
  const numbered = (text) => {
    let n = 0;
    return text.replace(/\?/g, () => `$${++n}`);
  };
  return Object.fromEntries(Object.entries(SQL).map(([name, text]) => [name, numbered(text)]));
}
