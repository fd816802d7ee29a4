import { type NotFoundError, ForbiddenError, ValidationError } from '../../platform/errors/app-error.js';

/**
 * Who may see and change what. Every route answers for one key (`ownerOf(request)`): an
 * organization key sees the whole organization, a pod key one pod, an inbox key one inbox.
 * Out-of-scope records answer 404 (their existence is not revealed); a missing permission on a
 * record in scope answers 403.
 *
 * The permission names are AgentMail's `ApiKeyPermissions` (the Python SDK 2.0 and today's API
 * reference); the names SDK 0.5.27 knew for renamed ones stay accepted (PERMISSION_ALIASES). A
 * key without a permission set holds every permission; with a set, only those set to true.
 */
export const PERMISSIONS = [
  'inboxRead',
  'inboxCreate',
  'inboxUpdate',
  'inboxDelete',
  'messageRead',
  'messageSend',
  'messageUpdate',
  'messageDelete',
  'labelSpamRead',
  'labelBlockedRead',
  'labelUnauthenticatedRead',
  'labelTrashRead',
  'draftRead',
  'draftCreate',
  'draftUpdate',
  'draftDelete',
  'draftSend',
  'webhookRead',
  'webhookCreate',
  'webhookUpdate',
  'webhookDelete',
  'domainRead',
  'domainCreate',
  'domainUpdate',
  'domainDelete',
  'listEntryRead',
  'listEntryCreate',
  'listEntryDelete',
  'metricsRead',
  'apiKeyRead',
  'apiKeyCreate',
  'apiKeyUpdate',
  'apiKeyDelete',
  'appConnect',
  'appShareOwner',
  'podRead',
  'podCreate',
  'podDelete',
] as const;

export type Permission = (typeof PERMISSIONS)[number];
export type Permissions = Partial<Record<Permission, boolean>>;

