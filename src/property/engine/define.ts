/**
 * The vocabulary of resource definitions, after API Platform's metadata: a resource has a
 * `shortName`, a collection path, fields, operations (`getCollection`, `get`, `post`, `put`,
 * `patch`, `delete`) with a `security` rule each, filters (API Platform's search, range, date,
 * exists, order and property filters, declared once and read by persistence, the Hydra
 * `hydra:search` template and OpenAPI) and an optional `scope` that hides what a caller may not
 * see. Definitions are plain data plus named hooks: a `provider` (read side: it decorates the
 * items an operation returns, as a decorated API Platform state provider does) and a `processor`
 * (write side: it wraps persistence, as a decorated state processor does). A resource without a
 * table (`table: null`) is not persisted: its operations are served by its hooks alone. The
 * engine reads definitions and never asks which resource it is serving.
 */

export type OperationName = 'getCollection' | 'get' | 'post' | 'put' | 'patch' | 'delete';
export const OPERATION_NAMES: readonly OperationName[] = ['getCollection', 'get', 'post', 'put', 'patch', 'delete'];
export const ITEM_OPERATIONS: readonly OperationName[] = ['get', 'put', 'patch', 'delete'];
export const WRITE_OPERATIONS: readonly OperationName[] = ['post', 'put', 'patch'];
/** The operations that run a `processor` (they write a body). */
export const PROCESSOR_OPERATIONS: readonly OperationName[] = WRITE_OPERATIONS;
/** The operations that run a `provider` (they answer with items). */
export const PROVIDER_OPERATIONS: readonly OperationName[] = ['getCollection', 'get', 'post', 'put', 'patch'];
/** The HTTP method of each operation; routes and both documentation formats read it. */
export const OPERATION_METHOD: Readonly<Record<OperationName, 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'>> = {
  getCollection: 'GET',
  get: 'GET',
  post: 'POST',
  put: 'PUT',
  patch: 'PATCH',
  delete: 'DELETE',
};

/** Who is calling: an authenticated account, or null for an anonymous request. */
export interface Principal {
  readonly id: number;
  readonly role: string;
}

/** An item as the engine handles it: field name → value; references hold the target's id. */
export type Item = Readonly<Record<string, unknown>> & { readonly id: number };

export type FieldKind =
  'id' | 'string' | 'integer' | 'number' | 'boolean' | 'enum' | 'ref' | 'secret' | 'datetime' | 'object' | 'array';

export interface WriteAccessContext {
  readonly principal: Principal | null;
  readonly operation: OperationName;
  readonly value: unknown;
  /** The stored item for put/patch; undefined for post. */
  readonly previous: Item | undefined;
}

export interface FieldDefinition {
  readonly kind: FieldKind;
  /** Database column; defaults to the field name. */
  readonly column: string;
  readonly description?: string;
  /** Must be present and non-blank after a post or put (NotBlank / NotNull). */
  readonly required: boolean;
  readonly readable: boolean;
  readonly writable: boolean;
  /** For `secret` fields: the operations whose response carries the value (shown once). */
  readonly readOn?: readonly OperationName[];
  readonly format?: 'email';
  readonly minimum?: number;
  readonly maximum?: number;
  readonly maxLength?: number;
  readonly values?: readonly string[];
  /** For `ref` fields: the shortName of the target resource. */
  readonly target?: string;
  /**
   * For `ref` fields: what deleting the target does to this item (the migration's foreign key
   * must say the same): `restrict` refuses the delete with 409, `cascade` deletes this item too.
   */
  readonly onDelete?: 'restrict' | 'cascade';
  /**
   * The database enforces uniqueness; the engine reports a clash as a violation. `ignoreCase`:
   * values that differ only in case clash too (the migration indexes `lower(column)`).
   */
  readonly unique?: boolean | 'ignoreCase';
  /** Value used when a post (or a put) leaves the field out. */
  readonly default?: (ctx: { readonly principal: Principal | null }) => unknown;
  /** On put, a missing value keeps the stored one instead of resetting to the default. */
  readonly keepOnReplace?: boolean;
  /**
   * Property-level security (API Platform's securityPostDenormalize): asked only when a write
   * would give the field a value other than the stored one (or the default, on post). False → 403.
   */
  readonly writeAccess?: (ctx: WriteAccessContext) => boolean;
  /** Unit or example for docs. */
  readonly example?: unknown;
  /**
   * Whether the value lives in a column. Secrets and computed fields (filled in by a provider or
   * processor, never written by clients) do not.
   */
  readonly stored: boolean;
  /**
   * The RDF property the field stands for, when a shared vocabulary has one (`https://schema.org/name`
   * marks the field that names a record; clients such as the admin show it instead of the IRI).
   * Defaults to `#<ShortName>/<field>` under the documentation's vocabulary.
   */
  readonly iri?: string;
  /** For `object` and `array` fields: the JSON Schema of the value, for the OpenAPI document. */
  readonly schema?: Readonly<Record<string, unknown>>;
  /** For `datetime` fields the engine sets itself: on creation only, or on every write. */
  readonly managed?: 'created' | 'updated';
}

