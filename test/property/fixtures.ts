import { createHash, randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { api, type ApiResponse } from '../support/http.js';

/** Shared expectations of the property suites, taken from docs/property-wire-contract.md. */

export const JSONLD = 'application/ld+json; charset=utf-8';
export const JSON_TYPE = 'application/json; charset=utf-8';
export const PROBLEM = 'application/problem+json; charset=utf-8';

export const HYDRA_DOC_REL = 'http://www.w3.org/ns/hydra/core#apiDocumentation';
export const docsUrl = (url: string): string => `${url}/api/docs.jsonld`;
/** The Link of every answer: the Hydra documentation and the Mercure hub (issue 31). */
export const docsLink = (url: string): string =>
  `<${docsUrl(url)}>; rel="${HYDRA_DOC_REL}",<${url}/.well-known/mercure>; rel="mercure"`;
export const errorLink = (url: string): string =>
  `${docsLink(url)},<http://www.w3.org/ns/hydra/error>; rel="http://www.w3.org/ns/json-ld#error"`;

export const NOT_FOUND = 'Not Found';
export const NO_KEY = 'Full authentication is required to access this resource.';
export const BAD_KEY = 'Invalid credentials.';
export const DENIED = 'Access Denied.';
export const NOT_ACCEPTABLE = (mime: string): string =>
  `Requested format "${mime}" is not supported. Supported MIME types are "application/ld+json", "application/json".`;
export const UNSUPPORTED_PATCH = (mime: string): string =>
  `The content-type "${mime}" is not supported. Supported MIME types are "application/merge-patch+json".`;
export const UNSUPPORTED_WRITE = (mime: string): string =>
  `The content-type "${mime}" is not supported. Supported MIME types are "application/ld+json", "application/json".`;
export const NO_CONTENT_TYPE = 'The "Content-Type" header must exist.';

/** Asserts the 3.x hydra:Error body (the default error format) and its headers. */
export function expectHydraError(res: ApiResponse, status: number, description?: string): void {
  expect({ status: res.status, contentType: res.headers.get('content-type') }).toEqual({ status, contentType: JSONLD });
  expect(res.body).toEqual({
    '@context': '/api/contexts/Error',
    '@type': 'hydra:Error',
    'hydra:title': 'An error occurred',
    'hydra:description': description ?? expect.any(String),
    status,
  });
}

/** Asserts the problem+json error body (for Accept: application/json or application/problem+json). */
export function expectProblem(res: ApiResponse, status: number, detail?: string): void {
  expect({ status: res.status, contentType: res.headers.get('content-type') }).toEqual({
    status,
    contentType: PROBLEM,
  });
  expect(res.body).toEqual({
    type: 'https://tools.ietf.org/html/rfc2616#section-10',
    title: 'An error occurred',
    detail: detail ?? expect.any(String),
    status,
  });
}

export interface Violation {
  readonly propertyPath: string;
  readonly message: string;
  readonly code: string;
}

const TYPE = 'ba785a8c-82cb-4283-967c-3cf342181b40';

export const violation = {
  notBlank: (propertyPath: string): Violation => ({
    propertyPath,
    message: 'This value should not be blank.',
    code: 'c1051bb4-d103-4f74-8988-acbcafc7fdc3',
  }),
  notNull: (propertyPath: string): Violation => ({
    propertyPath,
    message: 'This value should not be null.',
    code: 'ad32d13f-c3d4-423b-909a-857b961eb720',
  }),
  type: (propertyPath: string, type: 'int' | 'float' | 'string' | 'bool'): Violation => ({
    propertyPath,
    message: `This value should be of type ${type}.`,
    code: TYPE,
  }),
  choice: (propertyPath: string): Violation => ({
    propertyPath,
    message: 'The value you selected is not a valid choice.',
    code: '8e179f1b-97aa-4560-a02f-2a8b42e49df7',
  }),
  email: (propertyPath: string): Violation => ({
    propertyPath,
    message: 'This value is not a valid email address.',
    code: 'bd79c0ab-ddba-46cc-a703-a7a4b08de310',
  }),
  unique: (propertyPath: string): Violation => ({
    propertyPath,
    message: 'This value is already used.',
    code: '23bd9dbf-6b9b-41cd-a99e-4844bcf3077f',
  }),
  positiveOrZero: (propertyPath: string): Violation => ({
    propertyPath,
    message: 'This value should be either positive or zero.',
    code: 'ea4e51d1-3342-48bd-87f1-9e672cd90cad',
  }),
  lessThanOrEqual: (propertyPath: string, limit: string): Violation => ({
    propertyPath,
    message: `This value should be less than or equal to ${limit}.`,
    code: '30fbb013-d015-4232-8b3b-8f3be97a7e14',
  }),
  tooLong: (propertyPath: string, max: number): Violation => ({
    propertyPath,
    message: `This value is too long. It should have ${max} characters or less.`,
    code: 'd94b19cc-114f-4f44-9cc4-4138e80a87b9',
  }),
  invalidIri: (propertyPath: string, iri: string): Violation => ({
    propertyPath,
    message: `Invalid IRI "${iri}".`,
    code: TYPE,
  }),
  itemNotFound: (propertyPath: string, iri: string): Violation => ({
    propertyPath,
    message: `Item not found for "${iri}".`,
    code: TYPE,
  }),
  nested: (propertyPath: string): Violation => ({
    propertyPath,
    message: `Nested documents for attribute "${propertyPath}" are not allowed. Use IRIs instead.`,
    code: TYPE,
  }),
  syntax: (): Violation => ({ propertyPath: '', message: 'Syntax error', code: TYPE }),
  notObject: (): Violation => ({ propertyPath: '', message: 'This value should be of type object.', code: TYPE }),
};

/** A missing or null required value: the contract allows NotBlank or NotNull (strings: NotBlank). */
export const required = (propertyPath: string): Violation[] => [
  violation.notBlank(propertyPath),
  violation.notNull(propertyPath),
];

/** `path: message` lines as API Platform joins them (no `: ` prefix for the empty root path). */
export const describeViolations = (violations: readonly Violation[]): string =>
  violations.map((v) => (v.propertyPath ? `${v.propertyPath}: ${v.message}` : v.message)).join('\n');

function expectViolationEnvelope(res: ApiResponse): Violation[] {
  expect({ status: res.status, contentType: res.headers.get('content-type') }).toEqual({
    status: 400,
    contentType: JSONLD,
  });
  const body = res.body as Record<string, unknown>;
  expect(body).toEqual({
    '@context': '/api/contexts/ConstraintViolationList',
    '@type': 'ConstraintViolationList',
    'hydra:title': 'An error occurred',
    'hydra:description': expect.any(String),
    violations: expect.any(Array),
    status: 400,
  });
  const violations = body.violations as Violation[];
  expect(body['hydra:description']).toBe(describeViolations(violations));
  return violations;
}

/**
 * Asserts a 400 ConstraintViolationList with exactly one violation. `expected` is the violation,
 * or a list of acceptable alternatives where the contract leaves the choice open.
 */
export function expectViolation(res: ApiResponse, expected: Violation | readonly Violation[]): void {
  const violations = expectViolationEnvelope(res);
  expect(violations).toHaveLength(1);
  if (Array.isArray(expected)) expect(expected).toContainEqual(violations[0]);
  else expect(violations[0]).toEqual(expected);
}

/**
 * Asserts a 400 ConstraintViolationList whose violations (one or more, whatever their message)
 * all concern `propertyPath`: for inputs where the contract fixes the path but not the message.
 */
export function expectViolationAt(res: ApiResponse, propertyPath: string): void {
  const violations = expectViolationEnvelope(res);
  expect(violations.length).toBeGreaterThan(0);
  for (const v of violations) {
    expect(v).toEqual({ propertyPath, message: expect.any(String), code: expect.any(String) });
    expect(v.message).not.toBe('');
  }
}

/** Asserts a 400 ConstraintViolationList holding exactly these violations, in any order. */
export function expectViolations(res: ApiResponse, expected: readonly Violation[]): void {
  const violations = expectViolationEnvelope(res);
  const key = (v: Violation) => `${v.propertyPath}\u0001${v.message}`;
  expect([...violations].sort((a, b) => key(a).localeCompare(key(b)))).toEqual(
    [...expected].sort((a, b) => key(a).localeCompare(key(b))),
  );
}

/** Asserts the problem+json flavour of a violation list (Accept: application/json). */
export function expectProblemViolations(res: ApiResponse, expected: readonly Violation[]): void {
  expect({ status: res.status, contentType: res.headers.get('content-type') }).toEqual({
    status: 400,
    contentType: PROBLEM,
  });
  expect(res.body).toEqual({
    type: 'https://tools.ietf.org/html/rfc2616#section-10',
    title: 'An error occurred',
    detail: describeViolations(expected),
    violations: expected,
    status: 400,
  });
}

export const uniqueEmail = (label = 'user'): string => `${label}-${randomUUID().slice(0, 8)}@example.org`;

export const md5Etag = (text: string): string => `"${createHash('md5').update(text, 'utf8').digest('hex')}"`;

export interface ImmobilieBody {
  readonly [field: string]: unknown;
}

/** A valid create body for an Immobilie (all optional fields set), with overrides. */
export function immobilieBody(overrides: ImmobilieBody = {}): Record<string, unknown> {
  return {
    adresse: 'Lindenweg 4, 04109 Leipzig',
    wohnflaeche: 92.5,
    nutzflaeche: 15,
    zimmer: 4,
    typ: 'haus',
    kaufpreis: 420000,
    bundesland: '/api/bundeslands/13',
    heizungstyp: '/api/heizungstyps/2',
    ...overrides,
  };
}

export type Item = Record<string, unknown> & { '@id': string; id: number };

/** POSTs an Immobilie and insists on 201; returns the created item. */
export async function createImmobilie(url: string, key: string, overrides: ImmobilieBody = {}): Promise<Item> {
  const res = await api(url, '/api/immobilies', { method: 'POST', key, body: immobilieBody(overrides) });
  expect(res.status, res.text).toBe(201);
  return res.body as Item;
}

/** POSTs a body to a collection with the given key and insists on 201. */
export async function createItem(
  url: string,
  path: string,
  key: string | undefined,
  body: Record<string, unknown>,
): Promise<Item> {
  const res = await api(url, path, { method: 'POST', key, body });
  expect(res.status, res.text).toBe(201);
  return res.body as Item;
}

/** The `hydra:member` (or bare array) of a collection response, as items. */
export function members(res: ApiResponse): Item[] {
  const body = res.body as Record<string, unknown> | unknown[];
  return (Array.isArray(body) ? body : (body['hydra:member'] as unknown[])) as Item[];
}

export const ids = (items: readonly { id: number }[]): number[] => items.map((i) => i.id);

/**
 * The `hydra:search` variables of /api/immobilies as API Platform lists them, filter by filter in
 * declaration order: SearchFilter (exact adds `x[]`), RangeFilter, DateFilter, ExistsFilter,
 * OrderFilter, PropertyFilter (whose mapping has `property: null`).
 */
const RANGE = ['between', 'gt', 'gte', 'lt', 'lte'];
const DATES = ['before', 'strictly_before', 'after', 'strictly_after'];
export const IMMOBILIE_SEARCH_VARIABLES: readonly (readonly [string, string | null])[] = [
  ...['typ', 'bundesland', 'heizungstyp', 'verwalter'].flatMap(
    (p) =>
      [
        [p, p],
        [`${p}[]`, p],
      ] as const,
  ),
  ['adresse', 'adresse'],
  ...['kaufpreis', 'wohnflaeche', 'nutzflaeche', 'zimmer', 'preisProQuadratmeter'].flatMap((p) =>
    RANGE.map((op) => [`${p}[${op}]`, p] as const),
  ),
  ...['createdAt', 'updatedAt'].flatMap((p) => DATES.map((op) => [`${p}[${op}]`, p] as const)),
  ...['heizungstyp', 'wohnflaeche', 'nutzflaeche', 'zimmer', 'kaufpreis'].map((p) => [`exists[${p}]`, p] as const),
  ...[
    'id',
    'kaufpreis',
    'wohnflaeche',
    'zimmer',
    'nutzflaeche',
    'adresse',
    'typ',
    'preisProQuadratmeter',
    'createdAt',
    'updatedAt',
  ].map((p) => [`order[${p}]`, p] as const),
  ['properties[]', null],
];

/** `createdAt` / `updatedAt` as the server writes them (RFC 3339, seconds, +00:00). */
export const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/;
