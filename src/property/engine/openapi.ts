import {
  WRITE_OPERATIONS,
  anyone,
  authenticated,
  type OperationDefinition,
  type OperationName,
  OPERATION_METHOD,
} from './define.js';
import { mustBeSent } from './hydra-docs.js';
import { FORMAT_MIME, OUTPUT_FORMATS } from './negotiation.js';
import { filterDescriptions } from './filters.js';
import { PAGINATION_PARAMETER, PARTIAL_PARAMETER } from './operations.js';
import type { FieldMetadata, LinkMetadata, Registry, ResourceMetadata } from './registry.js';

/**
 * The OpenAPI 3.1 document (`/api/docs.json`, `/api/docs.jsonopenapi`) in the shape API Platform
 * 3.x generates: paths with the route prefix, operation ids derived from the route, the sentences
 * as summaries, one schema per output format (`X` for plain JSON, `X.jsonld` for JSON-LD), Hydra
 * collections for JSON-LD and bare arrays for JSON. Where API Platform would document a default
 * that this service does not have (422 for invalid input), the document says what the engine
 * really answers.
 */

type Json = Record<string, unknown>;

const API_KEY_HEADER = 'X-API-KEY';
const SECURITY_SCHEME = 'apiKey';
const MERGE_PATCH = 'application/merge-patch+json';
const PROBLEM = 'application/problem+json';
const JSONLD = FORMAT_MIME.jsonld;

/** Pagination as the engine is configured; the defaults are the service's own defaults. */
export interface OpenApiOptions {
  readonly defaultItemsPerPage?: number;
  readonly maximumItemsPerPage?: number;
  readonly clientEnabled?: boolean;
  readonly clientPartial?: boolean;
  readonly unpaginatedMaximum?: number;
  /** The 4.x wire: body violations answer 422 (the 3.x wire: 400). */
  readonly unprocessableEntity?: boolean;
}

interface Pagination {
  readonly defaultItemsPerPage: number;
  readonly maximumItemsPerPage: number;
  readonly clientEnabled: boolean;
  readonly clientPartial: boolean;
  readonly unpaginatedMaximum: number;
  /** Not pagination, but passed along with it to every operation: body violations answer 422. */
  readonly unprocessableEntity: boolean;
}

/** OpenAPI summaries of API Platform; note DELETE says "Removes" here but "Deletes" in Hydra. */
const SUMMARIES: Readonly<Record<OperationName, (shortName: string) => string>> = {
  getCollection: (s) => `Retrieves the collection of ${s} resources.`,
  get: (s) => `Retrieves a ${s} resource.`,
  post: (s) => `Creates a ${s} resource.`,
  put: (s) => `Replaces the ${s} resource.`,
  patch: (s) => `Updates the ${s} resource.`,
  delete: (s) => `Removes the ${s} resource.`,
};

const OPERATION_ID_SUFFIX: Readonly<Record<OperationName, string>> = {
  getCollection: 'get_collection',
  post: 'post',
  get: 'id_get',
  put: 'id_put',
  patch: 'id_patch',
  delete: 'id_delete',
};

/** Method order of an OpenAPI path item, as API Platform writes it. */
const COLLECTION_METHODS: readonly [OperationName, string][] = [
  ['getCollection', 'get'],
  ['post', 'post'],
];
const ITEM_METHODS: readonly [OperationName, string][] = [
  ['get', 'get'],
  ['put', 'put'],
  ['delete', 'delete'],
  ['patch', 'patch'],
];

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });

