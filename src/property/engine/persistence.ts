import { sql, type Kysely, type RawBuilder } from 'kysely';
import { runCompiledOnce } from '../../platform/db/compiled-once.js';
import { dialectOf, forUpdate, isForeignKeyViolation, isUniqueViolation } from '../../platform/db/dialect.js';
import { ConflictError } from '../../platform/errors/app-error.js';
import type { Item, SearchStrategy } from './define.js';
import type { FieldMetadata, ResourceMetadata } from './registry.js';

/**
 * The generic Kysely provider and processor: every query the engine runs, written once for all
 * resources from their table and column metadata. No other engine file holds SQL.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tables are named by metadata, not by a compile-time schema
export type AnyDb = Kysely<any>;

/** What a condition or an ordering reads: a column, or `a / b` of two columns (null when b is 0). */
export interface ColumnRef {
  readonly column?: string;
  readonly ratio?: readonly [string, string];
}

/** Comparison operators of range and date filters. */
export type Comparison = '<' | '<=' | '>' | '>=';

/**
 * One condition of a collection query. `in` is equality with any of the values; `match` is a
 * SearchFilter strategy other than exact (values are the search terms, any of them may match);
 * `compare` is a range or date bound; `null` / `notNull` are the exists filter.
 */
export type Condition =
  | { readonly op: 'in'; readonly target: ColumnRef; readonly values: readonly unknown[] }
  | {
      readonly op: 'match';
      readonly target: ColumnRef;
      readonly strategy: Exclude<SearchStrategy, 'exact'>;
      readonly values: readonly string[];
    }
  | { readonly op: Comparison; readonly target: ColumnRef; readonly values: readonly [unknown] }
  | { readonly op: 'null' | 'notNull'; readonly target: ColumnRef; readonly values: readonly [] };

export interface OrderBy {
  readonly target: ColumnRef;
  readonly direction: 'asc' | 'desc';
  /** Nulls sort as the smallest values on both dialects (API Platform's `nulls_smallest`). */
  readonly nullable: boolean;
}

export interface ListQuery {
  readonly conditions: readonly Condition[];
  readonly order: readonly OrderBy[];
  readonly limit: number;
  readonly offset: number;
}

// Derived once per resource: these run on every query.
const storedCache = new WeakMap<ResourceMetadata, { fields: readonly FieldMetadata[]; columns: string[] }>();
function stored(resource: ResourceMetadata) {
  let s = storedCache.get(resource);
  if (!s) {
    const fields = resource.fields.filter((f) => f.stored);
    s = { fields, columns: fields.map((f) => f.column) };
    storedCache.set(resource, s);
  }
  return s;
}
const storedFields = (resource: ResourceMetadata) => stored(resource).fields;
const selection = (resource: ResourceMetadata) => stored(resource).columns;

export function rowToItem(resource: ResourceMetadata, row: Record<string, unknown>): Item {
  const item: Record<string, unknown> = {};
  for (const f of storedFields(resource)) {
    const v = row[f.column];
    item[f.name] = f.kind === 'boolean' && typeof v === 'number' ? v === 1 : v instanceof Date ? v.toISOString() : v;
  }
  return item as Item;
}

/** SQL of a column reference; a ratio is `a / nullif(b, 0)`, so that no dialect divides by zero. */
function expression(target: ColumnRef): RawBuilder<unknown> {
  if (target.ratio) return sql`(${sql.ref(target.ratio[0])} / nullif(${sql.ref(target.ratio[1])}, 0))`;
  return sql.ref(target.column as string);
}

/** `*`, `?` and `[` are GLOB wildcards; in brackets they are literal. */
const globLiteral = (c: string): string => (c === '*' || c === '?' || c === '[' ? `[${c}]` : c);

/** A GLOB class holding every single-character case form of `c`: `ü` → `[üÜ]`. */
function caseClass(c: string): string {
  const forms = new Set([c, c.toLowerCase(), c.toUpperCase()].filter((x) => [...x].length === 1));
  return forms.size > 1 ? `[${[...forms].join('')}]` : globLiteral(c);
}

const likeLiteral = (s: string): string => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * The patterns of a search strategy. Case-sensitive matching must be the same on both dialects,
 * and SQLite's LIKE ignores ASCII case while PostgreSQL's does not, so SQLite matches with GLOB
 * (case-sensitive; case-insensitive through a class of both cases per letter, which covers
 * non-ASCII letters too) and PostgreSQL with LIKE on the column or on `lower(column)`.
 */
