import {
  ITEM_OPERATIONS,
  OPERATION_NAMES,
  PROCESSOR_OPERATIONS,
  PROVIDER_OPERATIONS,
  type CacheHeaders,
  type FieldDefinition,
  type FieldKind,
  type SearchStrategy,
  type OperationDefinition,
  type OperationName,
  type ResourceDefinition,
} from './define.js';

/** A field after the registry filled in its defaults. */
export interface FieldMetadata extends FieldDefinition {
  readonly name: string;
}

/** What a filter reads: a stored field, or a value derived from stored columns in SQL. */
export interface FilterTarget {
  readonly name: string;
  readonly kind: FieldKind;
  /** The stored field and its column, when the target is one. */
  readonly field?: FieldMetadata;
  readonly column?: string;
  /** For derived values: the columns of `a / b`. */
  readonly ratio?: readonly [string, string];
  /** Whether the value may be absent (null): decides exists filters and null ordering. */
  readonly nullable: boolean;
}

export type FilterMetadata =
  | {
      readonly type: 'search';
      readonly property: string;
      readonly strategy: SearchStrategy;
      readonly target: FilterTarget;
    }
  | { readonly type: 'range' | 'date' | 'exists' | 'order'; readonly property: string; readonly target: FilterTarget }
  | { readonly type: 'properties'; readonly property: 'properties' };

export interface LinkMetadata {
  readonly path: string;
  readonly from: string;
  readonly toField: FieldMetadata;
}

/** A resource as the engine serves it: validated, derived, frozen. */
export interface ResourceMetadata {
  readonly definition: ResourceDefinition;
  readonly shortName: string;
  /** lcfirst(shortName): the entrypoint key. */
  readonly entrypointKey: string;
  readonly description: string;
  readonly path: string;
  /** The last path segment, e.g. `immobilies` (used in operation ids). */
  readonly segment: string;
  /** False for a resource its hooks compute without storing anything (no table, no ids). */
  readonly persisted: boolean;
  /** The table; empty for a resource that is not persisted. */
  readonly table: string;
  readonly fields: readonly FieldMetadata[];
  readonly fieldsByName: ReadonlyMap<string, FieldMetadata>;
  /** The identifier; for a resource that is not persisted, an undocumented placeholder no code path reads. */
  readonly idField: FieldMetadata;
  readonly operations: ReadonlyMap<OperationName, OperationDefinition>;
  readonly hasCollectionOperations: boolean;
  readonly hasItemOperations: boolean;
  readonly filters: readonly FilterMetadata[];
  readonly links: readonly LinkMetadata[];
  /** The owner field whose counts the database maintains (see ResourceDefinition.countedBy). */
  readonly countedBy: FieldMetadata | undefined;
  readonly scope: ResourceDefinition['scope'];
  /** Shared caching of the GET answers (see ResourceDefinition.cacheHeaders); undefined = private. */
  readonly cacheHeaders: CacheHeaders | undefined;
}

export interface Registry {
  readonly prefix: string;
  readonly title: string;
  readonly description: string;
  readonly version: string;
  readonly resources: readonly ResourceMetadata[];
  byShortName(shortName: string): ResourceMetadata | undefined;
}

export interface RegistryOptions {
  /** Route prefix, e.g. `/api`; the entrypoint lives there. */
  readonly prefix: string;
  readonly title: string;
  readonly description: string;
  readonly version: string;
}

export class RegistryError extends Error {}

/** Stands in for the identifier of a resource that is not persisted: never read, written or documented. */
const NO_ID: FieldMetadata = {
  name: 'id',
  column: '',
  kind: 'id',
  required: false,
  readable: false,
  writable: false,
  stored: false,
};

/**
 * Validates definitions once at boot and freezes the result (as API Platform caches its metadata
 * factories): unknown reference targets, duplicate paths or names, filters or orderings on unknown
 * fields, operations without a security rule, a hook on an operation that would not run it, a
 * computed field nothing computes and a missing identifier all stop the service.
 */
