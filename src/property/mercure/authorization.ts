import type { Item, Principal } from '../engine/define.js';
import type { ResourceMetadata } from '../engine/registry.js';
import { seesAllProperties } from '../security/roles.js';

/**
 * Who may receive which update (decision 0038). Reference data is public. A property and an
 * account are private: their updates carry, besides the resource's own IRI, the IRI of the
 * account they belong to (the property's verwalter, the account itself), and a subscriber's
 * token may subscribe to its own account's IRI only, unless its role sees every property and
 * account (admin, moderator: `*`). So a `user` never receives another account's property, not
 * even its IRI, whatever topics it asks for.
 */

const PRIVATE_OWNER: Readonly<Record<string, (item: Item) => unknown>> = {
  Immobilie: (item) => item.verwalter,
  User: (item) => item.id,
};

export interface UpdateAddress {
  readonly topics: readonly string[];
  readonly private: boolean;
}

export function updateAddress(resource: ResourceMetadata, item: Item, base: string, usersPath: string): UpdateAddress {
  const iri = `${base}${resource.path}/${item.id}`;
  const owner = PRIVATE_OWNER[resource.shortName];
  if (!owner) return { topics: [iri], private: false };
  const account = `${base}${usersPath}/${String(owner(item))}`;
  return { topics: account === iri ? [iri] : [iri, account], private: true };
}

/** The `mercure.subscribe` selectors a subscriber token of `principal` carries. */
export function subscribeSelectors(principal: Principal, base: string, usersPath: string): string[] {
  return seesAllProperties(principal) ? ['*'] : [`${base}${usersPath}/${principal.id}`];
}
