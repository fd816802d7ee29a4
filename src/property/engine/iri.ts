import type { Registry, ResourceMetadata } from './registry.js';

/** Largest id we ever hand to the database: ids outside it cannot exist (and would overflow INTEGER). */
export const MAX_ID = 2_147_483_647;

export function itemIri(resource: ResourceMetadata, id: number | string): string {
  return `${resource.path}/${id}`;
}

/** Parses an id path segment: a positive decimal integer within range, or undefined. */
export function parseId(raw: string): number | undefined {
  if (!/^[1-9]\d{0,9}$/.test(raw)) return undefined;
  const n = Number(raw);
  return n <= MAX_ID ? n : undefined;
}

export type IriResolution =
  | { readonly ok: true; readonly resource: ResourceMetadata; readonly id: number }
  | { readonly ok: false; readonly reason: 'invalid' | 'not_found' };

/**
 * Resolves an IRI (`/api/bundeslands/3`, or an absolute URL whose path is one) against the
 * expected target. A well-formed IRI whose id cannot exist is "not found", not "invalid".
 */
export function resolveIri(registry: Registry, expected: ResourceMetadata, iri: string): IriResolution {
  let path = iri;
  if (/^https?:\/\//i.test(iri)) {
    try {
      path = new URL(iri).pathname;
    } catch {
      return { ok: false, reason: 'invalid' };
    }
  }
  const slash = path.lastIndexOf('/');
  if (slash <= 0) return { ok: false, reason: 'invalid' };
  const collection = path.slice(0, slash);
  const resource = registry.resources.find((r) => r.path === collection);
  if (!resource) return { ok: false, reason: 'invalid' };
  const id = parseId(path.slice(slash + 1));
  if (id === undefined || resource !== expected)
    return {
      ok: false,
      reason: /^\d+$/.test(path.slice(slash + 1)) && resource === expected ? 'not_found' : 'invalid',
    };
  return { ok: true, resource, id };
}