export function buildRegistry(definitions: readonly ResourceDefinition[], options: RegistryOptions): Registry {
  const problems: string[] = [];
  const names = new Set<string>();
  const paths = new Set<string>();
  const resources: ResourceMetadata[] = [];

  for (const def of definitions) {
    const where = `resource ${def.shortName}`;
    if (!/^[A-Z][A-Za-z0-9]*$/.test(def.shortName)) problems.push(`${where}: shortName must be PascalCase`);
    if (names.has(def.shortName)) problems.push(`${where}: duplicate shortName`);
    names.add(def.shortName);
    if (!def.path.startsWith(`${options.prefix}/`) || !/^\/[a-z0-9_/-]+$/.test(def.path))
      problems.push(`${where}: path "${def.path}" must be a lower-case path under ${options.prefix}`);
    if (paths.has(def.path)) problems.push(`${where}: duplicate path ${def.path}`);
    paths.add(def.path);

    const fields: FieldMetadata[] = Object.entries(def.fields).map(([name, spec]) => ({
      ...spec,
      name,
      column: spec.column ?? name,
    }));
    const fieldsByName = new Map(fields.map((fm) => [fm.name, fm]));
    const persisted = def.table !== null;
    const idFields = fields.filter((fm) => fm.kind === 'id');
    if (persisted && idFields.length !== 1) problems.push(`${where}: needs exactly one id field`);
    if (!persisted && idFields.length !== 0)
      problems.push(`${where}: is not persisted (table null) and so has no id field`);
    for (const fm of fields) {
      if (fm.kind === 'ref' && !definitions.some((d) => d.shortName === fm.target))
        problems.push(`${where}: field ${fm.name} refers to unknown resource ${fm.target}`);
      if (fm.kind === 'ref' && !persisted && fm.readable)
        problems.push(`${where}: field ${fm.name}: a resource that is not persisted takes references as input only`);
      if (fm.kind === 'ref' && definitions.some((d) => d.shortName === fm.target && d.table === null))
        problems.push(`${where}: field ${fm.name} refers to ${fm.target}, which is not persisted`);
      if (fm.kind === 'enum' && !fm.values?.length) problems.push(`${where}: enum field ${fm.name} has no values`);
      if (persisted && fm.stored && (fm.kind === 'object' || fm.kind === 'array'))
        problems.push(`${where}: field ${fm.name}: ${fm.kind} fields can only be computed`);
    }

    const operations = new Map<OperationName, OperationDefinition>();
    for (const [name, op] of Object.entries(def.operations) as [OperationName, OperationDefinition | undefined][]) {
      if (!OPERATION_NAMES.includes(name)) problems.push(`${where}: unknown operation ${name}`);
      else if (!op || typeof op.security !== 'function')
        problems.push(`${where}: operation ${name} has no security rule`);
      else {
        operations.set(name, op);
        if (op.processor && !PROCESSOR_OPERATIONS.includes(name))
          problems.push(
            `${where}: operation ${name} would never run its processor (processors run on ${PROCESSOR_OPERATIONS.join(', ')})`,
          );
        if (op.provider && !PROVIDER_OPERATIONS.includes(name))
          problems.push(
            `${where}: operation ${name} would never run its provider (providers run on ${PROVIDER_OPERATIONS.join(', ')})`,
          );
        if (!persisted && name === 'post' && !op.processor)
          problems.push(`${where}: operation post of a resource that is not persisted needs a processor`);
        if (!persisted && name !== 'post')
          problems.push(
            `${where}: a resource that is not persisted is computed from a posted body: it offers post only, not ${name}`,
          );
      }
    }
    const computed = fields.filter((fm) => !fm.stored && fm.readable && fm.kind !== 'secret');
    if (persisted && computed.length) {
      for (const [name, op] of operations) {
        if (PROVIDER_OPERATIONS.includes(name) && !op.provider)
          problems.push(
            `${where}: operation ${name} answers with computed field ${computed[0]?.name} but has no provider to compute it`,
          );
      }
    }
    if (!persisted && (def.filters || def.scope || def.links || def.countedBy))
      problems.push(`${where}: a resource that is not persisted has no filters, links, counts or scope`);
    const filters = filterMetadata(def, fieldsByName, problems);
    const links: LinkMetadata[] = [];
    for (const link of def.links ?? []) {
      const toField = fieldsByName.get(link.toField);
      if (!toField || toField.kind !== 'ref' || toField.target !== link.from)
        problems.push(`${where}: link ${link.path} needs a ref field to ${link.from}`);
      else if (!/^\/[a-z0-9_/-]+\/\{id\}\/[a-z0-9_-]+$/.test(link.path))
        problems.push(`${where}: link path ${link.path} must look like /parent/{id}/children`);
      else links.push({ path: link.path, from: link.from, toField });
    }
    if (def.cacheHeaders) publicReadProblems(def, operations, problems);
    const countedBy = def.countedBy === undefined ? undefined : fieldsByName.get(def.countedBy);
    if (def.countedBy !== undefined && countedBy?.kind !== 'ref')
      problems.push(`${where}: countedBy names no ref field`);

    resources.push({
      definition: def,
      shortName: def.shortName,
      entrypointKey: def.shortName.charAt(0).toLowerCase() + def.shortName.slice(1),
      description: def.description ?? '',
      path: def.path,
      segment: def.path.slice(def.path.lastIndexOf('/') + 1),
      persisted,
      table: def.table ?? '',
      fields,
      fieldsByName,
      idField: persisted ? (idFields[0] as FieldMetadata) : NO_ID,
      operations,
      hasCollectionOperations: operations.has('getCollection') || operations.has('post'),
      hasItemOperations: ITEM_OPERATIONS.some((op) => operations.has(op)),
      filters,
      links,
      countedBy,
      scope: def.scope,
      cacheHeaders: def.cacheHeaders,
    });
  }
  if (problems.length) throw new RegistryError(`Invalid resource definitions:\n  - ${problems.join('\n  - ')}`);

  const byName = new Map(resources.map((r) => [r.shortName, r]));
  return deepFreeze({
    prefix: options.prefix,
    title: options.title,
    description: options.description,
    version: options.version,
    resources,
    byShortName: (shortName: string) => byName.get(shortName),
  });
}

