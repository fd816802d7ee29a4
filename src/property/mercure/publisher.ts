import { origin, type HttpSettings } from '../engine/http.js';
import type { Registry } from '../engine/registry.js';
import type { CommittedWrite } from '../engine/routes.js';
import { normalizeItem } from '../engine/serializer.js';
import { updateAddress } from './authorization.js';
import type { MercureHub } from './hub.js';

/**
 * Publishes each committed write as API Platform does: the JSON-LD a GET of the resource answers
 * (for a delete, `{"@id": …}`), to the resource's absolute IRI (plus the owner's IRI for a private
 * update, see authorization.ts). Called after the commit and not awaited: a write never waits
 * for its subscribers, and a failed publish is logged, never turned into a failed write.
 */
export function mercurePublisher(
  hub: MercureHub,
  registry: Registry,
  http: HttpSettings,
  usersPath: string,
): (write: CommittedWrite) => void {
  return ({ request, resource, operation, item }) => {
    const address = updateAddress(resource, item, origin(request, http), usersPath);
    const data =
      operation === 'delete'
        ? JSON.stringify({ '@id': `${resource.path}/${item.id}`, '@type': resource.shortName })
        : JSON.stringify(normalizeItem(registry, resource, item, 'jsonld', 'get'));
    hub
      .publish({ topics: address.topics, data, private: address.private })
      .catch((err: unknown) => request.log.warn({ err }, 'mercure: update not published'));
  };
}
