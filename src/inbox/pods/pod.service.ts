import type { Kysely } from 'kysely';
import type { Clock } from '../../platform/clock.js';
import { decodeCursor, page } from '../../platform/db/cursor.js';
import { isUniqueViolation } from '../../platform/db/dialect.js';
import type { GroupCommit } from '../../platform/db/group-commit.js';
import { ConflictError, ValidationError } from '../../platform/errors/app-error.js';
import type { Ids } from '../../platform/ids.js';
import { podInScope } from './pod-scope.js';
import { checkName } from '../core/names.js';
import { PodNotFoundError } from './pod.errors.js';
import { deletePod, findPodByClientId, insertPod, listPods, podHasInboxes, type Pod } from './pod.repository.js';
import { type KeyOwner, requirePermission, requireWithinScope } from '../core/scope.js';
import type { InboxDatabase } from '../schema/database.js';
import { parseLimit } from '../lists/list-query.js';

export class PodNotEmptyError extends ConflictError {
  constructor(podId: string) {
    super(`Pod ${podId} still has inboxes: delete them first.`, {
      code: 'POD_NOT_EMPTY',
      details: { field: 'pod_id', code: 'POD_NOT_EMPTY' },
    });
  }
}

/** Checks a /v0/pods/:pod_id/… route: the pod exists in the caller's organization and scope (404 otherwise); returns its id. */
export type PodGuard = (owner: KeyOwner, podId: string) => Promise<string>;

export interface PodServiceDeps {
  readonly db: Kysely<InboxDatabase>;
  readonly commits: GroupCommit<InboxDatabase>;
  readonly clock: Clock;
  readonly ids: Ids;
}

/**
 * Pods: tenants inside an organization. A pod key sees only its pod; an inbox key no pod at all.
 * Deleting a pod that still has inboxes is refused (409): decision 0018.
 */
export function createPodService({ db, commits, clock, ids }: PodServiceDeps) {
  return {
    /** The guard of every pod-scoped route (other features' routes use it too). */
    async requirePod(owner: KeyOwner, podId: string): Promise<string> {
      await podInScope(db, owner, podId);
      return podId;
    },

    /** Creates a pod, or returns the one created before with the same client_id. */
    async create(
      owner: KeyOwner,
      input: { name?: string; clientId?: string },
    ): Promise<{ pod: Pod; created: boolean }> {
      requirePermission(owner, 'podCreate');
      requireWithinScope(owner, {}, 'create pods');
      const name = checkName(input.name) ?? 'default';
      const clientId = input.clientId === undefined ? undefined : input.clientId.trim();
      if (clientId !== undefined && (!clientId || clientId.length > 255))
        throw new ValidationError('client_id must be 1-255 characters.', 'client_id', 'INVALID_CLIENT_ID');
      if (clientId) {
        const existing = await findPodByClientId(db, owner.organizationId, clientId);
        if (existing) return { pod: existing, created: false };
      }
      const now = clock.now().toISOString();
      const pod: Pod = {
        podId: ids.uuid(),
        organizationId: owner.organizationId,
        name,
        clientId: clientId ?? null,
        createdAt: now,
        updatedAt: now,
      };
      try {
        await commits.run((trx) =>
          insertPod(trx, {
            id: pod.podId,
            organizationId: pod.organizationId,
            name,
            createdAt: now,
            clientId: pod.clientId,
          }),
        );
      } catch (err) {
        if (!isUniqueViolation(err) || !clientId) throw err;
        const existing = await findPodByClientId(db, owner.organizationId, clientId);
        if (!existing) throw err;
        return { pod: existing, created: false };
      }
      return { pod, created: true };
    },

    async list(owner: KeyOwner, query: { limit?: number; pageToken?: string; ascending?: boolean }) {
      requirePermission(owner, 'podRead');
      const limit = parseLimit(query.limit);
      const after = query.pageToken ? decodeCursor(query.pageToken, 'string') : undefined;
      const direction = after?.direction ?? (query.ascending ? 'asc' : 'desc');
      // An inbox key reaches no pod as such; a pod key its own.
      if (owner.inboxId !== undefined) return { limit, items: [] as Pod[], nextPageToken: undefined };
      const rows = await listPods(db, owner.organizationId, {
        ...(owner.podId !== undefined ? { podId: owner.podId } : {}),
        limit,
        direction,
        ...(after ? { after } : {}),
      });
      return { limit, ...page(rows, limit, (p) => ({ sort: p.createdAt, tiebreak: p.podId }), direction) };
    },

    async get(owner: KeyOwner, podId: string): Promise<Pod> {
      requirePermission(owner, 'podRead');
      return podInScope(db, owner, podId);
    },

    async delete(owner: KeyOwner, podId: string): Promise<void> {
      requirePermission(owner, 'podDelete');
      await podInScope(db, owner, podId);
      const deleted = await commits.run(async (trx) => {
        if (await podHasInboxes(trx, podId)) throw new PodNotEmptyError(podId);
        return deletePod(trx, owner.organizationId, podId);
      });
      if (!deleted) throw new PodNotFoundError(podId);
    },
  };
}

export type PodService = ReturnType<typeof createPodService>;