export function openApiDocument(registry: Registry, options: OpenApiOptions = {}): object {
  const pagination: Pagination = {
    defaultItemsPerPage: options.defaultItemsPerPage ?? 30,
    maximumItemsPerPage: options.maximumItemsPerPage ?? 100,
    clientEnabled: options.clientEnabled ?? false,
    clientPartial: options.clientPartial ?? false,
    unpaginatedMaximum: options.unpaginatedMaximum ?? options.maximumItemsPerPage ?? 100,
    unprocessableEntity: options.unprocessableEntity ?? false,
  };
  const paths: Json = {};
  for (const resource of registry.resources) {
    const collection = pathItem(registry, resource, COLLECTION_METHODS, pagination);
    if (collection) paths[resource.path] = collection;
    const item = pathItem(registry, resource, ITEM_METHODS, pagination);
    if (item) paths[`${resource.path}/{id}`] = item;
    for (const link of resource.links) {
      if (resource.operations.has('getCollection'))
        paths[link.path] = { get: subresourceOperation(registry, resource, link, pagination) };
    }
  }

  const schemas: Json = { ...errorSchemas(registry.prefix) };
  for (const resource of registry.resources) Object.assign(schemas, resourceSchemas(registry, resource));

  return {
    openapi: '3.1.0',
    info: { title: registry.title, description: registry.description, version: registry.version },
    servers: [{ url: '/', description: '' }],
    paths,
    components: {
      schemas: Object.fromEntries(
        Object.keys(schemas)
          .sort()
          .map((name) => [name, schemas[name]]),
      ),
      headers: RATE_LIMIT_HEADERS,
      securitySchemes: {
        [SECURITY_SCHEME]: {
          type: 'apiKey',
          description: `Value for the ${API_KEY_HEADER} header parameter.`,
          name: API_KEY_HEADER,
          in: 'header',
        },
      },
    },
    security: [{ [SECURITY_SCHEME]: [] }],
    tags: registry.resources.map((r) => ({
      name: r.shortName,
      description: r.description || `Resource '${r.shortName}' operations.`,
    })),
  };
}

function pathItem(
  registry: Registry,
  resource: ResourceMetadata,
  methods: readonly [OperationName, string][],
  pagination: Pagination,
): Json | undefined {
  const item: Json = {};
  for (const [name, method] of methods) {
    const definition = resource.operations.get(name);
    if (definition) item[method] = operation(registry, resource, name, definition, pagination);
  }
  return Object.keys(item).length ? item : undefined;
}

