import { runCompiledOnce } from '../../platform/db/compiled-once.js';
import type { Db } from '../database.js';
import type { Permissions } from './scope.js';

export interface KeyOwner {
  readonly apiKeyId: string;
  readonly organizationId: string;
  /** Set for keys limited to one pod (and for inbox keys: the inbox's pod). */
  readonly podId?: string;
  /** Set for keys limited to one inbox. */
  readonly inboxId?: string;
  /** Undefined: every permission. Otherwise only those set to true (see api-keys/scope.ts). */
  readonly permissions?: Permissions;
}

export async function findKeyOwnerByHash(db: Db, keyHash: string): Promise<KeyOwner | undefined> {
  const [row] = await runCompiledOnce(db, 'api_keys.owner', [keyHash], () => db.selectFrom('api_keys').select(['id', 'organization_id']).where('key_hash', '=', keyHash));
  return row ? { apiKeyId: row.id, organizationId: row.organization_id } : undefined;
}

export async function insertOrganization(db: Db, org: { id: string; name: string; createdAt: string }): Promise<void> {
  await db.insertInto('organizations').values({ id: org.id, name: org.name, created_at: org.createdAt }).execute();
}

export async function organizationExists(db: Db, id: string): Promise<boolean> {
  return (await db.selectFrom('organizations').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
}

export async function insertPod(db: Db, pod: { id: string; organizationId: string; name: string; createdAt: string }): Promise<void> {
  await db.insertInto('pods').values({ id: pod.id, organization_id: pod.organizationId, name: pod.name, created_at: pod.createdAt }).execute();
}

/** The organization's default pod: its oldest one. */
export async function findDefaultPodId(db: Db, organizationId: string): Promise<string | undefined> {
  const row = await db.selectFrom('pods').select('id').where('organization_id', '=', organizationId).orderBy('created_at').orderBy('id').limit(1).executeTakeFirst();
  return row?.id;
}

export async function podBelongsTo(db: Db, podId: string, organizationId: string): Promise<boolean> {
  return (await db.selectFrom('pods').select('id').where('id', '=', podId).where('organization_id', '=', organizationId).executeTakeFirst()) !== undefined;
}

export async function insertApiKey(db: Db, key: { id: string; organizationId: string; name: string; keyHash: string; keyPrefix: string; createdAt: string }): Promise<void> {
  await db
    .insertInto('api_keys')
    .values({ id: key.id, organization_id: key.organizationId, name: key.name, key_hash: key.keyHash, key_prefix: key.keyPrefix, created_at: key.createdAt })
    .execute();
}
