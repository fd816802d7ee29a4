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
import { deleteInbox, findInbox, findInboxByAddress, findInboxByClientId, insertInbox, listInboxes, updateInboxDisplayName, type Inbox } from './inbox.repository.js';
import { localDomainSet } from '../mail/domains.js';

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
  /**
   * For a domain that is not one of `domains`: its spelling when the organization verified it
   * for the pod (domains/), undefined when it is no domain of the organization's; throws when
   * the organization has it unverified or another organization owns it.
   */
  readonly customDomain?: (owner: KeyOwner, podId: string, domain: string) => Promise<string | undefined>;
}

export function createInboxService({ db, clock, ids, domains, customDomain }: InboxServiceDeps) {
  const localDomains = domains.map((d) => d.toLowerCase());
  const local = localDomainSet(localDomains);

  return {
    localDomains,

    /** Creates an inbox, or returns the one created before with the same client_id. */
    async create(owner: KeyOwner, input: { username?: string; domain?: string; displayName?: string; clientId?: string }): Promise<{ inbox: Inbox; created: boolean }> {
      if (input.clientId) {
        const existing = await findInboxByClientId(db, owner.organizationId, input.clientId);
        if (existing) return { inbox: existing, created: false };
      }
      // Any spelling of a local domain (Unicode or xn--, any case) names it as configured.
      const requested = (input.domain ?? localDomains[0] ?? '').trim().toLowerCase();
      let domain = local.spelling(requested);
      const podId = await findDefaultPodId(db, owner.organizationId);
      if (!podId) throw new Error(`organization ${owner.organizationId} has no pod`);
      if (domain === undefined && customDomain) domain = await customDomain(owner, podId, requested);
      if (domain === undefined) throw new DomainNotAllowedError(input.domain ?? requested, localDomains);
      const username = input.username === undefined ? `agent-${ids.token(6).toLowerCase().replace(/[^a-z0-9]/g, 'x')}` : input.username.trim().toLowerCase();
      if (!USERNAME.test(username) || username.includes('..')) throw new InvalidUsernameError();
      const inboxId = `${username}@${domain}`;
      const now = clock.now().toISOString();
      const inbox: Inbox = { inboxId, organizationId: owner.organizationId, podId, username, domain, displayName: input.displayName ?? null, clientId: input.clientId ?? null, createdAt: now, updatedAt: now };
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

    async updateDisplayName(owner: KeyOwner, inboxId: string, displayName: string | null): Promise<Inbox> {
      const id = normalizeInboxId(inboxId);
      if (!(await updateInboxDisplayName(db, owner.organizationId, id, displayName, clock.now().toISOString()))) throw new InboxNotFoundError(inboxId);
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