/** `_api_/immobilies/{id}_get` normalised the way API Platform turns route names into operation ids. */
function operationId(registry: Registry, resource: ResourceMetadata, name: OperationName): string {
  const route = resource.path.slice(registry.prefix.length).replace(/\//g, '');
  return `api_${route}_${OPERATION_ID_SUFFIX[name]}`;
}

function operation(
  registry: Registry,
  resource: ResourceMetadata,
  name: OperationName,
  definition: OperationDefinition,
  pagination: Pagination,
): Json {
  const summary = SUMMARIES[name](resource.shortName);
  const op: Json = {
    operationId: operationId(registry, resource, name),
    tags: [resource.shortName],
    responses: responses(registry, resource, name, definition, pagination.unprocessableEntity),
    summary,
    description: definition.description ?? summary,
    parameters:
      name === 'getCollection'
        ? collectionParameters(registry, resource, pagination)
        : name === 'post'
          ? []
          : [idParameter(resource)],
  };
  if (name === 'post' || name === 'put' || name === 'patch') op.requestBody = requestBody(resource, name);
  // Anonymous callers are let in here, yet a key still matters when one is sent (it can widen
  // what the caller may do, and an unknown key is refused): the empty requirement makes the key
  // optional rather than dropping it, so Swagger UI keeps sending it once the user authorized.
  if (definition.security(null)) op.security = [{}, { [SECURITY_SCHEME]: [] }];
  return op;
}

function requestBody(resource: ResourceMetadata, name: 'post' | 'put' | 'patch'): Json {
  const s = resource.shortName;
  const description = `The ${name === 'post' ? 'new' : 'updated'} ${s} resource`;
  const content: Json =
    name === 'patch' ? { [MERGE_PATCH]: { schema: ref(`${s}.jsonMergePatch`) } } : bodyContent(resource, false);
  return { description, content, required: true };
}

/** JSON-LD and plain JSON, in the engine's order of preference. */
function bodyContent(resource: ResourceMetadata, collection: boolean): Json {
  const content: Json = {};
  for (const format of OUTPUT_FORMATS) {
    const jsonld = format === 'jsonld';
    const item = ref(jsonld ? `${resource.shortName}.jsonld` : resource.shortName);
    content[FORMAT_MIME[format]] = {
      schema: !collection ? item : jsonld ? hydraCollectionSchema(resource) : { type: 'array', items: item },
    };
  }
  return content;
}

function responses(
  registry: Registry,
  resource: ResourceMetadata,
  name: OperationName,
  definition: OperationDefinition,
  unprocessable = false,
): Json {
  const s = resource.shortName;
  const out: Json = {};
  const location = (description: string): Json => ({
    description,
    schema: { type: 'string', format: 'iri-reference' },
  });
  switch (name) {
    case 'getCollection':
      out['200'] = { description: `${s} collection`, content: bodyContent(resource, true) };
      out['400'] = errorResponse(
        'Invalid pagination (page below 1, itemsPerPage below 0, too many items without pagination) or an unusable filter value (a violation per parameter)',
      );
      break;
    case 'get':
      out['200'] = { description: `${s} resource`, content: bodyContent(resource, false) };
      break;
    case 'post':
      if (!resource.persisted) {
        out['200'] = {
          description: `${s} computed from the request (nothing is stored)`,
          content: bodyContent(resource, false),
        };
        break;
      }
      out['201'] = {
        description: `${s} resource created`,
        headers: {
          Location: location('IRI of the created resource'),
          'Content-Location': location('IRI of the created resource'),
        },
        content: bodyContent(resource, false),
      };
      break;
    case 'put':
    case 'patch':
      out['200'] = {
        description: `${s} resource updated`,
        headers: { 'Content-Location': location('IRI of the resource') },
        content: bodyContent(resource, false),
      };
      break;
    case 'delete':
      out['204'] = { description: `${s} resource deleted` };
      break;
  }
  if (WRITE_OPERATIONS.includes(name)) {
    if (unprocessable) {
      out['400'] = errorResponse('Invalid input: the body is not JSON (a Syntax error violation)', true);
      out['422'] = errorResponse('Unprocessable entity: the body breaks the constraints (a violation per field)', true);
    } else out['400'] = errorResponse('Invalid input', true);
  }

  out['401'] = errorResponse(
    definition.security(null)
      ? `Unknown ${API_KEY_HEADER} (the header may be left out)`
      : `Missing or unknown ${API_KEY_HEADER}`,
  );
  if (mayForbid(resource, name, definition)) out['403'] = errorResponse('Access Denied: the caller may not do this');
  if (name !== 'getCollection' && name !== 'post') {
    out['404'] = errorResponse(
      resource.scope ? 'Resource not found (or outside what the caller may see)' : 'Resource not found',
    );
  }
  out['406'] = errorResponse('Not acceptable: the Accept header names no supported format');
  if (name === 'delete' && isReferenced(registry, resource))
    out['409'] = errorResponse('The resource is still referenced by other resources');
  if (WRITE_OPERATIONS.includes(name)) {
    out['413'] = errorResponse('Request body too large');
    const accepted = name === 'patch' ? [MERGE_PATCH] : OUTPUT_FORMATS.map((f) => FORMAT_MIME[f]);
    out['415'] = errorResponse(`Unsupported or missing Content-Type (accepted: ${accepted.join(', ')})`);
  }
  out['429'] = rateLimitedResponse(name === 'post' && resource.persisted && Boolean(definition.security(null)));
  return out;
}

/**
 * Every API request counts against its client address and, with a key, against the key (issue 13
 * item 14, `security/rate-limits.ts`); an anonymous POST that registers counts against the hourly
 * registration budget too. The answer names the budget and when to retry.
 */
function rateLimitedResponse(registers: boolean): Json {
  const budgets = `requests per minute per ${API_KEY_HEADER} and per client address${registers ? ', self-registrations per hour per client address' : ''}`;
  return {
    ...errorResponse(`Too Many Requests: a request budget is used up (${budgets}); retry after Retry-After seconds`),
    headers: Object.fromEntries(
      Object.keys(RATE_LIMIT_HEADERS).map((name) => [name, { $ref: `#/components/headers/${name}` }]),
    ),
  };
}

const integerHeader = (description: string): Json => ({ description, schema: { type: 'integer', minimum: 0 } });

/** The headers of a 429 (documented once under `components.headers`). */
const RATE_LIMIT_HEADERS: Json = {
  'Retry-After': integerHeader('Seconds until the exhausted budget starts a new window'),
  'RateLimit-Limit': integerHeader('Requests allowed in the window of the tightest budget the request counted against'),
  'RateLimit-Remaining': integerHeader('Requests left in that window'),
  'RateLimit-Reset': integerHeader('Seconds until that window starts anew'),
};

/**
 * Whether some caller may be refused with 403. Rules are functions and roles belong to the
 * resources, so this is judged from the shape of the definition: the two engine rules that admit
 * every caller (or every authenticated one) cannot refuse, anything else might, as may an item
 * check or a field that only some callers may set.
 */
function mayForbid(resource: ResourceMetadata, name: OperationName, definition: OperationDefinition): boolean {
  if (definition.security !== anyone && definition.security !== authenticated) return true;
  if (definition.securityItem) return true;
  return WRITE_OPERATIONS.includes(name) && resource.fields.some((f) => f.writable && f.writeAccess !== undefined);
}

function isReferenced(registry: Registry, resource: ResourceMetadata): boolean {
  return registry.resources.some((r) =>
    r.fields.some((f) => f.kind === 'ref' && f.target === resource.shortName && f.onDelete !== 'cascade'),
  );
}

function errorResponse(description: string, violations = false): Json {
  const name = violations ? 'ConstraintViolationList' : 'Error';
  return { description, content: { [JSONLD]: { schema: ref(`${name}.jsonld`) }, [PROBLEM]: { schema: ref(name) } } };
}

function queryParameter(name: string, description: string, schema: Json, explode = false): Json {
  return { name, in: 'query', description, required: false, schema, style: 'form', explode };
}

function idParameter(resource: ResourceMetadata): Json {
  return {
    name: 'id',
    in: 'path',
    description: `${resource.shortName} identifier`,
    required: true,
    schema: { type: 'string' },
    style: 'simple',
    explode: false,
  };
}

function collectionParameters(registry: Registry, resource: ResourceMetadata, pagination: Pagination): Json[] {
  const parameters = [
    queryParameter('page', 'The collection page number', { type: 'integer', default: 1, minimum: 1 }),
    queryParameter('itemsPerPage', 'The number of items per page', {
      type: 'integer',
      default: pagination.defaultItemsPerPage,
      minimum: 0,
      maximum: pagination.maximumItemsPerPage,
    }),
    ...clientPaginationParameters(pagination),
  ];
  for (const d of filterDescriptions(registry, resource))
    parameters.push(queryParameter(d.variable, d.description, d.schema, d.isCollection));
  return parameters;
}

/** `pagination` and `partial`, documented only when the configuration lets clients use them. */
function clientPaginationParameters(pagination: Pagination): Json[] {
  const out: Json[] = [];
  if (pagination.clientEnabled) {
    out.push(
      queryParameter(
        PAGINATION_PARAMETER,
        `Enable or disable pagination (false: every item in one response, at most ${pagination.unpaginatedMaximum})`,
        { type: 'boolean' },
      ),
    );
  }
  if (pagination.clientPartial) {
    out.push(
      queryParameter(
        PARTIAL_PARAMETER,
        'Enable or disable partial pagination (true: no total, no last page; cheaper on large collections)',
        { type: 'boolean' },
      ),
    );
  }
  return out;
}

/** The GET operation of a subresource collection (`/api/users/{id}/immobilies`). */
function subresourceOperation(
  registry: Registry,
  resource: ResourceMetadata,
  link: LinkMetadata,
  pagination: Pagination,
): Json {
  const definition = resource.operations.get('getCollection') as OperationDefinition;
  const route = link.path.slice(registry.prefix.length).replace(/[/{}]/g, '');
  const summary = SUMMARIES.getCollection(resource.shortName);
  return {
    operationId: `api_${route}_get_collection`,
    tags: [resource.shortName],
    responses: {
      ...responses(registry, resource, 'getCollection', definition),
      '404': errorResponse(`${link.from} not found (or outside what the caller may see)`),
    },
    summary,
    description: `The ${resource.shortName} resources of one ${link.from}, filtered and paginated like the collection.`,
    parameters: [
      {
        name: 'id',
        in: 'path',
        description: `${link.from} identifier`,
        required: true,
        schema: { type: 'string' },
        style: 'simple',
        explode: false,
      },
      ...collectionParameters(registry, resource, pagination),
    ],
  };
}

const iriReference = { type: 'string', format: 'iri-reference' } as const;

/** A page of a Hydra collection (3.x spelling); `hydra:search` only where filters exist. */
function hydraCollectionSchema(resource: ResourceMetadata): Json {
  const properties: Json = {
    '@context': { type: 'string', readOnly: true },
    '@id': { ...iriReference, readOnly: true },
    '@type': { type: 'string', readOnly: true, example: 'hydra:Collection' },
    'hydra:totalItems': { type: 'integer', minimum: 0, description: 'Absent in partial pagination (see hydra:view)' },
    'hydra:member': { type: 'array', items: ref(`${resource.shortName}.jsonld`) },
    'hydra:view': {
      type: 'object',
      description: 'Present when the collection spans several pages or the request had query parameters',
      properties: {
        '@id': iriReference,
        '@type': { type: 'string', example: 'hydra:PartialCollectionView' },
        'hydra:first': iriReference,
        'hydra:last': iriReference,
        'hydra:previous': iriReference,
        'hydra:next': iriReference,
      },
    },
  };
  if (resource.filters.length) {
    properties['hydra:search'] = {
      type: 'object',
      properties: {
        '@type': { type: 'string', example: 'hydra:IriTemplate' },
        'hydra:template': { type: 'string' },
        'hydra:variableRepresentation': { type: 'string', example: 'BasicRepresentation' },
        'hydra:mapping': {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              '@type': { type: 'string', example: 'IriTemplateMapping' },
              variable: { type: 'string' },
              property: { type: ['string', 'null'] },
              required: { type: 'boolean' },
            },
          },
        },
      },
    };
  }
  return { type: 'object', properties, required: ['hydra:member'] };
}

