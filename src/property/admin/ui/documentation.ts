import {
  getDocumentationUrlFromHeaders,
  parseHydraDocumentation,
  type Field,
  type Operation,
} from '@api-platform/api-doc-parser';
import { withApiKey } from './api-key.js';

/**
 * The API's Hydra documentation as api-doc-parser reads it, with two additions:
 *
 * - **Enums.** The docs describe an enum as API Platform does, `xmls:string` first (the type
 *   api-doc-parser reads) plus an `rdfs:Datatype` with `owl:oneOf` listing the values. api-doc-parser
 *   0.16's Hydra parser keeps only the first range and never sets `Field.enum` (only its OpenAPI
 *   parser does, from `enum`), so HydraAdmin would offer a free-text box. The values are read here
 *   from the same docs and set as `Field.enum` in the shape the OpenAPI parser gives it (humanized
 *   label → value), which HydraAdmin's guessers turn into a select (inputs, filters) and a label
 *   (fields). Decision 0022.
 * - **PATCH before PUT.** Where a resource offers both, the admin edits with PATCH
 *   (`application/merge-patch+json`), which changes only what it sends. HydraAdmin takes the first
 *   "edit" operation it finds, and the Hydra docs list PUT first, as API Platform does.
 */
export async function parseDocumentation(entrypointUrl: string) {
  const parsed = await parseHydraDocumentation(entrypointUrl, { headers: () => withApiKey(undefined) });
  const enums = await enumsOf(getDocumentationUrlFromHeaders(parsed.response.headers));
  for (const resource of parsed.api.resources ?? []) {
    resource.operations?.sort((a, b) => editRank(a) - editRank(b));
    for (const field of resource.fields ?? []) addEnum(field, enums);
  }
  return parsed;
}

function editRank(operation: Operation): number {
  return operation.type === 'edit' && operation.method?.toUpperCase() === 'PATCH' ? 0 : 1;
}

function addEnum(field: Field, enums: ReadonlyMap<string, readonly string[]>): void {
  const values = field.id ? enums.get(field.id) : undefined;
  if (values && !field.enum) field.enum = Object.fromEntries(values.map((value) => [humanize(value), value]));
}

/** As api-doc-parser's OpenAPI parser labels enum values: `grundstueck` → `Grundstueck`, `a_b` → `A b`. */
function humanize(value: string): string {
  const words = value.replace(/_/g, ' ').toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

interface CompactProperty {
  readonly '@id'?: string;
  readonly range?: unknown;
}

/**
 * Expanded property IRI → allowed values, for every supported property whose range lists an
 * `owl:oneOf`. The docs are read as this API writes them (compact JSON-LD, one context), so no
 * second JSON-LD expansion is needed; the browser answers the request from its HTTP cache when it
 * can (the docs carry an ETag).
 */
async function enumsOf(docsUrl: string): Promise<Map<string, readonly string[]>> {
  const out = new Map<string, readonly string[]>();
  const response = await fetch(docsUrl, { headers: withApiKey({ Accept: 'application/ld+json' }) });
  if (!response.ok) return out;
  const docs = (await response.json()) as {
    'hydra:supportedClass'?: { 'hydra:supportedProperty'?: { 'hydra:property'?: CompactProperty }[] }[];
  };
  for (const supportedClass of docs['hydra:supportedClass'] ?? []) {
    for (const supported of supportedClass['hydra:supportedProperty'] ?? []) {
      const property = supported['hydra:property'];
      const ranges = Array.isArray(property?.range) ? property.range : [property?.range];
      for (const range of ranges as { 'owl:oneOf'?: { '@list'?: unknown[] } }[]) {
        const values = range?.['owl:oneOf']?.['@list'];
        if (property?.['@id'] && Array.isArray(values))
          out.set(new URL(property['@id'], docsUrl).href, values.map(String));
      }
    }
  }
  return out;
}
