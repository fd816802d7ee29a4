import { propertyIri } from './hydra-docs.js';
import type { Registry } from './registry.js';

/** The entrypoint (`GET /api`): one key per resource with a collection, sorted as API Platform sorts. */
export function entrypointDocument(registry: Registry): Record<string, unknown> {
  const doc: Record<string, unknown> = {
    '@context': `${registry.prefix}/contexts/Entrypoint`,
    '@id': registry.prefix,
    '@type': 'Entrypoint',
  };
  const entries = registry.resources
    .filter((r) => r.hasCollectionOperations)
    .map((r) => [r.entrypointKey, r.path] as const);
  for (const [key, path] of [...entries].sort(([a], [b]) => a.localeCompare(b))) doc[key] = path;
  return doc;
}

/**
 * A JSON-LD context document. `@vocab` is the absolute docs URL plus `#` (clients match expanded
 * IRIs byte for byte), `hydra` the core namespace; no remote context is referenced, so no client
 * ever has to reach the internet.
 */
export function contextDocument(
  registry: Registry,
  name: string,
  docsUrl: string,
): Record<string, unknown> | undefined {
  const base = { '@vocab': `${docsUrl}#`, hydra: 'http://www.w3.org/ns/hydra/core#' };
  if (name === 'Entrypoint') {
    const ctx: Record<string, unknown> = { ...base };
    for (const r of registry.resources.filter((x) => x.hasCollectionOperations))
      ctx[r.entrypointKey] = { '@id': `Entrypoint/${r.entrypointKey}`, '@type': '@id' };
    return { '@context': ctx };
  }
  if (name === 'Error' || name === 'ConstraintViolationList' || name === 'ConstraintViolation')
    return { '@context': base };
  const resource = registry.byShortName(name);
  if (!resource) return undefined;
  const ctx: Record<string, unknown> = { ...base };
  for (const field of resource.fields) {
    if (field.kind === 'id' || !field.readable) continue;
    // Relative IRIs resolve against @vocab (`docs.jsonld#`), as the documentation's `#Class/field` do.
    const iri = propertyIri(resource, field).replace(/^#/, '');
    ctx[field.name] = field.kind === 'ref' ? { '@id': iri, '@type': '@id' } : iri;
  }
  return { '@context': ctx };
}
