import type { Item } from './define.js';
import type { Registry, ResourceMetadata } from './registry.js';

/**
 * HTTP caching as API Platform's HttpCache component does it: each GET answer names the IRIs
 * it contains in a `Cache-Tags` header, so that a shared cache can drop every answer that holds
 * a resource when the resource is written; the Cache-Control of an answer follows its resource's
 * `cacheHeaders` (public reference data) or stays private to the caller. Decision 0047.
 */

export const CACHE_TAGS_HEADER = 'cache-tags';
/** What a private answer says: the browser may keep it but must revalidate it (ETag), no shared cache may. */
export const PRIVATE_CACHE_CONTROL = 'no-cache, private';
/**
 * The longest `Cache-Tags` value sent. Varnish refuses a backend header above `http_resp_hdr_len`
 * (8 KiB by default), as an error for the client, so a longer list is not sent and its answer
 * stays private: no shared cache keeps what no purge could reach.
 */
export const MAX_TAGS_LENGTH = 7_900;

export interface HttpCacheDefaults {
  /** `max-age` of public answers whose resource does not set its own. */
  readonly maxAge: number;
  /** `s-maxage` of public answers whose resource does not set its own. */
  readonly sharedMaxAge: number;
}

/** The Cache-Control of a resource's GET answers, or undefined for the private default. */
export function publicCacheControl(resource: ResourceMetadata, defaults: HttpCacheDefaults): string | undefined {
  const headers = resource.cacheHeaders;
  if (!headers?.public) return undefined;
  return `public, max-age=${headers.maxAge ?? defaults.maxAge}, s-maxage=${headers.sharedMaxAge ?? defaults.sharedMaxAge}`;
}

/**
 * The IRIs an answer contains: the collection's (for a collection, so that a new member reaches
 * every page and filter of it), each item's, and each item's references (an answer shows them,
 * and computed values may depend on them: a property's transfer tax on its state's rate).
 */
export function tagsOf(
  registry: Registry,
  resource: ResourceMetadata,
  items: readonly Item[],
  collection: boolean,
): string[] {
  const tags = new Set<string>();
  if (collection) tags.add(resource.path);
  const refs = resource.fields.filter((f) => f.kind === 'ref' && f.readable);
  for (const item of items) {
    tags.add(`${resource.path}/${item.id}`);
    for (const field of refs) {
      const value = item[field.name];
      const target = registry.byShortName(field.target as string);
      if (value !== null && value !== undefined && target) tags.add(`${target.path}/${String(value)}`);
    }
  }
  return [...tags];
}

/**
 * What a committed write makes stale in a shared cache: the collection (its pages and totals)
 * and, unless the item is new, the item, which purges every answer that shows it or refers to
 * it. Only answers of public resources are ever in a shared cache, and their tags name only
 * public resources and what those refer to; a write of anything else (a property, an account)
 * purges nothing and costs nothing. Unlike API Platform's Doctrine listener the targets of the
 * item's references are not purged: no resource here shows its referrers, so their answers did
 * not change.
 */
export function writeTagsOf(
  registry: Registry,
): (resource: ResourceMetadata, operation: 'post' | 'put' | 'patch' | 'delete', item: Item) => readonly string[] {
  const shared = new Set<string>();
  for (const resource of registry.resources) {
    if (!resource.cacheHeaders?.public) continue;
    shared.add(resource.shortName);
    for (const field of resource.fields)
      if (field.kind === 'ref' && field.readable && field.target) shared.add(field.target);
  }
  return (resource, operation, item) =>
    !shared.has(resource.shortName)
      ? []
      : operation === 'post'
        ? [resource.path]
        : [resource.path, `${resource.path}/${item.id}`];
}