type FieldOptions = Partial<
  Pick<
    FieldDefinition,
    | 'column'
    | 'description'
    | 'required'
    | 'unique'
    | 'default'
    | 'keepOnReplace'
    | 'writeAccess'
    | 'example'
    | 'readable'
    | 'writable'
    | 'onDelete'
    | 'iri'
  >
>;

/** A field as a definition spells it; the registry fills in the column. */
export type FieldSpec = Omit<FieldDefinition, 'column'> & { column?: string };

function field(kind: FieldKind, options: FieldOptions & Partial<FieldDefinition>): FieldSpec {
  return { required: false, readable: true, writable: true, stored: true, ...options, kind };
}

/** The schema.org property that names a record (API Platform: `#[ApiProperty(iris: [...])]`). */
export const SCHEMA_NAME = 'https://schema.org/name';

type ComputedKind = 'integer' | 'number' | 'string' | 'object' | 'array';

/** Field builders. Column names default to the field name (the registry fills them in). */
export const f = {
  id: (options: FieldOptions = {}) =>
    field('id', { ...options, writable: false, description: options.description ?? 'Identifier' }),
  string: (options: FieldOptions & { maxLength?: number; format?: 'email' } = {}) => field('string', options),
  integer: (options: FieldOptions & { minimum?: number; maximum?: number } = {}) => field('integer', options),
  number: (options: FieldOptions & { minimum?: number; maximum?: number } = {}) => field('number', options),
  boolean: (options: FieldOptions = {}) => field('boolean', options),
  enumOf: (values: readonly string[], options: FieldOptions = {}) => field('enum', { ...options, values }),
  ref: (target: string, options: FieldOptions = {}) => field('ref', { onDelete: 'restrict', ...options, target }),
  /** A server-generated value that is never stored as such and is shown only on `readOn`. */
  secret: (readOn: readonly OperationName[], options: FieldOptions = {}) =>
    field('secret', { ...options, readOn, writable: false, stored: false }),
  /** A read-only timestamp the engine sets: when the item was created, or last written. */
  timestamp: (managed: 'created' | 'updated', options: FieldOptions = {}) =>
    field('datetime', { ...options, managed, writable: false }),
  /**
   * A read-only value a provider or processor computes: never stored, never written, documented
   * as readable and not writeable. Absent (null) when its inputs are.
   */
  computed: (
    kind: ComputedKind,
    options: Pick<FieldOptions, 'description' | 'example'> & {
      schema?: Readonly<Record<string, unknown>>;
      minimum?: number;
    } = {},
  ) => field(kind, { ...options, writable: false, stored: false }),
  /** A value a non-persisted resource takes as input only (it is not part of the answer). */
  input: <K extends 'integer' | 'number' | 'string' | 'boolean' | 'ref'>(
    kind: K,
    options: FieldOptions & { minimum?: number; maximum?: number; target?: string } = {},
  ) => field(kind, { ...options, readable: false, stored: false }),
};