function patterns(dialect: 'sqlite' | 'postgres', strategy: Exclude<SearchStrategy, 'exact'>, term: string): string[] {
  const caseless = strategy.startsWith('i');
  const base = caseless ? strategy.slice(1) : strategy;
  const literal = dialect === 'sqlite' ? [...term].map(caseless ? caseClass : globLiteral).join('') : likeLiteral(term);
  const any = dialect === 'sqlite' ? '*' : '%';
  switch (base) {
    case 'exact':
      return [literal];
    case 'partial':
      return [`${any}${literal}${any}`];
    case 'start':
      return [`${literal}${any}`];
    case 'end':
      return [`${any}${literal}`];
    default:
      // word_start: at the start of the value or after a space, as API Platform's SearchFilter.
      return [`${literal}${any}`, `${any} ${literal}${any}`];
  }
}

/**
 * The parameters of a condition, in the order its SQL takes them. Prepared queries run again with
 * only these, so they are computed without building the SQL; `conditionSql` binds the same list.
 */
function conditionParameters(dialect: 'sqlite' | 'postgres', c: Condition): unknown[] {
  switch (c.op) {
    case 'in':
      return [...c.values];
    case 'null':
    case 'notNull':
      return [];
    case 'match':
      return c.values.flatMap((term) => patterns(dialect, c.strategy, term));
    default:
      return [c.values[0]];
  }
}

/** The condition as SQL, binding `conditionParameters` in order. */
function conditionSql(dialect: 'sqlite' | 'postgres', c: Condition): RawBuilder<unknown> {
  const col = expression(c.target);
  const parameters = conditionParameters(dialect, c);
  switch (c.op) {
    case 'in':
      if (parameters.length === 1) return sql`${col} = ${parameters[0]}`;
      return sql`${col} in (${sql.join(parameters.map((v) => sql`${v}`))})`;
    case 'null':
      return sql`${col} is null`;
    case 'notNull':
      return sql`${col} is not null`;
    case 'match': {
      const caseless = c.strategy.startsWith('i');
      const one = (p: unknown) =>
        dialect === 'sqlite'
          ? sql`${col} glob ${p}`
          : caseless
            ? sql`lower(${col}) like lower(${p})`
            : sql`${col} like ${p}`;
      return sql`(${sql.join(parameters.map(one), sql` or `)})`;
    }
    default:
      return sql`${col} ${sql.raw(c.op)} ${parameters[0]}`;
  }
}

function applyConditions<QB extends { where: (...args: never[]) => QB }>(
  qb: QB,
  dialect: 'sqlite' | 'postgres',
  conditions: readonly Condition[],
): QB {
  if (conditions.length === 0) return qb;
  const w = sql.join(
    conditions.map((c) => conditionSql(dialect, c)),
    sql` and `,
  );
  return (qb.where as unknown as (e: unknown) => QB).call(qb, w);
}

const refKey = (t: ColumnRef): string => (t.ratio ? `${t.ratio[0]}/${t.ratio[1]}` : (t.column as string));

/** The shape of a condition list, for prepared-query keys: operators, columns and how many values each. */
function shapeOf(conditions: readonly Condition[]): string {
  return conditions
    .map((c) => `${refKey(c.target)}${c.op}${c.op === 'match' ? c.strategy : ''}:${c.values.length}`)
    .join(',');
}

const valuesOf = (dialect: 'sqlite' | 'postgres', conditions: readonly Condition[]): unknown[] =>
  conditions.flatMap((c) => conditionParameters(dialect, c));

/** One item by id within `scope`; `lock` holds the row for the rest of the transaction (FOR UPDATE on PostgreSQL). */
export async function findItem(
  db: AnyDb,
  resource: ResourceMetadata,
  id: number,
  scope: readonly Condition[],
  lock = false,
): Promise<Item | undefined> {
  const dialect = dialectOf(db);
  const rows = await runCompiledOnce<Record<string, unknown>>(
    db,
    `find:${resource.table}:${shapeOf(scope)}${lock ? ':lock' : ''}`,
    [id, ...valuesOf(dialect, scope)],
    () => {
      const qb = applyConditions(
        db.selectFrom(resource.table).select(selection(resource)).where(resource.idField.column, '=', id),
        dialect,
        scope,
      );
      return lock ? forUpdate(qb, dialect) : qb;
    },
  );
  return rows[0] ? rowToItem(resource, rows[0]) : undefined;
}