function isDocumented(field: FieldMetadata): boolean {
  return field.readable || field.writable;
}

function propertySchema(registry: Registry, field: FieldMetadata): Json {
  const p: Json = {};
  switch (field.kind) {
    case 'id':
    case 'integer':
      p.type = 'integer';
      break;
    case 'number':
      p.type = 'number';
      break;
    case 'boolean':
      p.type = 'boolean';
      break;
    case 'enum':
      p.type = 'string';
      p.enum = [...(field.values ?? [])];
      break;
    case 'ref':
      Object.assign(p, iriReference);
      break;
    case 'string':
    case 'secret':
      p.type = 'string';
      if (field.format) p.format = field.format;
      break;
    case 'object':
    case 'array':
      Object.assign(p, field.schema ?? { type: field.kind });
      break;
    case 'datetime':
      p.type = 'string';
      p.format = 'date-time';
      break;
  }
  if (field.minimum !== undefined) p.minimum = field.minimum;
  if (field.maximum !== undefined) p.maximum = field.maximum;
  if (field.maxLength !== undefined) p.maxLength = field.maxLength;
  if (!field.writable) p.readOnly = true;
  else if (!field.readable) p.writeOnly = true;
  const description =
    field.description ??
    (field.kind === 'secret'
      ? `Returned only in the response to ${(field.readOn ?? []).map((op) => OPERATION_METHOD[op]).join(', ')}.`
      : undefined);
  if (description) p.description = description;
  if (field.example !== undefined) p.example = field.example;
  else if (field.kind === 'ref') p.example = `${registry.byShortName(field.target as string)?.path ?? ''}/1`;
  return p;
}

