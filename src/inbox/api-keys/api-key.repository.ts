import {
  type KeyOwner,
  effectivePermissions,
  permissionsFromWire,
  permissionsToWire,
  type Permissions,
} from '../core/scope.js';
import { runCompiledOnce } from '../../platform/db/compiled-once.js';
import { dialectOf, forUpdate } from '../../platform/db/dialect.js';
import { afterKey } from '../../platform/db/keyset.js';
import type { Cursor } from '../../platform/db/cursor.js';
import type { Db } from '../schema/database.js';

/** An API key as listed (never its secret). */
export interface ApiKeyRecord {
  readonly apiKeyId: string;
  readonly organizationId: string;
  readonly name: string;
  readonly prefix: string;
  readonly podId: string | null;
  readonly inboxId: string | null;
  /** Undefined: every permission. */
  readonly permissions: Permissions | undefined;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface Organization {
  readonly organizationId: string;
  readonly name: string;
  readonly createdAt: string;
  readonly inboxCount: number;
  /** Set while the organization is an unverified agent sign-up. */
  readonly unverified: boolean;
}

const storedPermissions = (text: string | null): Permissions | undefined =>
  text === null ? undefined : permissionsFromWire(JSON.parse(text) as Record<string, unknown>);

/**
 * The key behind a request: one indexed read per request and no cache, so that a deleted key or
 * a changed permission takes effect on every instance with the next request (decision 0018).
 */
export async function findKeyOwnerByHash(db: Db, keyHash: string): Promise<KeyOwner | undefined> {
  const [row] = await runCompiledOnce(db, 'api_keys.owner', [keyHash], () =>
    ownerQuery(db).where('api_keys.key_hash', '=', keyHash),
  );
  return row && ownerOf(row);
}

/**
 * The key behind a console session (console/): the same read of the key as findKeyOwnerByHash,
 * through an unexpired session's row, so a deleted key or a changed permission takes effect at once.
 */
export async function findKeyOwnerBySession(db: Db, tokenHash: string, now: string) {
  const [row] = await runCompiledOnce(db, 'api_keys.owner_by_session', [tokenHash, now], () =>
    ownerQuery(db)
      .innerJoin('console_sessions', 'console_sessions.api_key_id', 'api_keys.id')
      .select(['console_sessions.csrf_token', 'console_sessions.expires_at'])
      .where('console_sessions.token_hash', '=', tokenHash)
      .where('console_sessions.expires_at', '>', now),
  );
  return row && { owner: ownerOf(row), csrfToken: row.csrf_token, expiresAt: row.expires_at };
}

function ownerQuery(db: Db) {
  return db
    .selectFrom('api_keys')
    .leftJoin('agent_signups', (j) =>
      j
        .onRef('agent_signups.organization_id', '=', 'api_keys.organization_id')
        .on('agent_signups.verified_at', 'is', null),
    )
    .select([
      'api_keys.id',
      'api_keys.organization_id',
      'api_keys.pod_id',
      'api_keys.inbox_id',
      'api_keys.permissions',
      'agent_signups.human_email',
    ]);
}

function ownerOf(row: {
  id: string;
  organization_id: string;
  pod_id: string | null;
  inbox_id: string | null;
  permissions: string | null;
  human_email: string | null | undefined;
}): KeyOwner {
  const unverified = row.human_email !== null && row.human_email !== undefined;
  const permissions = effectivePermissions(storedPermissions(row.permissions), unverified);
  return {
    apiKeyId: row.id,
    organizationId: row.organization_id,
    ...(row.pod_id !== null ? { podId: row.pod_id } : {}),
    ...(row.inbox_id !== null ? { inboxId: row.inbox_id } : {}),
    ...(permissions !== undefined ? { permissions } : {}),
    ...(unverified ? { sendOnlyTo: row.human_email as string } : {}),
  };
}

export async function insertOrganization(db: Db, org: { id: string; name: string; createdAt: string }): Promise<void> {
  await db.insertInto('organizations').values({ id: org.id, name: org.name, created_at: org.createdAt }).execute();
}

export async function organizationExists(db: Db, id: string): Promise<boolean> {
  return (await db.selectFrom('organizations').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
}

export async function findOrganization(db: Db, id: string): Promise<Organization | undefined> {
  const row = await db
    .selectFrom('organizations')
    .select(['id', 'name', 'created_at'])
    .where('id', '=', id)
    .executeTakeFirst();
  if (!row) return undefined;
  const count = await db
    .selectFrom('inboxes')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('organization_id', '=', id)
    .executeTakeFirstOrThrow();
  const signup = await db
    .selectFrom('agent_signups')
    .select('verified_at')
    .where('organization_id', '=', id)
    .executeTakeFirst();
  return {
    organizationId: row.id,
    name: row.name,
    createdAt: row.created_at,
    inboxCount: Number(count.n),
    unverified: signup !== undefined && signup.verified_at === null,
  };
}

function keyFromRow(row: {
  id: string;
  organization_id: string;
  name: string;
  key_prefix: string;
  pod_id: string | null;
  inbox_id: string | null;
  permissions: string | null;
  created_at: string;
  updated_at: string | null;
}): ApiKeyRecord {
  return {
    apiKeyId: row.id,
    organizationId: row.organization_id,
    name: row.name,
    prefix: row.key_prefix,
    podId: row.pod_id,
    inboxId: row.inbox_id,
    permissions: storedPermissions(row.permissions),
    createdAt: row.created_at,
    updatedAt: row.updated_at ?? row.created_at,
  };
}

const KEY_COLUMNS = [
  'id',
  'organization_id',
  'name',
  'key_prefix',
  'pod_id',
  'inbox_id',
  'permissions',
  'created_at',
  'updated_at',
] as const;

export async function insertApiKey(
  db: Db,
  key: {
    id: string;
    organizationId: string;
    name: string;
    keyHash: string;
    keyPrefix: string;
    createdAt: string;
    podId?: string | null;
    inboxId?: string | null;
    permissions?: Permissions | undefined;
  },
): Promise<void> {
  await db
    .insertInto('api_keys')
    .values({
      id: key.id,
      organization_id: key.organizationId,
      name: key.name,
      key_hash: key.keyHash,
      key_prefix: key.keyPrefix,
      created_at: key.createdAt,
      updated_at: key.createdAt,
      pod_id: key.podId ?? null,
      inbox_id: key.inboxId ?? null,
      permissions: key.permissions === undefined ? null : JSON.stringify(permissionsToWire(key.permissions)),
    })
    .execute();
}

/** Where keys are looked for: the caller's scope, and optionally only the keys of one pod or inbox. */
export interface KeyFilter {
  readonly organizationId: string;
  readonly podId?: string;
  readonly inboxId?: string;
  /** Only keys limited to exactly this pod (not its inboxes' keys). */
  readonly podOnly?: boolean;
}

export async function findApiKey(db: Db, filter: KeyFilter, apiKeyId: string): Promise<ApiKeyRecord | undefined> {
  let q = db
    .selectFrom('api_keys')
    .select(KEY_COLUMNS)
    .where('id', '=', apiKeyId)
    .where('organization_id', '=', filter.organizationId);
  if (filter.podId !== undefined) q = q.where('pod_id', '=', filter.podId);
  if (filter.inboxId !== undefined) q = q.where('inbox_id', '=', filter.inboxId);
  if (filter.podOnly) q = q.where('inbox_id', 'is', null);
  const row = await q.executeTakeFirst();
  return row ? keyFromRow(row) : undefined;
}

export async function listApiKeys(
  db: Db,
  filter: KeyFilter,
  options: { limit: number; direction: 'asc' | 'desc'; after?: Cursor },
): Promise<ApiKeyRecord[]> {
  let q = db.selectFrom('api_keys').select(KEY_COLUMNS).where('organization_id', '=', filter.organizationId);
  if (filter.podId !== undefined) q = q.where('pod_id', '=', filter.podId);
  if (filter.inboxId !== undefined) q = q.where('inbox_id', '=', filter.inboxId);
  if (filter.podOnly) q = q.where('inbox_id', 'is', null);
  const after = options.after;
  if (after) q = q.where((eb) => afterKey(eb, 'created_at', 'id', after, options.direction));
  const rows = await q
    .orderBy('created_at', options.direction)
    .orderBy('id', options.direction)
    .limit(options.limit + 1)
    .execute();
  return rows.map(keyFromRow);
}

export async function updateApiKey(
  db: Db,
  organizationId: string,
  apiKeyId: string,
  changes: { name?: string; permissions?: Permissions; updatedAt: string },
): Promise<void> {
  await db
    .updateTable('api_keys')
    .set({
      ...(changes.name !== undefined ? { name: changes.name } : {}),
      ...(changes.permissions !== undefined
        ? { permissions: JSON.stringify(permissionsToWire(changes.permissions)) }
        : {}),
      updated_at: changes.updatedAt,
    })
    .where('id', '=', apiKeyId)
    .where('organization_id', '=', organizationId)
    .execute();
}

export async function deleteApiKey(db: Db, organizationId: string, apiKeyId: string): Promise<boolean> {
  const result = await db
    .deleteFrom('api_keys')
    .where('id', '=', apiKeyId)
    .where('organization_id', '=', organizationId)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Which of these key ids still exist (the rest were deleted, directly or with their pod, inbox or organization). */
export async function existingKeyIds(db: Db, apiKeyIds: readonly string[]): Promise<Set<string>> {
  const found = new Set<string>();
  // Chunks keep each statement within SQLite's and PostgreSQL's bound-parameter limits.
  for (let i = 0; i < apiKeyIds.length; i += 500) {
    const rows = await db
      .selectFrom('api_keys')
      .select('id')
      .where('id', 'in', apiKeyIds.slice(i, i + 500))
      .execute();
    for (const row of rows) found.add(row.id);
  }
  return found;
}

export async function deleteOrganizationKeys(db: Db, organizationId: string): Promise<void> {
  await db.deleteFrom('api_keys').where('organization_id', '=', organizationId).execute();
}

export interface AgentSignup {
  readonly organizationId: string;
  /** '' while no human is attached. */
  readonly humanEmail: string;
  readonly inboxId: string;
  readonly codeHash: string;
  readonly codeExpiresAt: string;
  readonly attempts: number;
  readonly verifiedAt: string | null;
  /** How often the human was replaced (POST /v0/agent/human). */
  readonly humanChanges?: number;
}

export async function insertAgentSignup(db: Db, s: AgentSignup & { createdAt: string }): Promise<void> {
  await db
    .insertInto('agent_signups')
    .values({
      organization_id: s.organizationId,
      human_email: s.humanEmail,
      inbox_id: s.inboxId,
      code_hash: s.codeHash,
      code_expires_at: s.codeExpiresAt,
      attempts: s.attempts,
      verified_at: s.verifiedAt,
      created_at: s.createdAt,
    })
    .execute();
}

function signupFromRow(row: {
  organization_id: string;
  human_email: string;
  inbox_id: string;
  code_hash: string;
  code_expires_at: string;
  attempts: number;
  verified_at: string | null;
  human_changes: number | string;
}): AgentSignup {
  return {
    organizationId: row.organization_id,
    humanEmail: row.human_email,
    inboxId: row.inbox_id,
    codeHash: row.code_hash,
    codeExpiresAt: row.code_expires_at,
    attempts: Number(row.attempts),
    verifiedAt: row.verified_at,
    humanChanges: Number(row.human_changes),
  };
}

export async function findAgentSignup(
  db: Db,
  organizationId: string,
  options: { lock?: boolean } = {},
): Promise<AgentSignup | undefined> {
  const q = db.selectFrom('agent_signups').selectAll().where('organization_id', '=', organizationId);
  const row = await (options.lock ? forUpdate(q, dialectOf(db)) : q).executeTakeFirst();
  return row ? signupFromRow(row) : undefined;
}

export async function findAgentSignupByInbox(db: Db, inboxId: string): Promise<AgentSignup | undefined> {
  const row = await db.selectFrom('agent_signups').selectAll().where('inbox_id', '=', inboxId).executeTakeFirst();
  return row ? signupFromRow(row) : undefined;
}

export async function updateAgentSignup(
  db: Db,
  organizationId: string,
  changes: {
    codeHash?: string;
    codeExpiresAt?: string;
    attempts?: number;
    verifiedAt?: string;
    humanEmail?: string;
    humanChanges?: number;
  },
): Promise<void> {
  await db
    .updateTable('agent_signups')
    .set({
      ...(changes.humanEmail !== undefined ? { human_email: changes.humanEmail } : {}),
      ...(changes.humanChanges !== undefined ? { human_changes: changes.humanChanges } : {}),
      ...(changes.codeHash !== undefined ? { code_hash: changes.codeHash } : {}),
      ...(changes.codeExpiresAt !== undefined ? { code_expires_at: changes.codeExpiresAt } : {}),
      ...(changes.attempts !== undefined ? { attempts: changes.attempts } : {}),
      ...(changes.verifiedAt !== undefined ? { verified_at: changes.verifiedAt } : {}),
    })
    .where('organization_id', '=', organizationId)
    .execute();
}
