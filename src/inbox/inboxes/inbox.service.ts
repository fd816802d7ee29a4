import type { Kysely } from 'kysely';
import type { Clock } from '../../platform/clock.js';
import { isUniqueViolation } from '../../platform/db/dialect.js';
import type { Ids } from '../../platform/ids.js';
import type { KeyOwner } from '../api-keys/api-key.repository.js';
import { findDefaultPodId } from '../api-keys/api-key.repository.js';
import type { InboxDatabase } from '../database.js';
import { decodeCursor, page } from '../../platform/db/cursor.js';
import { parseLimit } from '../lists/list-query.js';
import { DomainNotAllowedError, InboxAddressTakenError, InboxNotFoundError, InvalidUsernameError } from './inbox.errors.js';
import { deleteInbox, findInbox, findInboxByAddress, findInboxByClientId, insertInbox, listInboxes, updateInbox, type Inbox, type InboxMetadata } from './inbox.repository.js';
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
  if (entries.length > MAX_METADATA_KEYS) throw new ValidationError(`metadata: at most ${MAX_METADATA_KEYS} keys.`, 'metadata', 'INVALID_METADATA');
  for (const [key, value] of entries) {
    if (key.length === 0 || key.length > MAX_METADATA_LENGTH) throw new ValidationError(`metadata: keys are 1 to ${MAX_METADATA_LENGTH} characters long.`, 'metadata', 'INVALID_METADATA');
    const ok = (typeof value === 'string' && value.length <= MAX_METADATA_LENGTH) || (typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean' || (allowNull && value === null);
    if (!ok) throw new ValidationError(`metadata.${key.slice(0, 100)}: a value is a string of at most ${MAX_METADATA_LENGTH} characters, a number or a boolean${allowNull ? ' (null removes the key)' : ''}.`, 'metadata', 'INVALID_METADATA');
  }
}

const USERNAME = /^[a-z0-9_+-](?:[a-z0-9._+-]{0,62}[a-z0-9_+-])?$/;

/** Inbox ids are addresses; compare them case-insensitively by storing them lower-cased. */
export function normalizeInboxId(raw: string): string {
  return raw.trim().toLowerCase();
}

export interface InboxServiceDeps {
  readonly db: Kysely<InboxDatabase>;
  readonly clock: Clock;
  readonly ids: Ids;
  /** Local domains; the first is the default. */
  readonly domains: readonly string[];
}