/** The wire name of a permission (`inboxRead` → `inbox_read`). */
export function wirePermissionName(permission: Permission): string {
  return permission.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/**
 * The former wire names of renamed permissions (agentmail 0.5.27: `provider_connect`,
 * `provider_share_owner`; AgentMail now says `app_connect`, `app_share_owner`). Accepted on the
 * way in and written out beside the current names, so that clients of either SDK read them.
 */
export const PERMISSION_ALIASES: Readonly<Partial<Record<Permission, string>>> = {
  appConnect: 'provider_connect',
  appShareOwner: 'provider_share_owner',
};

/**
 * Wire permissions (snake_case, booleans) → Permissions; names not in PERMISSIONS (nor former
 * names) are dropped. A permission given under both names with two values is refused.
 */
export function permissionsFromWire(wire: Readonly<Record<string, unknown>>): Permissions {
  const out: Permissions = {};
  for (const p of PERMISSIONS) {
    const name = wirePermissionName(p);
    const alias = PERMISSION_ALIASES[p];
    const v = wire[name];
    const old = alias === undefined ? undefined : wire[alias];
    if (typeof v === 'boolean' && typeof old === 'boolean' && v !== old)
      throw new ValidationError(
        `permissions: ${name} and ${alias} (its former name) name one permission; they cannot differ.`,
        'permissions',
        'CONFLICTING_PERMISSIONS',
      );
    if (typeof v === 'boolean') out[p] = v;
    else if (typeof old === 'boolean') out[p] = old;
  }
  return out;
}

export function permissionsToWire(permissions: Permissions): Record<string, boolean> {
  const out: Record<string, boolean> = {};
  for (const p of PERMISSIONS) {
    const v = permissions[p];
    if (v === undefined) continue;
    out[wirePermissionName(p)] = v;
    const alias = PERMISSION_ALIASES[p];
    if (alias !== undefined) out[alias] = v;
  }
  return out;
}

/**
 * What an organization an agent signed up for itself may not do until the human it named enters
 * the code (POST /v0/agent/verify): create more inboxes, pods, keys, domains or list entries.
 * Its keys also send only to that human (KeyOwner.sendOnlyTo). docs/decisions/0018.
 */
export const UNVERIFIED_DENIED: readonly Permission[] = [
  'inboxCreate',
  'podCreate',
  'podDelete',
  'apiKeyCreate',
  'apiKeyUpdate',
  'apiKeyDelete',
  'domainCreate',
  'domainUpdate',
  'domainDelete',
  'listEntryCreate',
  'listEntryDelete',
];

/** The permissions a key holds: its own set, narrowed while its organization is unverified. */
export function effectivePermissions(stored: Permissions | undefined, unverified: boolean): Permissions | undefined {
  if (!unverified) return stored;
  const out: Permissions = {};
  for (const p of PERMISSIONS) out[p] = (stored === undefined || stored[p] === true) && !UNVERIFIED_DENIED.includes(p);
  return out;
}

export type ScopeType = 'organization' | 'pod' | 'inbox';

export function scopeTypeOf(owner: KeyOwner): ScopeType {
  if (owner.inboxId !== undefined) return 'inbox';
  if (owner.podId !== undefined) return 'pod';
  return 'organization';
}

export function holds(owner: KeyOwner, permission: Permission): boolean {
  return owner.permissions === undefined || owner.permissions[permission] === true;
}

/** 403 in the spec's error format when the key lacks `permission`. */
export function requirePermission(owner: KeyOwner, permission: Permission): void {
  if (!holds(owner, permission)) {
    if (owner.sendOnlyTo !== undefined && UNVERIFIED_DENIED.includes(permission)) {
      throw new ForbiddenError(
        `This organization is not verified yet: ${permission} is allowed after POST /v0/agent/verify.`,
        { code: 'ORGANIZATION_NOT_VERIFIED', details: { permission } },
      );
    }
    throw new ForbiddenError(`This API key lacks the ${permission} permission.`, {
      code: 'PERMISSION_DENIED',
      details: { permission },
    });
  }
}

/**
 * Lists that ask for labels hidden by default (include_spam, include_blocked, include_trash) need
 * the matching label permission (labelSpamRead, labelBlockedRead, labelTrashRead): 403 otherwise.
 */
export function requireLabelPermissions(
  owner: KeyOwner,
  query: { includeSpam?: boolean; includeBlocked?: boolean; includeTrash?: boolean },
): void {
  if (query.includeSpam) requirePermission(owner, 'labelSpamRead');
  if (query.includeBlocked) requirePermission(owner, 'labelBlockedRead');
  if (query.includeTrash) requirePermission(owner, 'labelTrashRead');
}

/** Whether a record of the organization, in pod `podId` and (if it has one) inbox `inboxId`, is in the key's scope. */
export function inScope(
  owner: KeyOwner,
  record: { organizationId: string; podId?: string | null; inboxId?: string | null },
): boolean {
  if (record.organizationId !== owner.organizationId) return false;
  if (owner.podId !== undefined && record.podId !== owner.podId) return false;
  if (owner.inboxId !== undefined && record.inboxId !== owner.inboxId) return false;
  return true;
}

/** Throws a NotFoundError built by `notFound` when the record is outside the key's scope. */
export function requireInScope(
  owner: KeyOwner,
  record: { organizationId: string; podId?: string | null; inboxId?: string | null },
  notFound: () => NotFoundError,
): void {
  if (!inScope(owner, record)) throw notFound();
}

/** 403 when a key limited to one pod or inbox asks for something wider (a new inbox of another pod, an organization key). */
export function requireWithinScope(owner: KeyOwner, scope: { podId?: string; inboxId?: string }, what: string): void {
  if (
    (owner.podId !== undefined && scope.podId !== owner.podId) ||
    (owner.inboxId !== undefined && scope.inboxId !== owner.inboxId)
  ) {
    throw new ForbiddenError(
      `This API key is limited to ${owner.inboxId !== undefined ? `inbox ${owner.inboxId}` : `pod ${owner.podId}`}: it cannot ${what}.`,
      { code: 'OUT_OF_SCOPE', details: { scope_type: scopeTypeOf(owner) } },
    );
  }
}

/**
 * Whether `owner` may hand its rights on to a new key with `scope` and `permissions`: never wider
 * than its own scope, never a permission it does not hold.
 */
export function mayDelegate(
  owner: KeyOwner,
  scope: { podId?: string; inboxId?: string; inboxPodId?: string },
  permissions: Permissions | undefined,
): boolean {
  if (owner.podId !== undefined) {
    const pod = scope.podId ?? scope.inboxPodId;
    if (pod !== owner.podId) return false;
  }
  if (owner.inboxId !== undefined && scope.inboxId !== owner.inboxId) return false;
  if (owner.permissions === undefined) return true;
  if (permissions === undefined) return false;
  return PERMISSIONS.every((p) => permissions[p] !== true || owner.permissions?.[p] === true);
}

export interface KeyOwner {
  readonly apiKeyId: string;
  readonly organizationId: string;
  /** Set for keys limited to one pod (and for inbox keys: the inbox's pod). */
  readonly podId?: string;
  /** Set for keys limited to one inbox. */
  readonly inboxId?: string;
  /** Undefined: every permission. Otherwise only those set to true (see `holds` above). */
  readonly permissions?: Permissions;
  /** Set while the key's organization is an unverified agent sign-up: the only address it may mail. */
  readonly sendOnlyTo?: string;
}

/** Prefix of every inbox API key, as AgentMail's keys start with `am_`. */
export const API_KEY_PREFIX = 'am_';
