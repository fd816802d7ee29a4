import { parseHydraDocumentation, type Operation } from '@api-platform/api-doc-parser';
import { withApiKey } from './api-key.js';

/**
 * The API's Hydra documentation as api-doc-parser reads it, with one preference: where a resource
 * offers both PUT and PATCH, the admin edits with PATCH (`application/merge-patch+json`), which
 * changes only what it sends. HydraAdmin takes the first "edit" operation it finds, and the Hydra
 * docs list PUT first, as API Platform does.
 */
export async function parseDocumentation(entrypointUrl: string) {
  const parsed = await parseHydraDocumentation(entrypointUrl, { headers: () => withApiKey(undefined) });
  for (const resource of parsed.api.resources ?? []) {
    resource.operations?.sort((a, b) => editRank(a) - editRank(b));
  }
  return parsed;
}

function editRank(operation: Operation): number {
  return operation.type === 'edit' && operation.method?.toUpperCase() === 'PATCH' ? 0 : 1;
}