export interface OperationContext {
  readonly principal: Principal | null;
  readonly operation: OperationName;
  /** Settings the service hands to its hooks (cost percentages and the like). */
  readonly settings: Readonly<Record<string, unknown>>;
  /**
   * Loads items of another resource by id, as the caller may see them (that resource's scope
   * applies, and its own provider has not run): the way a hook reads related data without SQL.
   */
  readonly read: (shortName: string, ids: readonly number[]) => Promise<ReadonlyMap<number, Item>>;
}

/** What a processor hands to `persist`: field values plus columns that no field exposes. */
export interface PersistInput {
  readonly values: Readonly<Record<string, unknown>>;
  readonly extraColumns?: Readonly<Record<string, unknown>>;
}

/**
 * A write hook (API Platform's ProcessorInterface): it wraps the generic persistence, may add
 * columns and may add output-only values (such as a secret shown once) to the returned item.
 */
export type Processor = (
  input: Readonly<Record<string, unknown>>,
  ctx: OperationContext,
  persist: (input: PersistInput) => Promise<Item>,
) => Promise<Item>;

/**
 * A read hook (API Platform's ProviderInterface, decorating the generic one): it receives the
 * items the engine loaded (or a write stored) and returns them completed, e.g. with computed
 * values. It runs on `getCollection`, `get` and on the item a `post`, `put` or `patch` answers with.
 */
export type Provider = (items: readonly Item[], ctx: OperationContext) => Promise<readonly Item[]>;

export interface OperationDefinition {
  /** Whether the caller may run the operation at all: false → 401 (anonymous) or 403. */
  readonly security: (principal: Principal | null) => boolean;
  /** Whether the caller may act on this particular item (checked after loading): false → 403. */
  readonly securityItem?: (principal: Principal | null, item: Item) => boolean;
  /** Only on post, put and patch (the registry refuses it elsewhere). */
  readonly processor?: Processor;
  /** Only on getCollection, get, post, put and patch (the registry refuses it on delete). */
  readonly provider?: Provider;
  readonly description?: string;
}

/** API Platform's SearchFilter strategies; the `i` variants ignore case. */
export const SEARCH_STRATEGIES = [
  'exact',
  'partial',
  'start',
  'end',
  'word_start',
  'iexact',
  'ipartial',
  'istart',
  'iend',
  'iword_start',
] as const;
export type SearchStrategy = (typeof SEARCH_STRATEGIES)[number];

/**
 * One filter of a collection, named after API Platform's filters. `property` is a field or a
 * derived value of the resource; it is also the query parameter's name (`adresse=…`,
 * `kaufpreis[gte]=…`, `createdAt[after]=…`, `exists[heizungstyp]=…`, `order[kaufpreis]=…`).
 */
export type FilterDefinition =
  | { readonly type: 'search'; readonly property: string; readonly strategy: SearchStrategy }
  | { readonly type: 'range'; readonly property: string }
  | { readonly type: 'date'; readonly property: string }
  | { readonly type: 'exists'; readonly property: string }
  | { readonly type: 'order'; readonly property: string }
  | { readonly type: 'properties' };

/** A value computed in SQL from stored columns (filters and ordering only): `a / b`, null when b is 0 or null. */
export interface DerivedDefinition {
  readonly kind: 'number';
  readonly ratio: readonly [string, string];
}

export interface ResourceLink {
  /** Path of the collection below the parent item, e.g. `/api/users/{id}/immobilies`. */
  readonly path: string;
  /** shortName of the parent resource, whose item `{id}` names. */
  readonly from: string;
  /** The reference field of this resource that points at the parent. */
  readonly toField: string;
}

export type FieldSpecs = Readonly<Record<string, FieldSpec>>;

