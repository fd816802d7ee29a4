import {
  API_KEY_PREFIX,
  type KeyOwner,
  inScope,
  mayDelegate,
  requirePermission,
  requireWithinScope,
  scopeTypeOf,
  type Permissions,
} from '../core/scope.js';
import { podInScope } from '../pods/pod-scope.js';
import { checkName } from '../core/names.js';
import type { Kysely } from 'kysely';
import type { Clock } from '../../platform/clock.js';
import { decodeCursor, page } from '../../platform/db/cursor.js';
import type { GroupCommit } from '../../platform/db/group-commit.js';
import { ForbiddenError, NotFoundError } from '../../platform/errors/app-error.js';
import { hashSecret, newSecret, type Ids } from '../../platform/ids.js';
import type { Db, InboxDatabase } from '../schema/database.js';
import { findInbox } from '../inboxes/inbox.repository.js';
import { parseLimit } from '../lists/list-query.js';
import {
  deleteApiKey,
  findApiKey,
  findKeyOwnerByHash,
  findOrganization,
  insertApiKey,
  insertOrganization,
  listApiKeys,
  organizationExists,
  updateApiKey,
  type ApiKeyRecord,
  type KeyFilter,
  type Organization,
} from './api-key.repository.js';
import { findDefaultPodId, insertPod } from '../pods/pod.repository.js';

export interface CreatedKey {
  readonly key: string;
  readonly apiKeyId: string;
  readonly organizationId: string;
  readonly podId: string;
}

/** A key just made: its record and, this once, its secret. */
export interface NewApiKey extends ApiKeyRecord {
  readonly secret: string;
}

/** Where a key is managed: the organization's keys, one pod's, or one inbox's. */
export type KeyPlace =
  | { readonly level: 'organization' }
  | { readonly level: 'pod'; readonly podId: string }
  | { readonly level: 'inbox'; readonly inboxId: string };

export class ApiKeyNotFoundError extends NotFoundError {
  constructor(apiKeyId: string) {
    super(`API key ${apiKeyId} not found.`, {
      code: 'API_KEY_NOT_FOUND',
      details: { field: 'api_key_id', code: 'API_KEY_NOT_FOUND' },
    });
  }
}

export interface ApiKeyServiceDeps {
  readonly db: Kysely<InboxDatabase>;
  /** The database's commit batcher, shared with every other writer. */
  readonly commits: GroupCommit<InboxDatabase>;
  readonly clock: Clock;
  readonly ids: Ids;
  /**
   * Announces, in the transaction that deletes or changes a key, that connections holding it must
   * end (open WebSockets authenticated once, at their upgrade); service.ts signals every instance.
   */
  readonly keyChanged?: (trx: Db, apiKeyId: string) => Promise<void>;
}

