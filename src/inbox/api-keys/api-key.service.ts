import type { Kysely } from 'kysely';
import type { Clock } from '../../platform/clock.js';
import type { GroupCommit } from '../../platform/db/group-commit.js';
import { NotFoundError } from '../../platform/errors/app-error.js';
import { hashSecret, newSecret, type Ids } from '../../platform/ids.js';
import type { InboxDatabase } from '../database.js';
import { findDefaultPodId, findKeyOwnerByHash, insertApiKey, insertOrganization, insertPod, organizationExists, type KeyOwner } from './api-key.repository.js';

/** Prefix of every inbox API key, as AgentMail's keys start with `am_`. */
export const API_KEY_PREFIX = 'am_';

export interface CreatedKey {
  readonly key: string;
  readonly apiKeyId: string;
  readonly organizationId: string;
  readonly podId: string;
}

export interface ApiKeyServiceDeps {
  readonly db: Kysely<InboxDatabase>;
  /** The database's commit batcher, shared with every other writer. */
  readonly commits: GroupCommit<InboxDatabase>;
  readonly clock: Clock;
  readonly ids: Ids;
}

/** Organizations, their default pod and their API keys (shown once, stored as SHA-256). */
export function createApiKeyService({ db, commits, clock, ids }: ApiKeyServiceDeps) {
  return {
    /** Creates a key; without `organizationId`, a new organization with a default pod first. */
    async createKey(options: { name?: string; organizationId?: string }): Promise<CreatedKey> {
      const key = newSecret(ids, API_KEY_PREFIX, 32);
      const now = clock.now().toISOString();
      return commits.run(async (trx) => {
        let organizationId = options.organizationId;
        if (organizationId) {
          if (!(await organizationExists(trx, organizationId))) throw new NotFoundError(`Organization ${organizationId} does not exist.`);
        } else {
          organizationId = `org_${ids.uuid().replace(/-/g, '')}`;
          await insertOrganization(trx, { id: organizationId, name: options.name ?? 'default', createdAt: now });
          await insertPod(trx, { id: ids.uuid(), organizationId, name: 'default', createdAt: now });
        }
        const podId = (await findDefaultPodId(trx, organizationId)) as string;
        const apiKeyId = `key_${ids.uuid().replace(/-/g, '')}`;
        await insertApiKey(trx, { id: apiKeyId, organizationId, name: options.name ?? 'default', keyHash: hashSecret(key), keyPrefix: key.slice(0, 8), createdAt: now });
        return { key, apiKeyId, organizationId, podId };
      });
    },

    async authenticate(key: string): Promise<KeyOwner | undefined> {
      if (!key.startsWith(API_KEY_PREFIX) || key.length > 200) return undefined;
      return findKeyOwnerByHash(db, hashSecret(key));
    },
  };
}

export type ApiKeyService = ReturnType<typeof createApiKeyService>;