function resourceSchemas(registry: Registry, resource: ResourceMetadata): Json {
  const s = resource.shortName;
  const fields = resource.fields.filter(isDocumented);
  const properties = Object.fromEntries(fields.map((f) => [f.name, propertySchema(registry, f)]));
  const required = fields.filter((f) => f.writable && mustBeSent(f)).map((f) => f.name);
  const object = (props: Json, withRequired: boolean): Json => {
    const schema: Json = { type: 'object', description: resource.description, properties: props };
    if (withRequired && required.length) schema.required = required;
    return schema;
  };
  const jsonldHead: Json = {
    '@context': {
      readOnly: true,
      oneOf: [
        { type: 'string' },
        {
          type: 'object',
          properties: {
            '@vocab': { type: 'string' },
            hydra: { type: 'string', enum: ['http://www.w3.org/ns/hydra/core#'] },
          },
          required: ['@vocab', 'hydra'],
          additionalProperties: true,
        },
      ],
    },
    '@id': { readOnly: true, type: 'string' },
    '@type': { readOnly: true, type: 'string' },
  };
  const schemas: Json = {
    [s]: object(properties, true),
    [`${s}.jsonld`]: object({ ...jsonldHead, ...properties }, true),
  };
  // A merge patch names only what changes, so nothing in it is required.
  if (resource.operations.has('patch')) schemas[`${s}.jsonMergePatch`] = object(properties, false);
  return schemas;
}