/** Organizations, their pods' keys and the keys themselves (secret shown once, stored as SHA-256). */
export function createApiKeyService(deps: ApiKeyServiceDeps) {
  const { db, commits, clock, ids } = deps;
  const newKeyId = () => `key_${ids.uuid().replace(/-/g, '')}`;

  /** Resolves where a new key goes, checking that the place is within the caller's reach. */
  async function placeScope(owner: KeyOwner, place: KeyPlace): Promise<{ podId?: string; inboxId?: string }> {
    if (place.level === 'pod') {
      await podInScope(db, owner, place.podId);
      return { podId: place.podId };
    }
    if (place.level === 'inbox') {
      const inboxId = place.inboxId.trim().toLowerCase();
      const inbox = await findInbox(db, owner.organizationId, inboxId);
      if (
        !inbox ||
        !inScope(owner, { organizationId: inbox.organizationId, podId: inbox.podId, inboxId: inbox.inboxId })
      ) {
        throw new NotFoundError(`Inbox ${place.inboxId} not found.`, {
          code: 'INBOX_NOT_FOUND',
          details: { field: 'inbox_id', code: 'INBOX_NOT_FOUND' },
        });
      }
      return { podId: inbox.podId, inboxId: inbox.inboxId };
    }
    return {};
  }

  /** The keys a caller may see at a place: the place's keys that fall within its own scope. */
  async function filterFor(owner: KeyOwner, place: KeyPlace): Promise<KeyFilter> {
    const scope = await placeScope(owner, place);
    return {
      organizationId: owner.organizationId,
      ...(scope.podId !== undefined || owner.podId !== undefined
        ? { podId: (scope.podId ?? owner.podId) as string }
        : {}),
      ...(scope.inboxId !== undefined || owner.inboxId !== undefined
        ? { inboxId: (scope.inboxId ?? owner.inboxId) as string }
        : {}),
      ...(place.level === 'pod' ? { podOnly: true } : {}),
    };
  }

  async function mustFind(owner: KeyOwner, place: KeyPlace, apiKeyId: string): Promise<ApiKeyRecord> {
    const key = await findApiKey(db, await filterFor(owner, place), apiKeyId);
    if (!key) throw new ApiKeyNotFoundError(apiKeyId);
    return key;
  }

  function checkDelegation(
    owner: KeyOwner,
    scope: { podId?: string; inboxId?: string },
    permissions: Permissions | undefined,
  ): void {
    if (!mayDelegate(owner, scope, permissions)) {
      throw new ForbiddenError(
        'A key cannot give another key more rights than its own: a wider scope or a permission it does not hold.',
        { code: 'PERMISSION_ESCALATION', details: { code: 'PERMISSION_ESCALATION' } },
      );
    }
  }

  return {
    /** Creates a key; without `organizationId`, a new organization with a default pod first (the CLI). */
    async createKey(options: { name?: string; organizationId?: string }): Promise<CreatedKey> {
      const key = newSecret(ids, API_KEY_PREFIX, 32);
      const now = clock.now().toISOString();
      return commits.run(async (trx) => {
        let organizationId = options.organizationId;
        if (organizationId) {
          if (!(await organizationExists(trx, organizationId)))
            throw new NotFoundError(`Organization ${organizationId} does not exist.`);
        } else {
          organizationId = `org_${ids.uuid().replace(/-/g, '')}`;
          await insertOrganization(trx, { id: organizationId, name: options.name ?? 'default', createdAt: now });
          await insertPod(trx, { id: ids.uuid(), organizationId, name: 'default', createdAt: now });
        }
        let podId = await findDefaultPodId(trx, organizationId);
        if (podId === undefined) {
          podId = ids.uuid();
          await insertPod(trx, { id: podId, organizationId, name: 'default', createdAt: now });
        }
        const apiKeyId = newKeyId();
        await insertApiKey(trx, {
          id: apiKeyId,
          organizationId,
          name: options.name ?? 'default',
          keyHash: hashSecret(key),
          keyPrefix: key.slice(0, 8),
          createdAt: now,
        });
        return { key, apiKeyId, organizationId, podId };
      });
    },

    async authenticate(key: string): Promise<KeyOwner | undefined> {
      if (!key.startsWith(API_KEY_PREFIX) || key.length > 200) return undefined;
      return findKeyOwnerByHash(db, hashSecret(key));
    },

    /**
     * POST /v0/api-keys, /v0/pods/:pod/api-keys, /v0/inboxes/:inbox/api-keys. Without permissions
     * the new key holds the caller's; it never holds more (scope or permission: 403).
     */
    async create(
      owner: KeyOwner,
      place: KeyPlace,
      input: { name?: string; permissions?: Permissions },
    ): Promise<NewApiKey> {
      requirePermission(owner, 'apiKeyCreate');
      const name = checkName(input.name) ?? 'default';
      const scope = await placeScope(owner, place);
      requireWithinScope(owner, scope, 'create a key wider than its own scope');
      const permissions = input.permissions ?? owner.permissions;
      checkDelegation(owner, scope, permissions);
      const secret = newSecret(ids, API_KEY_PREFIX, 32);
      const now = clock.now().toISOString();
      const record: ApiKeyRecord = {
        apiKeyId: newKeyId(),
        organizationId: owner.organizationId,
        name,
        prefix: secret.slice(0, 8),
        podId: scope.podId ?? null,
        inboxId: scope.inboxId ?? null,
        permissions,
        createdAt: now,
        updatedAt: now,
      };
      await commits.run((trx) =>
        insertApiKey(trx, {
          id: record.apiKeyId,
          organizationId: record.organizationId,
          name,
          keyHash: hashSecret(secret),
          keyPrefix: record.prefix,
          createdAt: now,
          podId: record.podId,
          inboxId: record.inboxId,
          permissions,
        }),
      );
      return { ...record, secret };
    },

    async list(owner: KeyOwner, place: KeyPlace, query: { limit?: number; pageToken?: string; ascending?: boolean }) {
      requirePermission(owner, 'apiKeyRead');
      const filter = await filterFor(owner, place);
      const limit = parseLimit(query.limit);
      const after = query.pageToken ? decodeCursor(query.pageToken, 'string') : undefined;
      const direction = after?.direction ?? (query.ascending ? 'asc' : 'desc');
      const rows = await listApiKeys(db, filter, { limit, direction, ...(after ? { after } : {}) });
      return { limit, ...page(rows, limit, (k) => ({ sort: k.createdAt, tiebreak: k.apiKeyId }), direction) };
    },

    async get(owner: KeyOwner, place: KeyPlace, apiKeyId: string): Promise<ApiKeyRecord> {
      requirePermission(owner, 'apiKeyRead');
      return mustFind(owner, place, apiKeyId);
    },

    /** Renames a key or replaces its permissions (never beyond the caller's own). */
    async update(
      owner: KeyOwner,
      place: KeyPlace,
      apiKeyId: string,
      input: { name?: string; permissions?: Permissions },
    ): Promise<ApiKeyRecord> {
      requirePermission(owner, 'apiKeyUpdate');
      const name = checkName(input.name);
      const key = await mustFind(owner, place, apiKeyId);
      if (input.permissions !== undefined)
        checkDelegation(
          owner,
          { ...(key.podId ? { podId: key.podId } : {}), ...(key.inboxId ? { inboxId: key.inboxId } : {}) },
          input.permissions,
        );
      // A limited key may not rename or narrow a key that holds more than it does either.
      if (
        !mayDelegate(
          owner,
          { ...(key.podId ? { podId: key.podId } : {}), ...(key.inboxId ? { inboxId: key.inboxId } : {}) },
          key.permissions,
        )
      )
        checkDelegation(owner, {}, undefined);
      await commits.run(async (trx) => {
        await updateApiKey(trx, owner.organizationId, apiKeyId, {
          ...(name !== undefined ? { name } : {}),
          ...(input.permissions !== undefined ? { permissions: input.permissions } : {}),
          updatedAt: clock.now().toISOString(),
        });
        if (input.permissions !== undefined) await deps.keyChanged?.(trx, apiKeyId);
      });
      return mustFind(owner, place, apiKeyId);
    },

    /** Deletes a key: the next request with it answers 401 on every instance (no cache). */
    async delete(owner: KeyOwner, place: KeyPlace, apiKeyId: string): Promise<void> {
      requirePermission(owner, 'apiKeyDelete');
      const key = await mustFind(owner, place, apiKeyId);
      if (
        key.apiKeyId !== owner.apiKeyId &&
        !mayDelegate(
          owner,
          { ...(key.podId ? { podId: key.podId } : {}), ...(key.inboxId ? { inboxId: key.inboxId } : {}) },
          key.permissions,
        )
      )
        checkDelegation(owner, {}, undefined);
      const deleted = await commits.run(async (trx) => {
        const found = await deleteApiKey(trx, owner.organizationId, apiKeyId);
        if (found) await deps.keyChanged?.(trx, apiKeyId);
        return found;
      });
      if (!deleted) throw new ApiKeyNotFoundError(apiKeyId);
    },

    /** GET /v0/auth/me. */
    identity(owner: KeyOwner) {
      const scopeType = scopeTypeOf(owner);
      return {
        scopeType,
        scopeId: owner.inboxId ?? owner.podId ?? owner.organizationId,
        organizationId: owner.organizationId,
        podId: owner.podId,
        inboxId: owner.inboxId,
        apiKeyId: owner.apiKeyId,
      };
    },

    /** GET /v0/organizations: the key's organization (its inbox count within the organization). */
    async organization(owner: KeyOwner): Promise<Organization> {
      const org = await findOrganization(db, owner.organizationId);
      if (!org)
        throw new NotFoundError(`Organization ${owner.organizationId} not found.`, { code: 'ORGANIZATION_NOT_FOUND' });
      return org;
    },
  };
}

export type ApiKeyService = ReturnType<typeof createApiKeyService>;