/**
 * A shared cache hands one answer to every caller, so an answer may be public only when no
 * caller could get another: anyone may read, and no scope, item rule or provider (which sees the
 * principal) decides what the answer holds.
 */
function publicReadProblems(
  def: ResourceDefinition,
  operations: ReadonlyMap<OperationName, OperationDefinition>,
  problems: string[],
): void {
  const where = `resource ${def.shortName}: cacheHeaders.public`;
  const reads = (['getCollection', 'get'] as const).filter((name) => operations.has(name));
  if (!reads.length) problems.push(`${where} needs a get or getCollection operation`);
  for (const name of reads) {
    const op = operations.get(name) as OperationDefinition;
    if (!op.security(null)) problems.push(`${where}: ${name} must be readable without a key`);
    if (op.securityItem) problems.push(`${where}: ${name} has an item rule, so answers differ by caller`);
    if (op.provider) problems.push(`${where}: ${name} has a provider, which may answer by caller`);
  }
  if (def.scope) problems.push(`${where}: a scope makes answers differ by caller`);
  for (const [key, value] of [
    ['maxAge', def.cacheHeaders?.maxAge],
    ['sharedMaxAge', def.cacheHeaders?.sharedMaxAge],
  ] as const) {
    if (value !== undefined && (!Number.isInteger(value) || value < 0 || value > 31_536_000))
      problems.push(`${where}: ${key} must be whole seconds from 0 to 31536000`);
  }
}

/** Resolves and checks the declared filters: each names a field or derived value that suits it. */
function filterMetadata(
  def: ResourceDefinition,
  fieldsByName: ReadonlyMap<string, FieldMetadata>,
  problems: string[],
): FilterMetadata[] {
  const where = `resource ${def.shortName}`;
  const targetOf = (name: string): FilterTarget | undefined => {
    // A derived value wins over a field of the same name: a computed output field (say
    // preisProQuadratmeter) has no column, its SQL is the derived expression. Other computed
    // (not stored) fields cannot be filtered.
    const derived = def.derived?.[name];
    if (!derived) {
      const field = fieldsByName.get(name);
      return !field || !field.stored || field.kind === 'secret'
        ? undefined
        : { name, kind: field.kind, field, column: field.column, nullable: !field.required && field.kind !== 'id' };
    }
    const columns = derived.ratio.map((n) => fieldsByName.get(n));
    if (columns.some((c) => c?.kind !== 'number')) {
      problems.push(`${where}: derived ${name} needs two numeric fields`);
      return undefined;
    }
    return {
      name,
      kind: derived.kind,
      ratio: [(columns[0] as FieldMetadata).column, (columns[1] as FieldMetadata).column],
      nullable: true,
    };
  };
  const out: FilterMetadata[] = [];
  const seen = new Set<string>();
  for (const filter of def.filters ?? []) {
    if (filter.type === 'properties') {
      out.push({ type: 'properties', property: 'properties' });
      continue;
    }
    const key = `${filter.type}:${filter.property}`;
    if (seen.has(key)) problems.push(`${where}: ${filter.type} filter on ${filter.property} declared twice`);
    seen.add(key);
    const target = targetOf(filter.property);
    if (!target) {
      problems.push(`${where}: ${filter.type} filter names unknown field ${filter.property}`);
      continue;
    }
    const kind = target.kind;
    const fits =
      filter.type === 'search'
        ? filter.strategy === 'exact' || kind === 'string'
        : filter.type === 'range'
          ? kind === 'number' || kind === 'integer' || kind === 'id'
          : filter.type === 'date'
            ? kind === 'datetime'
            : filter.type === 'exists'
              ? target.nullable
              : true;
    if (!fits)
      problems.push(
        `${where}: ${filter.type} filter${filter.type === 'search' ? ` (${filter.strategy})` : ''} does not suit ${kind} ${filter.property}`,
      );
    else
      out.push(
        filter.type === 'search'
          ? { type: 'search', property: filter.property, strategy: filter.strategy, target }
          : { type: filter.type, property: filter.property, target },
      );
  }
  return out;
}

function deepFreeze<T>(value: T, seen = new WeakSet<object>()): T {
  if (value === null || typeof value !== 'object' || seen.has(value as object)) return value;
  seen.add(value as object);
  if (value instanceof Map) {
    for (const v of value.values()) deepFreeze(v, seen);
  } else {
    for (const v of Object.values(value as object)) deepFreeze(v, seen);
  }
  return Object.freeze(value);
}
