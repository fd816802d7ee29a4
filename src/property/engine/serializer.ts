import { randomBytes } from 'node:crypto';
import type { Item, OperationName } from './define.js';
import { itemIri } from './iri.js';
import type { Format } from './negotiation.js';
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
      }));
    plans.set(resource, plan);
  }
  return plan;
}

/** The readable fields of an item, nulls omitted, references as IRIs. */
function fieldsOf(registry: Registry, resource: ResourceMetadata, item: Item, operation: OperationName, out: Record<string, unknown>): Record<string, unknown> {
  for (const field of outputPlan(registry, resource)) {
    if (field.readOn && !field.readOn.includes(operation)) continue;
    const value = item[field.name];
    if (value === null || value === undefined) continue;
    out[field.name] = field.refPath === undefined ? value : `${field.refPath}/${value as number}`;
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

export function normalizeItem(registry: Registry, resource: ResourceMetadata, item: Item, format: Format, operation: OperationName, embedded = false): Record<string, unknown> {
  if (format === 'json') return fieldsOf(registry, resource, item, operation, {});
  const head: Record<string, unknown> = embedded
    ? { '@id': idOf(resource, item), '@type': resource.shortName }
    : { '@context': `${registry.prefix}/contexts/${resource.shortName}`, '@id': idOf(resource, item), '@type': resource.shortName };
  return fieldsOf(registry, resource, item, operation, head);
}

export interface CollectionPage {
  readonly items: readonly Item[];
  readonly totalItems: number;
  readonly page: number;
  readonly itemsPerPage: number;
  /** The request path (with any format suffix) and its parsed query. */
  readonly requestPath: string;
  readonly query: Query;
  readonly pageParameter: string;
}

export function normalizeCollection(registry: Registry, resource: ResourceMetadata, page: CollectionPage, format: Format, hydraPrefix: boolean): unknown {
  if (format === 'json') return page.items.map((item) => normalizeItem(registry, resource, item, 'json', 'getCollection'));
  const v = vocabulary(hydraPrefix);
  const body: Record<string, unknown> = {
    '@context': `${registry.prefix}/contexts/${resource.shortName}`,
    '@id': resource.path,
    '@type': v.collection,
    [v.totalItems]: page.totalItems,
    [v.member]: page.items.map((item) => normalizeItem(registry, resource, item, 'jsonld', 'getCollection', true)),
  };
  const view = partialCollectionView(page, v);
  if (view) body[v.view] = view;
  const search = searchTemplate(resource, v);
  if (search) body[v.search] = search;
  return body;
}

function partialCollectionView(page: CollectionPage, v: Vocabulary): Record<string, unknown> | undefined {
  const lastPage = page.itemsPerPage > 0 ? Math.max(1, Math.ceil(page.totalItems / page.itemsPerPage)) : 1;
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

/** The variables a collection accepts: each filter as `x` and `x[]`, then `order[field]`. */
export function searchVariables(resource: ResourceMetadata): { variable: string; property: string }[] {
  const out: { variable: string; property: string }[] = [];
  for (const filter of resource.filters) {
    out.push({ variable: filter.parameter, property: filter.field.name }, { variable: `${filter.parameter}[]`, property: filter.field.name });
  }
  for (const field of resource.orderFields) out.push({ variable: `order[${field.name}]`, property: field.name });
  return out;
}

const templates = new WeakMap<ResourceMetadata, Map<string, Record<string, unknown> | undefined>>();

/** The IriTemplate of a collection: constant per resource and spelling, so built once. */
function searchTemplate(resource: ResourceMetadata, v: Vocabulary): Record<string, unknown> | undefined {
  let byVocabulary = templates.get(resource);
  if (!byVocabulary) {
    byVocabulary = new Map();
    templates.set(resource, byVocabulary);
  }
  if (!byVocabulary.has(v.template)) byVocabulary.set(v.template, buildSearchTemplate(resource, v));
  return byVocabulary.get(v.template);
}

function buildSearchTemplate(resource: ResourceMetadata, v: Vocabulary): Record<string, unknown> | undefined {
  const variables = searchVariables(resource);
  if (!variables.length) return undefined;
  return {
    '@type': v.iriTemplate,
    [v.template]: `${resource.path}{?${variables.map((x) => x.variable).join(',')}}`,
    [v.variableRepresentation]: 'BasicRepresentation',
    [v.mapping]: variables.map((x) => ({ '@type': 'IriTemplateMapping', variable: x.variable, property: x.property, required: false })),
  };
}
