import { checkUsername } from './username.js';
import { findScopedInbox } from './inbox-scope.js';
import { normalizeInboxId, type Inbox, type InboxMetadata, type InboxStatus } from '../core/inbox.js';
import type { Kysely } from 'kysely';
import type { Clock } from '../../platform/clock.js';
import { isForeignKeyViolation, isUniqueViolation } from '../../platform/db/dialect.js';
import type { Ids } from '../../platform/ids.js';
import { type KeyOwner, inScope, requirePermission, requireWithinScope } from '../core/scope.js';
import { findDefaultPodId, findPod, insertPod } from '../pods/pod.repository.js';
import type { InboxDatabase } from '../schema/database.js';
import { decodeCursor, page } from '../../platform/db/cursor.js';
import { parseLimit } from '../lists/list-query.js';
import { PodNotFoundError } from '../pods/pod.errors.js';
import { DomainNotAllowedError, InboxAddressTakenError, InboxNotFoundError } from './inbox.errors.js';
import {
  deleteInbox,
  findInbox,
  findInboxByAddress,
  findInboxByClientId,
  insertInbox,
  listInboxes,
  updateInbox,
} from './inbox.repository.js';
import { localDomainSet } from '../mail/domains.js';
import { ValidationError } from '../../platform/errors/app-error.js';

const MAX_METADATA_KEYS = 256;
const MAX_METADATA_LENGTH = 256;

/**
 * SDK 0.5 inbox metadata: up to 256 keys of 1 to 256 characters; values are strings of at most 256
 * characters, finite numbers or booleans (`null` only in updates, where it removes the key).
 */
export function validateMetadata(metadata: Readonly<Record<string, unknown>>, allowNull: boolean): void {
  const entries = Object.entries(metadata);
  if (entries.length > MAX_METADATA_KEYS)
    throw new ValidationError(`metadata: at most ${MAX_METADATA_KEYS} keys.`, 'metadata', 'INVALID_METADATA');
  for (const [key, value] of entries) {
    if (key.length === 0 || key.length > MAX_METADATA_LENGTH)
      throw new ValidationError(
        `metadata: keys are 1 to ${MAX_METADATA_LENGTH} characters long.`,
        'metadata',
        'INVALID_METADATA',
      );
    const ok =
      (typeof value === 'string' && value.length <= MAX_METADATA_LENGTH) ||
      (typeof value === 'number' && Number.isFinite(value)) ||
      typeof value === 'boolean' ||
      (allowNull && value === null);
    if (!ok)
      throw new ValidationError(
        `metadata.${key.slice(0, 100)}: a value is a string of at most ${MAX_METADATA_LENGTH} characters, a number or a boolean${allowNull ? ' (null removes the key)' : ''}.`,
        'metadata',
        'INVALID_METADATA',
      );
  }
}

export interface InboxServiceDeps {
  readonly db: Kysely<InboxDatabase>;
  readonly clock: Clock;
  readonly ids: Ids;
  /** Local domains; the first is the default. */
  readonly domains: readonly string[];
  /**
   * For a domain that is not one of `domains`: its spelling when the organization verified it
   * for the pod (domains/), undefined when it is no domain of the organization's; throws when
   * the organization has it unverified or another organization owns it.
   */
  readonly customDomain?: (owner: KeyOwner, podId: string, domain: string) => Promise<string | undefined>;
  /** Told after an inbox was created or deleted (usage counts, its allow and block lists). */
  readonly lifecycle?: { created(inbox: Inbox): Promise<void>; deleted(inbox: Inbox): Promise<void> };
}