const orderKey = (order: readonly OrderBy[]): string =>
  order.map((o) => `${refKey(o.target)} ${o.direction}${o.nullable ? ' n' : ''}`).join(',');

export async function listItems(db: AnyDb, resource: ResourceMetadata, query: ListQuery): Promise<Item[]> {
  if (query.conditions.some((c) => c.op === 'in' && c.values.length === 0)) return [];
  const dialect = dialectOf(db);
  const key = `list:${resource.table}:${shapeOf(query.conditions)}:${orderKey(query.order)}`;
  const rows = await runCompiledOnce<Record<string, unknown>>(
    db,
    key,
    [...valuesOf(dialect, query.conditions), query.limit, query.offset],
    () => {
      let qb = applyConditions(db.selectFrom(resource.table).select(selection(resource)), dialect, query.conditions);
      for (const o of query.order) {
        const by = o.target.ratio ? expression(o.target) : (o.target.column as string);
        // Nulls as the smallest values: first when ascending, last when descending, on both dialects.
        qb = o.nullable
          ? qb.orderBy(by, (ob) => (o.direction === 'asc' ? ob.asc().nullsFirst() : ob.desc().nullsLast()))
          : qb.orderBy(by, o.direction);
      }
      return qb.limit(query.limit).offset(query.offset);
    },
  );
  return rows.map((row) => rowToItem(resource, row));
}

/** The table of counts the database keeps for `countedBy` resources (migration 0003). */
export const COUNTS_TABLE = 'collection_counts';
/** The `owner_id` of the row that counts the whole table. */
const WHOLE_TABLE = 0;

/**
 * Whether the count of these conditions is kept by the database: no condition (the whole table)
 * or equality with one owner (the scope of an account, or the subresource of a user).
 */
function maintainedCountKey(resource: ResourceMetadata, conditions: readonly Condition[]): number | undefined {
  if (!resource.countedBy) return undefined;
  if (conditions.length === 0) return WHOLE_TABLE;
  const [only] = conditions;
  if (
    conditions.length === 1 &&
    only?.op === 'in' &&
    only.values.length === 1 &&
    only.target.column === resource.countedBy.column &&
    typeof only.values[0] === 'number'
  ) {
    return only.values[0];
  }
  return undefined;
}

/**
 * `hydra:totalItems`. Exact and constant-cost where the database maintains the count; otherwise
 * `count(*)` over at most `cap + 1` matching rows when a cap is given (the caller treats a result
 * above `cap` as "more than cap"), or a plain `count(*)`.
 */
export async function countItems(
  db: AnyDb,
  resource: ResourceMetadata,
  conditions: readonly Condition[],
  cap?: number,
): Promise<number> {
  if (conditions.some((c) => c.op === 'in' && c.values.length === 0)) return 0;
  const owner = maintainedCountKey(resource, conditions);
  if (owner !== undefined) {
    const rows = await runCompiledOnce<{ total: number | string }>(
      db,
      `counted:${resource.table}`,
      [resource.table, owner],
      () =>
        db
          .selectFrom(COUNTS_TABLE)
          .select('total')
          .where('resource_table', '=', resource.table)
          .where('owner_id', '=', owner),
    );
    return Number(rows[0]?.total ?? 0);
  }
  const dialect = dialectOf(db);
  if (cap !== undefined) {
    const rows = await runCompiledOnce<{ total: number | string }>(
      db,
      `capped:${resource.table}:${shapeOf(conditions)}`,
      [...valuesOf(dialect, conditions), cap + 1],
      () =>
        db
          .selectFrom(
            applyConditions(db.selectFrom(resource.table).select(sql.lit(1).as('one')), dialect, conditions)
              .limit(cap + 1)
              .as('matching'),
          )
          .select(sql<number>`count(*)`.as('total')),
    );
    return Number(rows[0]?.total ?? 0);
  }
  const rows = await runCompiledOnce<{ total: number | string }>(
    db,
    `count:${resource.table}:${shapeOf(conditions)}`,
    valuesOf(dialect, conditions),
    () => applyConditions(db.selectFrom(resource.table).select(sql<number>`count(*)`.as('total')), dialect, conditions),
  );
  return Number(rows[0]?.total ?? 0);
}

