import { randomBytes } from 'node:crypto';
import type { Item, OperationName } from './define.js';
import { itemIri } from './iri.js';
import type { Format } from './negotiation.js';
import { filterDescriptions } from './filters.js';
import type { PaginationMode } from './operations.js';
import { buildQueryString, type Query } from './query.js';
import type { Registry, ResourceMetadata } from './registry.js';

/**
 * JSON-LD/Hydra and plain-JSON bodies, composed from small parts as API Platform's normalizers
 * are: item, collection (member, totalItems), view (first/last/previous/next) and search
 * (IriTemplate). `hydraPrefix` switches between the 3.x (`hydra:member`) and 4.x (`member`) spelling.
 */

export interface Vocabulary {
  readonly collection: string;
  readonly member: string;
  readonly totalItems: string;
  readonly view: string;
  readonly partialView: string;
  readonly first: string;
  readonly last: string;
  readonly previous: string;
  readonly next: string;
  readonly search: string;
  readonly iriTemplate: string;
  readonly template: string;
  readonly variableRepresentation: string;
  readonly mapping: string;
}

const VOCABULARIES = new Map<boolean, Vocabulary>();

export function vocabulary(hydraPrefix: boolean): Vocabulary {
  let v = VOCABULARIES.get(hydraPrefix);
  if (!v) {
    v = buildVocabulary(hydraPrefix);
    VOCABULARIES.set(hydraPrefix, v);
  }
  return v;
}

function buildVocabulary(hydraPrefix: boolean): Vocabulary {
  const p = hydraPrefix ? 'hydra:' : '';
  return {
    collection: `${p}Collection`,
    member: `${p}member`,
    totalItems: `${p}totalItems`,
    view: `${p}view`,
    partialView: `${p}PartialCollectionView`,
    first: `${p}first`,
    last: `${p}last`,
    previous: `${p}previous`,
    next: `${p}next`,
    search: `${p}search`,
    iriTemplate: `${p}IriTemplate`,
    template: `${p}template`,
    variableRepresentation: `${p}variableRepresentation`,
    mapping: `${p}mapping`,
  };
}

interface OutputField {
  readonly name: string;
  /** Collection path of a reference's target, for IRIs; undefined for scalars. */
  readonly refPath: string | undefined;
  /** Operations whose output carries a secret field; undefined = every operation. */
  readonly readOn: readonly OperationName[] | undefined;
  readonly datetime: boolean;
}

// Days 29–31 are left to Date, which rolls an impossible one over (Feb 30 → Mar 2) as before.
const UTC_ISO = /^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1\d|2[0-8])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,9})?Z$/;

/** A stored timestamp as API Platform's DateTimeNormalizer writes it (RFC 3339, seconds, `+00:00`). */
export function formatDateTime(value: unknown): string {
  // Stored timestamps are UTC ISO strings (`2026-11-01T12:00:00.000Z`): their first 19 characters
  // are already the output, without parsing a Date per field of every item served.
  if (typeof value === 'string' && UTC_ISO.test(value)) return `${value.slice(0, 19)}+00:00`;
  const date = new Date(value as string);
  return Number.isNaN(date.getTime()) ? String(value) : `${date.toISOString().slice(0, 19)}+00:00`;
}

// The output plan of each resource, derived once: serialization runs for every item served.
const plans = new WeakMap<ResourceMetadata, readonly OutputField[]>();
function outputPlan(registry: Registry, resource: ResourceMetadata): readonly OutputField[] {
  let plan = plans.get(resource);
  if (!plan) {
    plan = resource.fields
      .filter((f) => f.readable)
      .map((f) => ({
        name: f.name,
        refPath: f.kind === 'ref' ? (registry.byShortName(f.target as string) as ResourceMetadata).path : undefined,
        readOn: f.kind === 'secret' ? (f.readOn ?? []) : undefined,
        datetime: f.kind === 'datetime',
      }));
    plans.set(resource, plan);
  }
  return plan;
}

/** The readable fields of an item (only `selected` ones when given), nulls omitted, references as IRIs. */
function fieldsOf(
  registry: Registry,
  resource: ResourceMetadata,
  item: Item,
  operation: OperationName,
  out: Record<string, unknown>,
  selected?: ReadonlySet<string>,
): Record<string, unknown> {
  for (const field of outputPlan(registry, resource)) {
    if (field.readOn && !field.readOn.includes(operation)) continue;
    if (selected && !selected.has(field.name)) continue;
    const value = item[field.name];
    if (value === null || value === undefined) continue;
    out[field.name] =
      field.refPath !== undefined
        ? `${field.refPath}/${value as number}`
        : field.datetime
          ? formatDateTime(value)
          : value;
  }
  return out;
}

/**
 * The @id of an item: its IRI, or for a resource that is not persisted a fresh blank-node IRI
 * under `/.well-known/genid/`, as API Platform gives objects without an identifier.
 */
function idOf(resource: ResourceMetadata, item: Item): string {
  return resource.persisted ? itemIri(resource, item.id) : `/.well-known/genid/${randomBytes(10).toString('hex')}`;
}

export function normalizeItem(
  registry: Registry,
  resource: ResourceMetadata,
  item: Item,
  format: Format,
  operation: OperationName,
  embedded = false,
  selected?: ReadonlySet<string>,
): Record<string, unknown> {
  if (format === 'json') return fieldsOf(registry, resource, item, operation, {}, selected);
  const head: Record<string, unknown> = embedded
    ? { '@id': idOf(resource, item), '@type': resource.shortName }
    : {
        '@context': `${registry.prefix}/contexts/${resource.shortName}`,
        '@id': idOf(resource, item),
        '@type': resource.shortName,
      };
  return fieldsOf(registry, resource, item, operation, head, selected);
}