export function createInboxService({ db, clock, ids, domains, customDomain, lifecycle }: InboxServiceDeps) {
  const localDomains = domains.map((d) => d.toLowerCase());
  const local = localDomainSet(localDomains);

  return {
    localDomains,

    /** Creates an inbox, or returns the one created before with the same client_id. */
    async create(
      owner: KeyOwner,
      input: {
        username?: string;
        domain?: string;
        displayName?: string;
        clientId?: string;
        metadata?: InboxMetadata;
        status?: InboxStatus;
      },
      inPod?: string,
    ): Promise<{ inbox: Inbox; created: boolean }> {
      requirePermission(owner, 'inboxCreate');
      if (input.metadata !== undefined) validateMetadata(input.metadata, false);
      // The pod of the route, else the key's, else the organization's default pod.
      const wantedPod = inPod ?? owner.podId;
      requireWithinScope(owner, { ...(wantedPod !== undefined ? { podId: wantedPod } : {}) }, 'create inboxes');
      if (inPod !== undefined && !(await findPod(db, owner.organizationId, inPod))) throw new PodNotFoundError(inPod);
      if (input.clientId) {
        const existing = await findInboxByClientId(db, owner.organizationId, input.clientId);
        if (existing && inScope(owner, existing) && (inPod === undefined || existing.podId === inPod))
          return { inbox: existing, created: false };
        if (existing) throw new InboxAddressTakenError(existing.inboxId);
      }
      // Any spelling of a local domain (Unicode or xn--, any case) names it as configured.
      const requested = (input.domain ?? localDomains[0] ?? '').trim().toLowerCase();
      let domain = local.spelling(requested);
      let podId = wantedPod ?? (await findDefaultPodId(db, owner.organizationId));
      // A verified domain of the organization (or of the pod); a pod yet to be made has none of its own.
      if (domain === undefined && customDomain) domain = await customDomain(owner, podId ?? '', requested);
      if (domain === undefined) throw new DomainNotAllowedError(input.domain ?? requested, localDomains);
      const username =
        input.username === undefined
          ? `agent-${ids
              .token(6)
              .toLowerCase()
              .replace(/[^a-z0-9]/g, 'x')}`
          : checkUsername(input.username);
      const inboxId = `${username}@${domain}`;
      const now = clock.now().toISOString();
      if (podId === undefined) {
        // Every pod of the organization was deleted: a new default pod takes the inbox.
        podId = ids.uuid();
        await insertPod(db, { id: podId, organizationId: owner.organizationId, name: 'default', createdAt: now });
      }
      const inbox: Inbox = {
        inboxId,
        organizationId: owner.organizationId,
        podId,
        username,
        domain,
        displayName: input.displayName ?? null,
        clientId: input.clientId ?? null,
        metadata: input.metadata && Object.keys(input.metadata).length ? input.metadata : null,
        status: input.status ?? 'active',
        createdAt: now,
        updatedAt: now,
      };
      try {
        await insertInbox(db, inbox);
      } catch (err) {
        // The pod was deleted meanwhile.
        if (isForeignKeyViolation(err)) throw new PodNotFoundError(podId);
        if (!isUniqueViolation(err)) throw err;
        // Either the address is taken, or a concurrent create with the same client_id won.
        if (input.clientId) {
          const existing = await findInboxByClientId(db, owner.organizationId, input.clientId);
          if (existing && inScope(owner, existing) && existing.podId === podId)
            return { inbox: existing, created: false };
        }
        throw new InboxAddressTakenError(inboxId);
      }
      await lifecycle?.created(inbox);
      return { inbox, created: true };
    },

    /** With `podId` (the pod routes), only an inbox of that pod. */
    async get(owner: KeyOwner, inboxId: string, podId?: string): Promise<Inbox> {
      requirePermission(owner, 'inboxRead');
      const inbox = await findScopedInbox(db, owner, inboxId, podId);
      if (!inbox) throw new InboxNotFoundError(inboxId);
      return inbox;
    },

    async list(owner: KeyOwner, query: { limit?: number; pageToken?: string; ascending?: boolean }, podId?: string) {
      requirePermission(owner, 'inboxRead');
      const limit = parseLimit(query.limit);
      const direction = query.ascending ? 'asc' : 'desc';
      const after = query.pageToken ? decodeCursor(query.pageToken, 'string') : undefined;
      const scope = {
        organizationId: owner.organizationId,
        ...(owner.podId !== undefined || podId !== undefined ? { podId: (owner.podId ?? podId) as string } : {}),
        ...(owner.inboxId !== undefined ? { inboxId: owner.inboxId } : {}),
      };
      // A pod route of another pod than the key's lists nothing (the route checked the pod already).
      const rows =
        podId !== undefined && owner.podId !== undefined && podId !== owner.podId
          ? []
          : await listInboxes(db, scope, {
              limit,
              direction: after?.direction ?? direction,
              ...(after ? { after } : {}),
            });
      return {
        limit,
        ...page(rows, limit, (i) => ({ sort: i.createdAt, tiebreak: i.inboxId }), after?.direction ?? direction),
      };
    },

    /**
     * Changes the display name, merges metadata (a key set to null is removed; metadata null
     * clears it all) and/or sets the status (`paused`: sends refused, mail still received). At
     * least one is required; an empty metadata object is refused. With `podId` (the pod routes),
     * only an inbox of that pod.
     */
    async update(
      owner: KeyOwner,
      inboxId: string,
      change: {
        displayName?: string | null;
        metadata?: Readonly<Record<string, string | number | boolean | null>> | null;
        status?: InboxStatus;
      },
      podId?: string,
    ): Promise<Inbox> {
      requirePermission(owner, 'inboxUpdate');
      if (change.displayName === undefined && change.metadata === undefined && change.status === undefined)
        throw new ValidationError('An update needs display_name, metadata or status.', 'display_name', 'EMPTY_UPDATE');
      if (change.metadata) {
        if (!Object.keys(change.metadata).length)
          throw new ValidationError(
            'metadata: an empty object changes nothing; send null to clear the metadata.',
            'metadata',
            'INVALID_METADATA',
          );
        validateMetadata(change.metadata, true);
      }
      const current = await findScopedInbox(db, owner, inboxId, podId);
      if (!current) throw new InboxNotFoundError(inboxId);
      const id = current.inboxId;
      let metadata: InboxMetadata | null | undefined;
      if (change.metadata === null) metadata = null;
      else if (change.metadata !== undefined) {
        const merged: Record<string, string | number | boolean> = { ...(current.metadata ?? {}) };
        for (const [key, value] of Object.entries(change.metadata)) {
          if (value === null) delete merged[key];
          else merged[key] = value;
        }
        if (Object.keys(merged).length > MAX_METADATA_KEYS)
          throw new ValidationError(`metadata: at most ${MAX_METADATA_KEYS} keys.`, 'metadata', 'INVALID_METADATA');
        metadata = merged;
      }
      const set = {
        ...(change.displayName !== undefined ? { displayName: change.displayName } : {}),
        ...(metadata !== undefined ? { metadata } : {}),
        ...(change.status !== undefined ? { status: change.status } : {}),
      };
      if (!(await updateInbox(db, owner.organizationId, id, set, clock.now().toISOString())))
        throw new InboxNotFoundError(inboxId);
      return (await findInbox(db, owner.organizationId, id)) as Inbox;
    },

    async delete(owner: KeyOwner, inboxId: string, podId?: string): Promise<void> {
      requirePermission(owner, 'inboxDelete');
      const inbox = await findScopedInbox(db, owner, inboxId, podId);
      if (!inbox || !(await deleteInbox(db, owner.organizationId, inbox.inboxId)))
        throw new InboxNotFoundError(inboxId);
      await lifecycle?.deleted(inbox);
    },

    /** Any organization's inbox at `address`, for local delivery. */
    async resolve(address: string): Promise<Inbox | undefined> {
      return findInboxByAddress(db, normalizeInboxId(address));
    },
  };
}

export type InboxService = ReturnType<typeof createInboxService>;