export function createInboxService({ db, clock, ids, domains }: InboxServiceDeps) {
  const localDomains = domains.map((d) => d.toLowerCase());
  const local = localDomainSet(localDomains);

  return {
    localDomains,

    /** Creates an inbox, or returns the one created before with the same client_id. */
    async create(owner: KeyOwner, input: { username?: string; domain?: string; displayName?: string; clientId?: string; metadata?: InboxMetadata }): Promise<{ inbox: Inbox; created: boolean }> {
      if (input.metadata !== undefined) validateMetadata(input.metadata, false);
      if (input.clientId) {
        const existing = await findInboxByClientId(db, owner.organizationId, input.clientId);
        if (existing) return { inbox: existing, created: false };
      }
      // Any spelling of a local domain (Unicode or xn--, any case) names it as configured.
      const requested = (input.domain ?? localDomains[0] ?? '').trim().toLowerCase();
      const domain = local.spelling(requested);
      if (domain === undefined) throw new DomainNotAllowedError(input.domain ?? requested, localDomains);
      const username = input.username === undefined ? `agent-${ids.token(6).toLowerCase().replace(/[^a-z0-9]/g, 'x')}` : input.username.trim().toLowerCase();
      if (!USERNAME.test(username) || username.includes('..')) throw new InvalidUsernameError();
      const inboxId = `${username}@${domain}`;
      const podId = await findDefaultPodId(db, owner.organizationId);
      if (!podId) throw new Error(`organization ${owner.organizationId} has no pod`);
      const now = clock.now().toISOString();
      const inbox: Inbox = { inboxId, organizationId: owner.organizationId, podId, username, domain, displayName: input.displayName ?? null, clientId: input.clientId ?? null, metadata: input.metadata && Object.keys(input.metadata).length ? input.metadata : null, createdAt: now, updatedAt: now };
      try {
        await insertInbox(db, inbox);
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
        // Either the address is taken, or a concurrent create with the same client_id won.
        if (input.clientId) {
          const existing = await findInboxByClientId(db, owner.organizationId, input.clientId);
          if (existing) return { inbox: existing, created: false };
        }
        throw new InboxAddressTakenError(inboxId);
      }
      return { inbox, created: true };
    },

    async get(owner: KeyOwner, inboxId: string): Promise<Inbox> {
      const inbox = await findInbox(db, owner.organizationId, normalizeInboxId(inboxId));
      if (!inbox) throw new InboxNotFoundError(inboxId);
      return inbox;
    },

    async list(owner: KeyOwner, query: { limit?: number; pageToken?: string; ascending?: boolean }) {
      const limit = parseLimit(query.limit);
      const direction = query.ascending ? 'asc' : 'desc';
      const after = query.pageToken ? decodeCursor(query.pageToken, 'string') : undefined;
      const rows = await listInboxes(db, owner.organizationId, { limit, direction: after?.direction ?? direction, ...(after ? { after } : {}) });
      return { limit, ...page(rows, limit, (i) => ({ sort: i.createdAt, tiebreak: i.inboxId }), after?.direction ?? direction) };
    },

    /**
     * Changes the display name and/or merges metadata (a key set to null is removed; metadata null
     * clears it all). At least one of the two is required; an empty metadata object is refused.
     */
    async update(owner: KeyOwner, inboxId: string, change: { displayName?: string | null; metadata?: Readonly<Record<string, string | number | boolean | null>> | null }): Promise<Inbox> {
      if (change.displayName === undefined && change.metadata === undefined) throw new ValidationError('An update needs display_name or metadata.', 'display_name', 'EMPTY_UPDATE');
      if (change.metadata) {
        if (!Object.keys(change.metadata).length) throw new ValidationError('metadata: an empty object changes nothing; send null to clear the metadata.', 'metadata', 'INVALID_METADATA');
        validateMetadata(change.metadata, true);
      }
      const id = normalizeInboxId(inboxId);
      const current = await findInbox(db, owner.organizationId, id);
      if (!current) throw new InboxNotFoundError(inboxId);
      let metadata: InboxMetadata | null | undefined;
      if (change.metadata === null) metadata = null;
      else if (change.metadata !== undefined) {
        const merged: Record<string, string | number | boolean> = { ...(current.metadata ?? {}) };
        for (const [key, value] of Object.entries(change.metadata)) {
          if (value === null) delete merged[key];
          else merged[key] = value;
        }
        if (Object.keys(merged).length > MAX_METADATA_KEYS) throw new ValidationError(`metadata: at most ${MAX_METADATA_KEYS} keys.`, 'metadata', 'INVALID_METADATA');
        metadata = merged;
      }
      const set = { ...(change.displayName !== undefined ? { displayName: change.displayName } : {}), ...(metadata !== undefined ? { metadata } : {}) };
      if (!(await updateInbox(db, owner.organizationId, id, set, clock.now().toISOString()))) throw new InboxNotFoundError(inboxId);
      return (await findInbox(db, owner.organizationId, id)) as Inbox;
    },

    async delete(owner: KeyOwner, inboxId: string): Promise<void> {
      if (!(await deleteInbox(db, owner.organizationId, normalizeInboxId(inboxId)))) throw new InboxNotFoundError(inboxId);
    },

    /** Any organization's inbox at `address`, for local delivery. */
    async resolve(address: string): Promise<Inbox | undefined> {
      return findInboxByAddress(db, normalizeInboxId(address));
    },
  };
}

export type InboxService = ReturnType<typeof createInboxService>;