/** Which of `ids` exist in `resource`'s table. */
export async function existingIds(db: AnyDb, resource: ResourceMetadata, ids: readonly number[]): Promise<Set<number>> {
  if (ids.length === 0) return new Set();
  const rows = await db
    .selectFrom(resource.table)
    .select(resource.idField.column)
    .where(resource.idField.column, 'in', ids)
    .execute();
  return new Set(rows.map((r) => Number(r[resource.idField.column])));
}

/** Whether another row (not `exceptId`) already holds `value` in the column of a unique field. */
export async function valueTaken(
  db: AnyDb,
  resource: ResourceMetadata,
  field: FieldMetadata,
  value: unknown,
  exceptId: number | undefined,
): Promise<boolean> {
  let qb =
    field.unique === 'ignoreCase' && typeof value === 'string'
      ? db
          .selectFrom(resource.table)
          .select(resource.idField.column)
          .where(sql`lower(${sql.ref(field.column)})`, '=', sql`lower(${value})`)
      : db.selectFrom(resource.table).select(resource.idField.column).where(field.column, '=', value);
  if (exceptId !== undefined) qb = qb.where(resource.idField.column, '<>', exceptId);
  return (await qb.limit(1).executeTakeFirst()) !== undefined;
}

/** Now, to the second (as API Platform's DateTime columns keep it), for engine-managed timestamps. */
const now = (): string => new Date(Math.floor(Date.now() / 1000) * 1000).toISOString();

function toColumns(
  resource: ResourceMetadata,
  values: Readonly<Record<string, unknown>>,
  extra: Readonly<Record<string, unknown>> = {},
  write?: 'insert' | 'update',
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...extra };
  const at = write ? now() : undefined;
  for (const f of storedFields(resource)) {
    if (f.managed && write && (write === 'insert' || f.managed === 'updated')) {
      out[f.column] = at;
      continue;
    }
    if (f.kind === 'id' || !(f.name in values)) continue;
    const v = values[f.name];
    out[f.column] = v === undefined ? null : v;
  }
  return out;
}

/** Thrown when a unique column clashes at write time (a race the pre-check could not see). */
export class UniqueClashError extends Error {}

export async function insertItem(
  db: AnyDb,
  resource: ResourceMetadata,
  values: Readonly<Record<string, unknown>>,
  extraColumns?: Readonly<Record<string, unknown>>,
): Promise<number> {
  try {
    const row = await db
      .insertInto(resource.table)
      .values(toColumns(resource, values, extraColumns, 'insert'))
      .returning(resource.idField.column)
      .executeTakeFirstOrThrow();
    return Number(row[resource.idField.column]);
  } catch (err) {
    throw translateWriteError(err);
  }
}

/** Whether the row was there to update (a concurrent delete may have removed it). */
export async function updateItem(
  db: AnyDb,
  resource: ResourceMetadata,
  id: number,
  values: Readonly<Record<string, unknown>>,
  extraColumns?: Readonly<Record<string, unknown>>,
): Promise<boolean> {
  const columns = toColumns(resource, values, extraColumns, 'update');
  try {
    if (Object.keys(columns).length === 0) return (await existingIds(db, resource, [id])).has(id);
    const result = await db
      .updateTable(resource.table)
      .set(columns)
      .where(resource.idField.column, '=', id)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  } catch (err) {
    throw translateWriteError(err);
  }
}

/** Whether the row was there to delete: of two concurrent deletes, only one finds it. */
export async function deleteItem(db: AnyDb, resource: ResourceMetadata, id: number): Promise<boolean> {
  try {
    const result = await db.deleteFrom(resource.table).where(resource.idField.column, '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  } catch (err) {
    if (isForeignKeyViolation(err)) {
      throw new ConflictError(
        `This ${resource.shortName} is still referenced by other resources and cannot be deleted.`,
        { code: 'STILL_REFERENCED' },
      );
    }
    throw err;
  }
}

function translateWriteError(err: unknown): unknown {
  if (isUniqueViolation(err)) return new UniqueClashError('unique clash', { cause: err });
  if (isForeignKeyViolation(err))
    return new ConflictError('A referenced resource was deleted concurrently; retry the request.', {
      code: 'REFERENCE_GONE',
    });
  return err;
}
