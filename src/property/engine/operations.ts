import { ForbiddenError, NotFoundError, UnauthenticatedError } from '../../platform/errors/app-error.js';
import type { Item, OperationContext, OperationDefinition, OperationName, PersistInput, Principal } from './define.js';
import { denormalize } from './denormalizer.js';
import { BadRequestError, ConstraintViolationError, violation } from './errors.js';
import { filterConditions, ordering } from './filters.js';
import { parseId } from './iri.js';
import {
  countItems,
  deleteItem,
  findItem,
  insertItem,
  listItems,
  updateItem,
  UniqueClashError,
  type AnyDb,
  type Condition,
} from './persistence.js';
import type { Query, QueryValue } from './query.js';
import type { LinkMetadata, Registry, ResourceMetadata } from './registry.js';

/**
 * The operations of every resource, free of HTTP: providers (read) and processors (write) in API
 * Platform's sense. The HTTP adapter (routes.ts), the command line and tests all call these.
 */

export interface PaginationOptions {
  readonly pageParameter: string;
  readonly itemsPerPageParameter: string;
  readonly defaultItemsPerPage: number;
  readonly maximumItemsPerPage: number;
  /** `pagination=false` lets the client turn pagination off (API Platform's client_enabled). */
  readonly clientEnabled?: boolean;
  /** `partial=true` lets the client ask for partial pagination (no count; client_partial). */
  readonly clientPartial?: boolean;
  /** Most items one unpaginated response may hold; a larger collection answers 400. */
  readonly unpaginatedMaximum?: number;
  /**
   * Filtered collections count at most this many matching rows; beyond it the page is answered
   * with partial pagination (no `hydra:totalItems`, no `hydra:last`).
   */
  readonly countCap?: number;
}

export const PAGINATION_PARAMETER = 'pagination';
export const PARTIAL_PARAMETER = 'partial';

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
/** `paged`: a page with its total; `partial`: a page without one; `all`: pagination off. */
export type PaginationMode = 'paged' | 'partial' | 'all';

export interface CollectionResult {
  readonly items: Item[];
  /** Undefined in partial pagination. */
  readonly totalItems: number | undefined;
  readonly page: number;
  readonly itemsPerPage: number;
  readonly mode: PaginationMode;
}

/** A subresource request: the link and the raw `{id}` of the parent. */
export interface ParentSelection {
  readonly link: LinkMetadata;
  readonly rawId: string;
}

const MAX_PAGE = 2_147_483_647;

/** PHP's `(int)` cast of a query value, which API Platform applies to page numbers. */
function phpInt(value: QueryValue | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') return 0;
  const m = /^\s*([+-]?\d+)/.exec(value);
  if (!m) return 0;
  const n = Number(m[1]);
  return Number.isFinite(n) ? n : 0;
}

const isFalse = (v: QueryValue | undefined): boolean => v === 'false' || v === '0';
const isTrue = (v: QueryValue | undefined): boolean => v === 'true' || v === '1';

/** Equalities on the same column with the same single value (scope and parent agree) kept once. */
function dedupe(conditions: Condition[]): Condition[] {
  return conditions.filter(
    (c, i) =>
      !conditions
        .slice(0, i)
        .some(
          (d) =>
            d.op === 'in' &&
            c.op === 'in' &&
            d.target.column === c.target.column &&
            d.values.length === 1 &&
            c.values.length === 1 &&
            d.values[0] === c.values[0],
        ),
  );
}

