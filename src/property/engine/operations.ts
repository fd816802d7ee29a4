import { ForbiddenError, NotFoundError, UnauthenticatedError } from '../../platform/errors/app-error.js';
import type { Item, OperationContext, OperationDefinition, OperationName, PersistInput, Principal } from './define.js';
import { denormalize } from './denormalizer.js';
import { BadRequestError, ConstraintViolationError, violation } from './errors.js';
import { parseId, resolveIri } from './iri.js';
import { countItems, deleteItem, findItem, insertItem, listItems, updateItem, UniqueClashError, type AnyDb, type Condition, type OrderBy } from './persistence.js';
import { listValues, type Query, type QueryValue } from './query.js';
import type { FieldMetadata, Registry, ResourceMetadata } from './registry.js';

/**
 * The operations of every resource, free of HTTP: providers (read) and processors (write) in API
 * Platform's sense. The HTTP adapter (routes.ts), the command line and tests all call these.
 */

export interface PaginationOptions {
  readonly pageParameter: string;
  readonly itemsPerPageParameter: string;
  readonly defaultItemsPerPage: number;
  readonly maximumItemsPerPage: number;
}

export interface EngineOptions {
  readonly registry: Registry;
  readonly db: AnyDb;
  readonly pagination: PaginationOptions;
  /** Handed to every hook as `ctx.settings` (the service's cost percentages and the like). */
  readonly settings?: Readonly<Record<string, unknown>>;
}

/**
 * A conditional request's check (If-Match), run on the current item inside the write's
 * transaction, after the item was loaded and completed by its provider: it throws to refuse.
 */
export type Precondition = (current: Item) => void;

export interface CollectionResult {
  readonly items: Item[];
  readonly totalItems: number;
  readonly page: number;
  readonly itemsPerPage: number;
}

const MAX_PAGE = 2_147_483_647;

const DROP = Symbol('drop');
const NO_MATCH = Symbol('no match');

/**
 * A query-string value as the column's type. A value no stored row can hold (not a choice of an
 * enum, a string the database cannot store) matches nothing and is never sent to the database; a
 * value that is not of the column's type at all is dropped.
 */
function filterValue(field: FieldMetadata, value: string): unknown {
  switch (field.kind) {
    case 'enum':
      return field.values?.includes(value) ? value : NO_MATCH;
    case 'integer':
    case 'id':
      return /^-?\d{1,15}$/.test(value) ? Number(value) : DROP;
    case 'number':
      return value.trim() !== '' && Number.isFinite(Number(value)) ? Number(value) : DROP;
    case 'boolean':
      return value === 'true' || value === '1' ? true : value === 'false' || value === '0' ? false : DROP;
    default:
      return value.includes('\u0000') || !(value as unknown as { isWellFormed(): boolean }).isWellFormed() ? NO_MATCH : value;
  }
}

/** PHP's `(int)` cast of a query value, which API Platform applies to page numbers. */
function phpInt(value: QueryValue | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') return 0;
  const m = /^\s*([+-]?\d+)/.exec(value);
  if (!m) return 0;
  const n = Number(m[1]);
  return Number.isFinite(n) ? n : 0;
}