function errorSchemas(prefix: string): Json {
  const string = { type: 'string' };
  const status = { type: 'integer', description: 'The HTTP status code' };
  const title = { type: 'string', example: 'An error occurred' };
  const violations = { type: 'array', items: ref('ConstraintViolation') };
  return {
    Error: {
      type: 'object',
      description: 'An error as RFC 7807 problem details (Accept: application/json or application/problem+json)',
      properties: { type: string, title, detail: string, status },
      required: ['type', 'title', 'detail', 'status'],
    },
    'Error.jsonld': {
      type: 'object',
      description: 'An error as a Hydra error (the default)',
      properties: {
        '@context': { type: 'string', example: `${prefix}/contexts/Error` },
        '@type': { type: 'string', example: 'hydra:Error' },
        'hydra:title': title,
        'hydra:description': string,
        status,
      },
      required: ['@context', '@type', 'hydra:title', 'hydra:description', 'status'],
    },
    ConstraintViolation: {
      type: 'object',
      description: 'A constraint violation',
      properties: {
        propertyPath: { type: 'string', description: 'The property path of the violation' },
        message: { type: 'string', description: 'The message associated with the violation' },
        code: { type: 'string', description: 'The code of the violated constraint (a Symfony constraint UUID)' },
        hint: { type: 'string' },
      },
      required: ['propertyPath', 'message', 'code'],
    },
    ConstraintViolationList: {
      type: 'object',
      description: 'Invalid input as RFC 7807 problem details with the violations',
      properties: {
        type: string,
        title,
        detail: { type: 'string', description: 'One line per violation: "<propertyPath>: <message>"' },
        violations,
        status,
      },
      required: ['type', 'title', 'detail', 'violations', 'status'],
    },
    'ConstraintViolationList.jsonld': {
      type: 'object',
      description: 'Invalid input as a Hydra constraint violation list (the default)',
      properties: {
        '@context': { type: 'string', example: `${prefix}/contexts/ConstraintViolationList` },
        '@type': { type: 'string', example: 'ConstraintViolationList' },
        'hydra:title': title,
        'hydra:description': { type: 'string', description: 'One line per violation: "<propertyPath>: <message>"' },
        violations,
        status,
      },
      required: ['@context', '@type', 'hydra:title', 'hydra:description', 'violations', 'status'],
    },
  };
}