export function createEngine(options: EngineOptions) {
  const { registry, db, pagination } = options;
  const settings = options.settings ?? {};

  const authorize = (resource: ResourceMetadata, operation: OperationName, principal: Principal | null) => {
    const op = resource.operations.get(operation);
    if (!op) throw new NotFoundError();
    if (!op.security(principal)) {
      if (principal === null)
        throw new UnauthenticatedError('Full authentication is required to access this resource.');
      throw new ForbiddenError('Access Denied.');
    }
    return op;
  };

  const scopeConditions = (resource: ResourceMetadata, principal: Principal | null): Condition[] => {
    const scope = resource.scope?.(principal);
    if (!scope) return [];
    return Object.entries(scope).map(([name, value]) => ({
      op: 'in',
      target: resource.fieldsByName.get(name) as never,
      values: [value],
    }));
  };

  /**
   * Loads an item the caller may see (else 404) and may act on (else 403). `forWrite` locks the
   * row until the transaction ends (PostgreSQL), so that a precondition checked on it still holds
   * when the write lands and a concurrent writer waits instead of acting on a stale copy.
   */
  const loadItem = async (
    executor: AnyDb,
    resource: ResourceMetadata,
    operation: OperationName,
    rawId: string,
    principal: Principal | null,
    forWrite = false,
  ): Promise<Item> => {
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
      const conditions: Condition[] = [
        { op: 'in', target: target.idField, values: wanted },
        ...scopeConditions(target, principal),
      ];
      const items = await listItems(executor, target, {
        conditions,
        order: [{ target: target.idField, direction: 'asc', nullable: false }],
        limit: wanted.length,
        offset: 0,
      });
      return new Map(items.map((item) => [item.id, item]));
    },
  });

  /** The operation's provider over the items it answers with (or the items as loaded). */
  const provide = async (
    executor: AnyDb,
    op: OperationDefinition,
    operation: OperationName,
    principal: Principal | null,
    items: readonly Item[],
  ): Promise<Item[]> =>
    op.provider ? [...(await op.provider(items, hookContext(executor, principal, operation)))] : [...items];

  const provideOne = async (
    executor: AnyDb,
    op: OperationDefinition,
    operation: OperationName,
    principal: Principal | null,
    item: Item,
  ): Promise<Item> => (await provide(executor, op, operation, principal, [item]))[0] as Item;

  const paginate = (query: Query) => {
    const page = phpInt(query.get(pagination.pageParameter)) ?? 1;
    if (page < 1) throw new BadRequestError('Page should not be less than 1');
    if (page > MAX_PAGE) throw new BadRequestError(`Page should not be greater than ${MAX_PAGE}`);
    let itemsPerPage = phpInt(query.get(pagination.itemsPerPageParameter)) ?? pagination.defaultItemsPerPage;
    if (itemsPerPage < 0) throw new BadRequestError('Limit should not be less than 0');
    itemsPerPage = Math.min(itemsPerPage, pagination.maximumItemsPerPage);
    if (itemsPerPage === 0 && page > 1)
      throw new BadRequestError('Page should not be greater than 1 if limit is equal to 0');
    const mode: PaginationMode =
      pagination.clientEnabled && isFalse(query.get(PAGINATION_PARAMETER))
        ? 'all'
        : pagination.clientPartial && isTrue(query.get(PARTIAL_PARAMETER))
          ? 'partial'
          : 'paged';
    return { page: mode === 'all' ? 1 : page, itemsPerPage, mode };
  };

  /** The equality with the parent of a subresource, after checking the caller may see the parent (else 404). */
  const parentConditions = async (
    parent: ParentSelection | undefined,
    principal: Principal | null,
  ): Promise<Condition[]> => {
    if (!parent) return [];
    const from = registry.byShortName(parent.link.from) as ResourceMetadata;
    const item = await loadItem(db, from, 'get', parent.rawId, principal);
    return [{ op: 'in', target: parent.link.toField, values: [item.id] }];
  };

  /** Page, count and pagination mode of one collection request; see PaginationOptions. */
  const readCollection = async (
    resource: ResourceMetadata,
    base: Condition[],
    filters: Condition[],
    query: Query,
  ): Promise<CollectionResult> => {
    const { page, itemsPerPage, mode } = paginate(query);
    const conditions = [...base, ...filters];
    const order = ordering(resource, query);
    if (mode === 'all') {
      const maximum = pagination.unpaginatedMaximum ?? pagination.maximumItemsPerPage;
      const items = await listItems(db, resource, { conditions, order, limit: maximum + 1, offset: 0 });
      if (items.length > maximum)
        throw new BadRequestError(
          `Pagination cannot be disabled for more than ${maximum} items; use pages or narrow the filters.`,
        );
      return { items, totalItems: items.length, page: 1, itemsPerPage: items.length, mode };
    }
    const offset = (page - 1) * itemsPerPage;
    const list =
      itemsPerPage === 0
        ? Promise.resolve([])
        : listItems(db, resource, { conditions, order, limit: itemsPerPage, offset });
    if (mode === 'partial') return { items: await list, totalItems: undefined, page, itemsPerPage, mode };
    // Unfiltered (whole table or one owner): exact, from the counts the database maintains.
    // Filtered: counted up to the cap; beyond it the answer switches to partial pagination.
    const cap = filters.length ? pagination.countCap : undefined;
    const [total, items] = await Promise.all([countItems(db, resource, conditions, cap), list]);
    if (cap !== undefined && total > cap) return { items, totalItems: undefined, page, itemsPerPage, mode: 'partial' };
    return { items, totalItems: total, page, itemsPerPage, mode };
  };

  const persistWith =
    (executor: AnyDb, resource: ResourceMetadata) =>
    async (input: PersistInput): Promise<Item> => {
      const id = await insertItem(executor, resource, input.values, input.extraColumns);
      return (await findItem(executor, resource, id, [])) as Item;
    };

  /** A unique clash the pre-check could not see (a concurrent write) is still a violation. */
  const uniqueClash = (resource: ResourceMetadata, values: Record<string, unknown>) =>
    new ConstraintViolationError(
      resource.fields
        .filter((f) => f.unique && values[f.name] !== undefined)
        .slice(0, 1)
        .map((f) => violation(f.name, 'unique')),
    );

  const write = async <T>(
    resource: ResourceMetadata,
    values: Record<string, unknown>,
    fn: () => Promise<T>,
  ): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof UniqueClashError) throw uniqueClash(resource, values);
      throw err;
    }
  };

  return {
    registry,

    async getCollection(
      resource: ResourceMetadata,
      query: Query,
      principal: Principal | null,
      parent?: ParentSelection,
    ): Promise<CollectionResult> {
      const op = authorize(resource, 'getCollection', principal);
      const filters = filterConditions(registry, resource, query);
      const base = dedupe([...scopeConditions(resource, principal), ...(await parentConditions(parent, principal))]);
      const result = await readCollection(resource, base, filters, query);
      return { ...result, items: await provide(db, op, 'getCollection', principal, result.items) };
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
        const values = await denormalize(body, {
          db,
          registry,
          resource,
          operation: 'post',
          principal,
          previous: undefined,
        });
        const processor = op.processor as NonNullable<OperationDefinition['processor']>;
        const item = await processor(values, hookContext(db, principal, 'post'), () =>
          Promise.reject(new Error(`${resource.shortName} is not persisted`)),
        );
        return provideOne(db, op, 'post', principal, item);
      }
      return db.transaction().execute(async (trx) => {
        const values = await denormalize(body, {
          db: trx,
          registry,
          resource,
          operation: 'post',
          principal,
          previous: undefined,
        });
        const persist = persistWith(trx, resource);
        const item = await write(resource, values, () =>
          op.processor ? op.processor(values, hookContext(trx, principal, 'post'), persist) : persist({ values }),
        );
        return provideOne(trx, op, 'post', principal, item);
      });
    },

    /** PUT and PATCH. The processor, when there is one, wraps the update as it wraps an insert. */
    async replace(
      resource: ResourceMetadata,
      operation: 'put' | 'patch',
      rawId: string,
      readBody: () => unknown,
      principal: Principal | null,
      precondition?: Precondition,
    ): Promise<Item> {
      return db.transaction().execute(async (trx) => {
        const op = resource.operations.get(operation) as OperationDefinition;
        const previous = await loadItem(trx, resource, operation, rawId, principal, true);
        if (precondition) precondition(await provideOne(trx, op, 'get', principal, previous));
        const body = readBody();
        const values = await denormalize(body, { db: trx, registry, resource, operation, principal, previous });
        // Like Doctrine, nothing is written (and updatedAt kept) when no value changes.
        const persist = async (input: PersistInput): Promise<Item> => {
          const changed =
            input.extraColumns !== undefined ||
            Object.entries(input.values).some(([name, value]) => (value ?? null) !== (previous[name] ?? null));
          if (changed && !(await updateItem(trx, resource, previous.id, input.values, input.extraColumns)))
            throw new NotFoundError();
          const item = await findItem(trx, resource, previous.id, []);
          if (!item) throw new NotFoundError();
          return item;
        };
        const item = await write(resource, values, () =>
          op.processor ? op.processor(values, hookContext(trx, principal, operation), persist) : persist({ values }),
        );
        return provideOne(trx, op, operation, principal, item);
      });
    },

    /** The second of two concurrent deletes finds no row left and answers 404, like a late one. Resolves to the deleted item. */
    async delete(
      resource: ResourceMetadata,
      rawId: string,
      principal: Principal | null,
      precondition?: Precondition,
    ): Promise<Item> {
      return db.transaction().execute(async (trx) => {
        const item = await loadItem(trx, resource, 'delete', rawId, principal, true);
        if (precondition) {
          const get = resource.operations.get('get');
          precondition(get ? await provideOne(trx, get, 'get', principal, item) : item);
        }
        if (!(await deleteItem(trx, resource, item.id))) throw new NotFoundError();
        return item;
      });
    },
  };
}

export type Engine = ReturnType<typeof createEngine>;