export interface CollectionPage {
  readonly items: readonly Item[];
  /** Undefined in partial pagination. */
  readonly totalItems: number | undefined;
  readonly mode: PaginationMode;
  /** `properties[]=…` of the property filter, if any. */
  readonly selected?: ReadonlySet<string>;
  /** The collection's `@id`: its path, or the subresource path. */
  readonly collectionPath?: string;
  readonly page: number;
  readonly itemsPerPage: number;
  /** The request path (with any format suffix) and its parsed query. */
  readonly requestPath: string;
  readonly query: Query;
  readonly pageParameter: string;
}

export function normalizeCollection(
  registry: Registry,
  resource: ResourceMetadata,
  page: CollectionPage,
  format: Format,
  hydraPrefix: boolean,
): unknown {
  if (format === 'json')
    return page.items.map((item) =>
      normalizeItem(registry, resource, item, 'json', 'getCollection', false, page.selected),
    );
  const v = vocabulary(hydraPrefix);
  const body: Record<string, unknown> = {
    '@context': `${registry.prefix}/contexts/${resource.shortName}`,
    '@id': page.collectionPath ?? resource.path,
    '@type': v.collection,
  };
  // Partial pagination has no total (API Platform: a PartialPaginatorInterface is not countable).
  if (page.totalItems !== undefined) body[v.totalItems] = page.totalItems;
  body[v.member] = page.items.map((item) =>
    normalizeItem(registry, resource, item, 'jsonld', 'getCollection', true, page.selected),
  );
  const view = page.mode === 'partial' ? partialPaginationView(page, v) : partialCollectionView(page, v);
  if (view) body[v.view] = view;
  const search = searchTemplate(registry, resource, page.collectionPath ?? resource.path, v);
  if (search) body[v.search] = search;
  return body;
}

/** Links of a page without a total: no first or last; next while pages come back full. */
function partialPaginationView(page: CollectionPage, v: Vocabulary): Record<string, unknown> {
  const link = (n: number) => `${page.requestPath}?${buildQueryString(page.query, page.pageParameter, n)}`;
  const view: Record<string, unknown> = { '@id': link(page.page), '@type': v.partialView };
  if (page.page !== 1) view[v.previous] = link(page.page - 1);
  if (page.itemsPerPage > 0 && page.items.length >= page.itemsPerPage) view[v.next] = link(page.page + 1);
  return view;
}

function partialCollectionView(page: CollectionPage, v: Vocabulary): Record<string, unknown> | undefined {
  const total = page.totalItems ?? 0;
  const lastPage =
    page.mode === 'all' ? 1 : page.itemsPerPage > 0 ? Math.max(1, Math.ceil(total / page.itemsPerPage)) : 1;
  const paginated = lastPage !== 1;
  const applied = [...page.query.keys()].some((k) => k !== page.pageParameter && k !== 'pagination');
  if (!applied && !paginated) return undefined;
  const link = (n: number | undefined) => {
    const qs = buildQueryString(page.query, page.pageParameter, n);
    return qs ? `${page.requestPath}?${qs}` : page.requestPath;
  };
  const view: Record<string, unknown> = { '@id': link(paginated ? page.page : undefined), '@type': v.partialView };
  if (paginated) {
    view[v.first] = link(1);
    view[v.last] = link(lastPage);
    if (page.page !== 1) view[v.previous] = link(page.page - 1);
    if (page.page < lastPage) view[v.next] = link(page.page + 1);
  }
  return view;
}

/** The variables a collection accepts: each filter's parameters, as its description lists them. */
export function searchVariables(
  registry: Registry,
  resource: ResourceMetadata,
): { variable: string; property: string | null }[] {
  return filterDescriptions(registry, resource).map((d) => ({ variable: d.variable, property: d.property }));
}

const templates = new WeakMap<ResourceMetadata, Map<string, Record<string, unknown> | undefined>>();

/** The IriTemplate of a collection: constant per resource, path and spelling, so built once. */
function searchTemplate(
  registry: Registry,
  resource: ResourceMetadata,
  path: string,
  v: Vocabulary,
): Record<string, unknown> | undefined {
  let byVocabulary = templates.get(resource);
  if (!byVocabulary) {
    byVocabulary = new Map();
    templates.set(resource, byVocabulary);
  }
  // Subresource paths differ per parent id: only the collection's own path is kept.
  const key = `${v.template} ${path === resource.path ? '' : path}`;
  const cached = byVocabulary.get(key);
  if (cached !== undefined || byVocabulary.has(key)) return cached;
  const built = buildSearchTemplate(registry, resource, path, v);
  if (path === resource.path) byVocabulary.set(key, built);
  return built;
}

function buildSearchTemplate(
  registry: Registry,
  resource: ResourceMetadata,
  path: string,
  v: Vocabulary,
): Record<string, unknown> | undefined {
  const variables = searchVariables(registry, resource);
  if (!variables.length) return undefined;
  return {
    '@type': v.iriTemplate,
    [v.template]: `${path}{?${variables.map((x) => x.variable).join(',')}}`,
    [v.variableRepresentation]: 'BasicRepresentation',
    [v.mapping]: variables.map((x) => ({
      '@type': 'IriTemplateMapping',
      variable: x.variable,
      property: x.property,
      required: false,
    })),
  };
}
