import { sql, type Kysely } from 'kysely';
import { preparedRows } from '../../platform/db/prepared.js';
import { dialectOf, forUpdate, isForeignKeyViolation, isUniqueViolation } from '../../platform/db/dialect.js';
import { ConflictError } from '../../platform/errors/app-error.js';
import type { Item } from './define.js';
import type { FieldMetadata, ResourceMetadata } from './registry.js';

/**
 * The generic Kysely provider and processor: every query the engine runs, written once for all
 * resources from their table and column metadata. No other engine file holds SQL.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tables are named by metadata, not by a compile-time schema
export type AnyDb = Kysely<any>;

export interface Condition {
  readonly field: FieldMetadata;
  readonly values: readonly unknown[];
}

export interface OrderBy {
  readonly field: FieldMetadata;
  readonly direction: 'asc' | 'desc';
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
    item[f.name] = f.kind === 'boolean' && typeof v === 'number' ? v === 1 : v;
  }
  return item as Item;
}

function applyConditions<QB extends { where: (...args: never[]) => QB }>(qb: QB, conditions: readonly Condition[]): QB {
  let out = qb;
  for (const c of conditions) {
    const where = out.where as unknown as (col: string, op: string, value: unknown) => QB;
    out = c.values.length === 1 ? where.call(out, c.field.column, '=', c.values[0]) : where.call(out, c.field.column, 'in', c.values);
  }
  return out;
}

/** The shape of a condition list, for prepared-query keys: columns and how many values each. */
function shapeOf(conditions: readonly Condition[]): string {
  return conditions.map((c) => `${c.field.column}:${c.values.length}`).join(',');
}

const valuesOf = (conditions: readonly Condition[]): unknown[] => conditions.flatMap((c) => c.values);

/** One item by id within `scope`; `lock` holds the row for the rest of the transaction (FOR UPDATE on PostgreSQL). */
export async function findItem(db: AnyDb, resource: ResourceMetadata, id: number, scope: readonly Condition[], lock = false): Promise<Item | undefined> {
  const rows = await preparedRows<Record<string, unknown>>(db, `find:${resource.table}:${shapeOf(scope)}${lock ? ':lock' : ''}`, [id, ...valuesOf(scope)], () => {
    const qb = applyConditions(db.selectFrom(resource.table).select(selection(resource)).where(resource.idField.column, '=', id), scope);
    return lock ? forUpdate(qb, dialectOf(db)) : qb;
  });
  return rows[0] ? rowToItem(resource, rows[0]) : undefined;
}

export async function listItems(db: AnyDb, resource: ResourceMetadata, query: ListQuery): Promise<Item[]> {
  if (query.conditions.some((c) => c.values.length === 0)) return [];
  const key = `list:${resource.table}:${shapeOf(query.conditions)}:${query.order.map((o) => `${o.field.column} ${o.direction}`).join(',')}`;
  const rows = await preparedRows<Record<string, unknown>>(db, key, [...valuesOf(query.conditions), query.limit, query.offset], () => {
    let qb = applyConditions(db.selectFrom(resource.table).select(selection(resource)), query.conditions);
    for (const o of query.order) qb = qb.orderBy(o.field.column, o.direction);
    return qb.limit(query.limit).offset(query.offset);
  });
  return rows.map((row) => rowToItem(resource, row));
}

export async function countItems(db: AnyDb, resource: ResourceMetadata, conditions: readonly Condition[]): Promise<number> {
  if (conditions.some((c) => c.values.length === 0)) return 0;
  const rows = await preparedRows<{ total: number }>(db, `count:${resource.table}:${shapeOf(conditions)}`, valuesOf(conditions), () =>
    applyConditions(db.selectFrom(resource.table).select(sql<number>`count(*)`.as('total')), conditions),
  );
  return Number(rows[0]?.total ?? 0);
}

/** Which of `ids` exist in `resource`'s table. */
export async function existingIds(db: AnyDb, resource: ResourceMetadata, ids: readonly number[]): Promise<Set<number>> {
  if (ids.length === 0) return new Set();
  const rows = await db.selectFrom(resource.table).select(resource.idField.column).where(resource.idField.column, 'in', ids).execute();
  return new Set(rows.map((r) => Number(r[resource.idField.column])));
}

/** Whether another row (not `exceptId`) already holds `value` in the column of a unique field. */
export async function valueTaken(db: AnyDb, resource: ResourceMetadata, field: FieldMetadata, value: unknown, exceptId: number | undefined): Promise<boolean> {
  let qb =
    field.unique === 'ignoreCase' && typeof value === 'string'
      ? db.selectFrom(resource.table).select(resource.idField.column).where(sql`lower(${sql.ref(field.column)})`, '=', sql`lower(${value})`)
      : db.selectFrom(resource.table).select(resource.idField.column).where(field.column, '=', value);
  if (exceptId !== undefined) qb = qb.where(resource.idField.column, '<>', exceptId);
  return (await qb.limit(1).executeTakeFirst()) !== undefined;
}

function toColumns(resource: ResourceMetadata, values: Readonly<Record<string, unknown>>, extra: Readonly<Record<string, unknown>> = {}): Record<string, unknown> {
  const out: Record<string, unknown> = { ...extra };
  for (const f of storedFields(resource)) {
    if (f.kind === 'id' || !(f.name in values)) continue;
    const v = values[f.name];
    out[f.column] = v === undefined ? null : v;
  }
  return out;
}

/** Thrown when a unique column clashes at write time (a race the pre-check could not see). */
export class UniqueClashError extends Error {}

export async function insertItem(db: AnyDb, resource: ResourceMetadata, values: Readonly<Record<string, unknown>>, extraColumns?: Readonly<Record<string, unknown>>): Promise<number> {
  try {
    const row = await db.insertInto(resource.table).values(toColumns(resource, values, extraColumns)).returning(resource.idField.column).executeTakeFirstOrThrow();
    return Number(row[resource.idField.column]);
  } catch (err) {
    throw translateWriteError(err);
  }
}

/** Whether the row was there to update (a concurrent delete may have removed it). */
export async function updateItem(db: AnyDb, resource: ResourceMetadata, id: number, values: Readonly<Record<string, unknown>>, extraColumns?: Readonly<Record<string, unknown>>): Promise<boolean> {
  const columns = toColumns(resource, values, extraColumns);
  try {
    if (Object.keys(columns).length === 0) return (await existingIds(db, resource, [id])).has(id);
    const result = await db.updateTable(resource.table).set(columns).where(resource.idField.column, '=', id).executeTakeFirst();
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
      throw new ConflictError(`This ${resource.shortName} is still referenced by other resources and cannot be deleted.`, { code: 'STILL_REFERENCED' });
    }
    throw err;
  }
}

function translateWriteError(err: unknown): unknown {
  if (isUniqueViolation(err)) return new UniqueClashError('unique clash', { cause: err });
  if (isForeignKeyViolation(err)) return new ConflictError('A referenced resource was deleted concurrently; retry the request.', { code: 'REFERENCE_GONE' });
  return err;
}