export function createEngine(options: EngineOptions) {
  const { registry, db, pagination } = options;
  const settings = options.settings ?? {};

  const authorize = (resource: ResourceMetadata, operation: OperationName, principal: Principal | null) => {
    const op = resource.operations.get(operation);
    if (!op) throw new NotFoundError();
    if (!op.security(principal)) {
      if (principal === null) throw new UnauthenticatedError('Full authentication is required to access this resource.');
      throw new ForbiddenError('Access Denied.');
    }
    return op;
  };

  const scopeConditions = (resource: ResourceMetadata, principal: Principal | null): Condition[] => {
    const scope = resource.scope?.(principal);
    if (!scope) return [];
    return Object.entries(scope).map(([name, value]) => ({ field: resource.fieldsByName.get(name) as never, values: [value] }));
  };

  /**
   * Loads an item the caller may see (else 404) and may act on (else 403). `forWrite` locks the
   * row until the transaction ends (PostgreSQL), so that a precondition checked on it still holds
   * when the write lands and a concurrent writer waits instead of acting on a stale copy.
   */
  const loadItem = async (executor: AnyDb, resource: ResourceMetadata, operation: OperationName, rawId: string, principal: Principal | null, forWrite = false): Promise<Item> => {
    const op = authorize(resource, operation, principal);
    const id = parseId(rawId);
    if (id === undefined) throw new NotFoundError();
    const item = await findItem(executor, resource, id, scopeConditions(resource, principal), forWrite);
    if (!item) throw new NotFoundError();
    if (op.securityItem && !op.securityItem(principal, item)) throw new ForbiddenError('Access Denied.');
    return item;
  };

  /** What every hook receives: the caller, the operation, the settings and a scoped reader. */
  const hookContext = (executor: AnyDb, principal: Principal | null, operation: OperationName): OperationContext => ({
    principal,
    operation,
    settings,
    read: async (shortName, ids) => {
      const target = registry.byShortName(shortName);
      if (!target?.persisted) throw new Error(`read: ${shortName} is not a persisted resource`);
      const wanted = [...new Set(ids)].filter((id) => Number.isSafeInteger(id));
      if (!wanted.length) return new Map();
      const conditions = [{ field: target.idField, values: wanted }, ...scopeConditions(target, principal)];
      const items = await listItems(executor, target, { conditions, order: [{ field: target.idField, direction: 'asc' }], limit: wanted.length, offset: 0 });
      return new Map(items.map((item) => [item.id, item]));
    },
  });

  /** The operation's provider over the items it answers with (or the items as loaded). */
  const provide = async (executor: AnyDb, op: OperationDefinition, operation: OperationName, principal: Principal | null, items: readonly Item[]): Promise<Item[]> =>
    op.provider ? [...(await op.provider(items, hookContext(executor, principal, operation)))] : [...items];

  const provideOne = async (executor: AnyDb, op: OperationDefinition, operation: OperationName, principal: Principal | null, item: Item): Promise<Item> =>
    (await provide(executor, op, operation, principal, [item]))[0] as Item;

  const filterConditions = (resource: ResourceMetadata, query: Query): Condition[] => {
    const conditions: Condition[] = [];
    for (const filter of resource.filters) {
      const raw = query.get(filter.parameter);
      if (raw === undefined) continue;
      const values = listValues(raw);
      if (filter.strategy === 'exact') {
        const typed = values.map((v) => filterValue(filter.field, v)).filter((v) => v !== DROP);
        // Every value unusable for the column's type: the filter is dropped, as API Platform does.
        if (values.length > 0 && typed.length === 0 && filter.field.kind !== 'enum' && filter.field.kind !== 'string') continue;
        conditions.push({ field: filter.field, values: typed.filter((v) => v !== NO_MATCH) });
        continue;
      }
      // exactIri: an IRI or a bare id; values that resolve to nothing usable are dropped, and a
      // filter left without values is dropped as a whole (API Platform's SearchFilter does both).
      const target = registry.byShortName(filter.field.target as string) as ResourceMetadata;
      const ids: number[] = [];
      for (const v of values) {
        const bare = parseId(v);
        if (bare !== undefined) ids.push(bare);
        else {
          const r = resolveIri(registry, target, v);
          if (r.ok) ids.push(r.id);
          else if (r.reason === 'not_found') ids.push(0);
        }
      }
      if (ids.length) conditions.push({ field: filter.field, values: ids });
    }
    return conditions;
  };

  const ordering = (resource: ResourceMetadata, query: Query): OrderBy[] => {
    const order: OrderBy[] = [];
    const raw = query.get('order');
    if (raw && typeof raw === 'object' && !Array.isArray(raw)) {
      for (const [name, direction] of Object.entries(raw)) {
        const field = resource.orderFields.find((f) => f.name === name);
        const dir = typeof direction === 'string' ? direction.toLowerCase() : '';
        if (field && (dir === 'asc' || dir === 'desc') && !order.some((o) => o.field === field)) order.push({ field, direction: dir });
      }
    }
    // Identifier ascending by default, and as the last key always, so pages never overlap.
    if (!order.some((o) => o.field === resource.idField)) order.push({ field: resource.idField, direction: 'asc' });
    return order;
  };

  const paginate = (query: Query) => {
    const page = phpInt(query.get(pagination.pageParameter)) ?? 1;
    if (page < 1) throw new BadRequestError('Page should not be less than 1');
    if (page > MAX_PAGE) throw new BadRequestError(`Page should not be greater than ${MAX_PAGE}`);
    let itemsPerPage = phpInt(query.get(pagination.itemsPerPageParameter)) ?? pagination.defaultItemsPerPage;
    if (itemsPerPage < 0) throw new BadRequestError('Limit should not be less than 0');
    itemsPerPage = Math.min(itemsPerPage, pagination.maximumItemsPerPage);
    if (itemsPerPage === 0 && page > 1) throw new BadRequestError('Page should not be greater than 1 if limit is equal to 0');
    return { page, itemsPerPage };
  };

  const persistWith =
    (executor: AnyDb, resource: ResourceMetadata) =>
    async (input: PersistInput): Promise<Item> => {
      const id = await insertItem(executor, resource, input.values, input.extraColumns);
      return (await findItem(executor, resource, id, [])) as Item;
    };

  /** A unique clash the pre-check could not see (a concurrent write) is still a violation. */
  const uniqueClash = (resource: ResourceMetadata, values: Record<string, unknown>) =>
    new ConstraintViolationError(resource.fields.filter((f) => f.unique && values[f.name] !== undefined).slice(0, 1).map((f) => violation(f.name, 'unique')));

  const write = async <T>(resource: ResourceMetadata, values: Record<string, unknown>, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof UniqueClashError) throw uniqueClash(resource, values);
      throw err;
    }
  };

  return {
    registry,

    async getCollection(resource: ResourceMetadata, query: Query, principal: Principal | null): Promise<CollectionResult> {
      const op = authorize(resource, 'getCollection', principal);
      const { page, itemsPerPage } = paginate(query);
      const conditions = [...scopeConditions(resource, principal), ...filterConditions(resource, query)];
      const offset = (page - 1) * itemsPerPage;
      const [totalItems, items] = await Promise.all([
        countItems(db, resource, conditions),
        itemsPerPage === 0 ? Promise.resolve([]) : listItems(db, resource, { conditions, order: ordering(resource, query), limit: itemsPerPage, offset }),
      ]);
      return { items: await provide(db, op, 'getCollection', principal, items), totalItems, page, itemsPerPage };
    },

    async get(resource: ResourceMetadata, rawId: string, principal: Principal | null): Promise<Item> {
      const item = await loadItem(db, resource, 'get', rawId, principal);
      return provideOne(db, resource.operations.get('get') as OperationDefinition, 'get', principal, item);
    },

    /** `readBody` checks the Content-Type and parses; it runs after security, as in API Platform. */
    /**
     * `readBody` checks the Content-Type and parses; it runs after security, as in API Platform.
     * A resource that is not persisted has its processor compute the answer; nothing is stored.
     */
    async post(resource: ResourceMetadata, readBody: () => unknown, principal: Principal | null): Promise<Item> {
      const op = authorize(resource, 'post', principal);
      const body = readBody();
      if (!resource.persisted) {
        const values = await denormalize(body, { db, registry, resource, operation: 'post', principal, previous: undefined });
        const processor = op.processor as NonNullable<OperationDefinition['processor']>;
        const item = await processor(values, hookContext(db, principal, 'post'), () => Promise.reject(new Error(`${resource.shortName} is not persisted`)));
        return provideOne(db, op, 'post', principal, item);
      }
      return db.transaction().execute(async (trx) => {
        const values = await denormalize(body, { db: trx, registry, resource, operation: 'post', principal, previous: undefined });
        const persist = persistWith(trx, resource);
        const item = await write(resource, values, () => (op.processor ? op.processor(values, hookContext(trx, principal, 'post'), persist) : persist({ values })));
        return provideOne(trx, op, 'post', principal, item);
      });
    },

    /** PUT and PATCH. The processor, when there is one, wraps the update as it wraps an insert. */
    async replace(resource: ResourceMetadata, operation: 'put' | 'patch', rawId: string, readBody: () => unknown, principal: Principal | null, precondition?: Precondition): Promise<Item> {
      return db.transaction().execute(async (trx) => {
        const op = resource.operations.get(operation) as OperationDefinition;
        const previous = await loadItem(trx, resource, operation, rawId, principal, true);
        if (precondition) precondition(await provideOne(trx, op, 'get', principal, previous));
        const body = readBody();
        const values = await denormalize(body, { db: trx, registry, resource, operation, principal, previous });
        const persist = async (input: PersistInput): Promise<Item> => {
          if (!(await updateItem(trx, resource, previous.id, input.values, input.extraColumns))) throw new NotFoundError();
          return (await findItem(trx, resource, previous.id, [])) as Item;
        };
        const item = await write(resource, values, () => (op.processor ? op.processor(values, hookContext(trx, principal, operation), persist) : persist({ values })));
        return provideOne(trx, op, operation, principal, item);
      });
    },

    /** The second of two concurrent deletes finds no row left and answers 404, like a late one. */
    async delete(resource: ResourceMetadata, rawId: string, principal: Principal | null, precondition?: Precondition): Promise<void> {
      await db.transaction().execute(async (trx) => {
        const item = await loadItem(trx, resource, 'delete', rawId, principal, true);
        if (precondition) {
          const get = resource.operations.get('get');
          precondition(get ? await provideOne(trx, get, 'get', principal, item) : item);
        }
        if (!(await deleteItem(trx, resource, item.id))) throw new NotFoundError();
      });
    },
  };
}

export type Engine = ReturnType<typeof createEngine>;
