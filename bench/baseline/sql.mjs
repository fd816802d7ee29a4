/**
 * The statements the property server issues per benchmark request, in its order. Each step is a
 * list of statements that run in parallel. Written by hand from persistence.ts, operations.ts and
 * api-key.repository.ts; bench/check.mjs compares them with what the built server really runs.
 */

const IMMOBILIE_COLUMNS =
  '"id", "verwalter_id", "adresse", "wohnflaeche", "nutzflaeche", "zimmer", "typ", "kaufpreis", "kaltmiete", "bundesland_id", "heizungstyp_id", "created_at", "updated_at"';

export const SQL = {
  auth: 'select "id", "role" from "users" where "api_key_hash" = ?',
  /** The total the database maintains (migration 0004): one row per owner, owner 0 = all. */
  counted: 'select "total" from "collection_counts" where "resource_table" = ? and "owner_id" = ?',
  page: `select ${IMMOBILIE_COLUMNS} from "immobilie" where "verwalter_id" = ? order by "id" asc limit ? offset ?`,
  pageAll: `select ${IMMOBILIE_COLUMNS} from "immobilie" order by "id" asc limit ? offset ?`,
  /** `?adresse=leipzig&kaufpreis[gte]=…` inside the owner scope: count capped at PROPERTY_COUNT_CAP + 1. */
  cappedCount:
    'select count(*) as "total" from (select 1 as "one" from "immobilie" where "verwalter_id" = ? and ("adresse" glob ?) and "kaufpreis" >= ? limit ?) as "matching"',
  pageFiltered: `select ${IMMOBILIE_COLUMNS} from "immobilie" where "verwalter_id" = ? and ("adresse" glob ?) and "kaufpreis" >= ? order by "id" asc limit ? offset ?`,
  bundesland: 'select "id", "name", "code", "grunderwerbsteuer_satz" from "bundesland" where "id" = ?',
  /**
   * The states of a page's properties, for their computed costs (immobilie.provider.ts, one query
   * per page): `(?…)` stands for one placeholder per distinct state id (`expandIn`).
   */
  states:
    'select "id", "name", "code", "grunderwerbsteuer_satz" from "bundesland" where "id" in (?…) order by "id" asc limit ? offset ?',
  /** The state of one created property, for its computed costs (the provider's query for a single id). */
  state:
    'select "id", "name", "code", "grunderwerbsteuer_satz" from "bundesland" where "id" = ? order by "id" asc limit ? offset ?',
  begin: 'begin',
  bundeslandExists: 'select "id" from "bundesland" where "id" in (?)',
  heizungstypExists: 'select "id" from "heizungstyp" where "id" in (?)',
  insert: `insert into "immobilie" ("verwalter_id", "adresse", "wohnflaeche", "nutzflaeche", "zimmer", "typ", "kaufpreis", "kaltmiete", "bundesland_id", "heizungstyp_id", "created_at", "updated_at") values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) returning "id"`,
  immobilie: `select ${IMMOBILIE_COLUMNS} from "immobilie" where "id" = ?`,
  commit: 'commit',
};

/** PostgreSQL matches the case-insensitive search with LIKE on lower() (persistence.ts explains why). */
const POSTGRES_OVERRIDES = {
  cappedCount: SQL.cappedCount.replace('("adresse" glob ?)', '(lower("adresse") like lower(?))'),
  pageFiltered: SQL.pageFiltered.replace('("adresse" glob ?)', '(lower("adresse") like lower(?))'),
};

/**
 * Per scenario: the steps of one request (a POST naming both a Bundesland and a Heizungstyp).
 * `*PageOnly` are the limits of the scale scenarios: the page alone, without any count.
 */
export const PLAN = {
  collection: [['auth'], ['counted', 'page'], ['states']],
  collectionAdmin: [['auth'], ['counted', 'pageAll'], ['states']],
  filtered: [['auth'], ['cappedCount', 'pageFiltered'], ['states']],
  item: [['bundesland']],
  post: [
    ['auth'],
    ['begin'],
    ['bundeslandExists'],
    ['heizungstypExists'],
    ['insert'],
    ['immobilie'],
    ['state'],
    ['commit'],
  ],
};

/** The statements in a dialect's placeholder syntax: `?` for SQLite, `$1, $2, …` for PostgreSQL. */
export function sqlFor(dialect) {
  if (dialect === 'sqlite') return SQL;
  return Object.fromEntries(
    Object.entries({ ...SQL, ...POSTGRES_OVERRIDES }).map(([name, text]) => [name, numbered(text)]),
  );
}

/** `?` → `$1, $2, …` (PostgreSQL); a `(?…)` list is left for `expandIn`. */
function numbered(text) {
  let n = 0;
  return text.replace(/\?(?!…)/g, () => `$${++n}`);
}

/** A statement with a `(?…)` list made of `count` placeholders, in the dialect's syntax. */
export function expandIn(dialect, text, count) {
  const expanded = text
    .replace('(?…)', `(${Array.from({ length: count }, () => '?').join(', ')})`)
    .replace(/\$\d+/g, '?');
  return dialect === 'sqlite' ? expanded : numbered(expanded);
}

/** A statement as the fairness check compares it: placeholders as `?`, IN lists as `(?…)`. */
export function comparable(text) {
  return text.replace(/\$\d+/g, '?').replace(/in \(\?(?:, \?)*\)/g, 'in (?…)');
}
