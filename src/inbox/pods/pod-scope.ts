import type { Db } from '../schema/database.js';
import { type KeyOwner, inScope } from '../core/scope.js';
import { type Pod, findPod } from './pod.repository.js';
import { PodNotFoundError } from './pod.errors.js';

/** A pod named in a path, if the caller's key reaches it. */

/** The pod of the request path, if the caller's key reaches it (404 otherwise: its existence is not revealed). */
export async function podInScope(db: Db, owner: KeyOwner, podId: string): Promise<Pod> {
  const pod =
    inScope(owner, { organizationId: owner.organizationId, podId }) && owner.inboxId === undefined
      ? await findPod(db, owner.organizationId, podId)
      : undefined;
  if (!pod) throw new PodNotFoundError(podId);
  return pod;
}