/**
 * How shared caches may keep a resource's GET answers (API Platform's `cacheHeaders`). Without
 * it an answer is `private, no-cache`: a browser revalidates it by its ETag, no shared cache keeps
 * it. `public: true` is for answers that are the same for every caller (the registry checks that
 * reads need no key, no scope and no provider decide them): `Cache-Control: public` with
 * `max-age` (browsers, which no purge reaches) and `s-maxage` (shared caches, which the purge on
 * each write keeps right); lifetimes left out come from the service's settings.
 */
export interface CacheHeaders {
  readonly public: true;
  /** Seconds a browser may keep the answer. */
  readonly maxAge?: number;
  /** Seconds a shared cache (Varnish, a CDN) may keep the answer. */
  readonly sharedMaxAge?: number;
}

export interface ResourceDefinition<F extends FieldSpecs = FieldSpecs> {
  readonly shortName: string;
  readonly description?: string;
  /** Collection path, e.g. `/api/immobilies`: explicit, as no inflector is ported. */
  readonly path: string;
  /** The table, or null for a resource that is computed and never stored. */
  readonly table: string | null;
  readonly fields: F;
  readonly operations: Readonly<Partial<Record<OperationName, OperationDefinition>>>;
  /** The collection's filters, in the order `hydra:search` and OpenAPI list them. */
  readonly filters?: readonly FilterDefinition[];
  /** Values computed from stored columns that filters may name. */
  readonly derived?: Readonly<Record<string, DerivedDefinition>>;
  /** Subresource collections (API Platform: a getCollection with a `Link` to the parent). */
  readonly links?: readonly ResourceLink[];
  /**
   * `hydra:totalItems` of the whole collection and of each value of this reference field (the
   * owner scope) read from counts the database keeps in the write transaction (a migration
   * creates the triggers), so that they cost the same at any table size.
   */
  readonly countedBy?: string;
  /**
   * Restricts every read and write to what the caller may see (a query extension): items
   * outside the scope answer 404. Returns field → required value, or null for no restriction.
   */
  readonly scope?: (principal: Principal | null) => Readonly<Partial<Record<keyof F & string, number | string>>> | null;
  /** Shared caching of the GET answers; absent, they are private to the caller. */
  readonly cacheHeaders?: CacheHeaders;
}

/** `searchFilter({ adresse: 'ipartial', typ: 'exact' })`: one SearchFilter entry per property. */
export const searchFilter = (properties: Readonly<Record<string, SearchStrategy>>): FilterDefinition[] =>
  Object.entries(properties).map(([property, strategy]) => ({ type: 'search', property, strategy }));
export const rangeFilter = (...properties: string[]): FilterDefinition[] =>
  properties.map((property) => ({ type: 'range', property }));
export const dateFilter = (...properties: string[]): FilterDefinition[] =>
  properties.map((property) => ({ type: 'date', property }));
export const existsFilter = (...properties: string[]): FilterDefinition[] =>
  properties.map((property) => ({ type: 'exists', property }));
export const orderFilter = (...properties: string[]): FilterDefinition[] =>
  properties.map((property) => ({ type: 'order', property }));
export const propertyFilter = (): FilterDefinition[] => [{ type: 'properties' }];

/**
 * Checks a definition against its own fields (the keys a `scope` returns must be field names)
 * and returns it in the form the registry takes. The cast only forgets the
 * field names: `keyof` makes the definition contravariant in them, so a typed definition is not
 * assignable to the general one although it is structurally the same.
 */
export function defineResource<const F extends FieldSpecs>(definition: ResourceDefinition<F>): ResourceDefinition {
  return definition as unknown as ResourceDefinition;
}

/** Reusable security rules. */
export const anyone = (): boolean => true;
export const authenticated = (principal: Principal | null): boolean => principal !== null;
export const hasRole =
  (...roles: string[]) =>
  (principal: Principal | null): boolean =>
    principal !== null && roles.includes(principal.role);
