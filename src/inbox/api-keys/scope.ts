import type { NotFoundError } from '../../platform/errors/app-error.js';
import { ForbiddenError } from '../../platform/errors/app-error.js';
import type { KeyOwner } from './api-key.repository.js';

/**
 * Who may see and change what. Every route answers for one key (`ownerOf(request)`): an
 * organization key sees the whole organization, a pod key one pod, an inbox key one inbox.
 * Out-of-scope records answer 404 (their existence is not revealed); a missing permission on a
 * record in scope answers 403.
 *
 * The permission names are the SDK's `ApiKeyPermissions` (agentmail 0.5.27). A key without a
 * permission set holds every permission; with a set, only those set to true.
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
] as const;

export type Permission = (typeof PERMISSIONS)[number];
export type Permissions = Partial<Record<Permission, boolean>>;

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
    throw new ForbiddenError(`This API key lacks the ${permission} permission.`, { code: 'PERMISSION_DENIED', details: { permission } });
  }
}

/** Whether a record of the organization, in pod `podId` and (if it has one) inbox `inboxId`, is in the key's scope. */
export function inScope(owner: KeyOwner, record: { organizationId: string; podId?: string | null; inboxId?: string | null }): boolean {
  if (record.organizationId !== owner.organizationId) return false;
  if (owner.podId !== undefined && record.podId !== owner.podId) return false;
  if (owner.inboxId !== undefined && record.inboxId !== owner.inboxId) return false;
  return true;
}

/** Throws a NotFoundError built by `notFound` when the record is outside the key's scope. */
export function requireInScope(owner: KeyOwner, record: { organizationId: string; podId?: string | null; inboxId?: string | null }, notFound: () => NotFoundError): void {
  if (!inScope(owner, record)) throw notFound();
}

/**
 * Whether `owner` may hand its rights on to a new key with `scope` and `permissions`: never wider
 * than its own scope, never a permission it does not hold.
 */
export function mayDelegate(owner: KeyOwner, scope: { podId?: string; inboxId?: string; inboxPodId?: string }, permissions: Permissions | undefined): boolean {
  if (owner.podId !== undefined) {
    const pod = scope.podId ?? scope.inboxPodId;
    if (pod !== owner.podId) return false;
  }
  if (owner.inboxId !== undefined && scope.inboxId !== owner.inboxId) return false;
  if (owner.permissions === undefined) return true;
  if (permissions === undefined) return false;
  return PERMISSIONS.every((p) => permissions[p] !== true || owner.permissions?.[p] === true);
}
