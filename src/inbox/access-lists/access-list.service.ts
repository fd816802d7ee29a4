import type { Kysely } from 'kysely';
import type { Clock } from '../../platform/clock.js';
import { decodeCursor, page } from '../../platform/db/cursor.js';
import type { GroupCommit } from '../../platform/db/group-commit.js';
import { type KeyOwner, requireInScope, requirePermission } from '../core/scope.js';
import { podInScope } from '../pods/pod-scope.js';
import { PodNotFoundError } from '../pods/pod.errors.js';
import type { Db, InboxDatabase } from '../schema/database.js';
import type { Inbox } from '../core/inbox.js';
import { requireScopedInbox } from '../inboxes/inbox-scope.js';
import { parseLimit } from '../lists/list-query.js';
import { addressOf, isValidAddress } from '../mail/compose.js';
import { addressKey, domainKey } from '../mail/domains.js';
import {
  InvalidListEntryError,
  InvalidListPathError,
  ListEntryExistsError,
  ListEntryNotFoundError,
  ListNotFoundError,
  RecipientBlockedError,
  type ListRule,
} from './access-list.errors.js';
import {
  DIRECTIONS,
  LIST_TYPES,
  deleteEntry,
  findEntry,
  inboxesThatSent,
  insertEntry,
  listEntries,
  listsPresent,
  matchingEntries,
  scopeKeyOf,
  type AccessListEntry,
  type Direction,
  type EntryType,
  type ListLevel,
  type ListType,
} from './access-list.repository.js';

const MAX_REASON = 1000;
/** A DNS name: LDH labels of at most 63 characters, at most 253 in all. */
const DOMAIN = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** An entry as lists store and compare it: an address (lower case, ASCII domain) or a domain (ASCII, lower case). */
export function normalizeEntry(raw: string): { entry: string; entryType: EntryType } {
  const value = raw.trim();
  if (!value) throw new InvalidListEntryError(raw, 'is empty: give an email address or a domain.');
  if (value.includes('@')) {
    if (!isValidAddress(value)) throw new InvalidListEntryError(raw, 'is not a valid email address.');
    return { entry: addressKey(value), entryType: 'email' };
  }
  const domain = domainKey(value.replace(/\.$/, ''));
  if (!DOMAIN.test(domain)) throw new InvalidListEntryError(raw, 'is neither an email address nor a domain name.');
  return { entry: domain, entryType: 'domain' };
}

/** What may match an address: itself, its domain and every parent domain (`a@x.example.com` → `x.example.com`, `example.com`, `com`). */
export function candidatesOf(address: string): string[] {
  const key = addressKey(addressOf(address));
  const at = key.lastIndexOf('@');
  const labels = (at < 0 ? key : key.slice(at + 1)).split('.');
  return [...(at < 0 ? [] : [key]), ...labels.map((_, i) => labels.slice(i).join('.')).filter(Boolean)];
}

export function parseDirection(value: string): Direction {
  if (!(DIRECTIONS as readonly string[]).includes(value))
    throw new InvalidListPathError('direction', value, DIRECTIONS);
  return value as Direction;
}

export function parseListType(value: string): ListType {
  if (!(LIST_TYPES as readonly string[]).includes(value)) throw new InvalidListPathError('type', value, LIST_TYPES);
  return value as ListType;
}

/** Which list an API call names: the level (from the route) and the path's direction and type. */
export type ListAddress =
  | { readonly level: 'organization' }
  | { readonly level: 'pod'; readonly podId: string }
  | { readonly level: 'inbox'; readonly inboxId: string };

export interface AccessListServiceDeps {
  readonly db: Kysely<InboxDatabase>;
  readonly commits: GroupCommit<InboxDatabase>;
  readonly clock: Clock;
}

/** The inbox levels that screen mail of `inbox`, widest first. */
function levelsOf(inbox: Pick<Inbox, 'podId' | 'inboxId'>): ListLevel[] {
  return [
    { kind: 'organization' },
    { kind: 'pod', podId: inbox.podId },
    { kind: 'inbox', podId: inbox.podId, inboxId: inbox.inboxId },
  ];
}

type Match = Awaited<ReturnType<typeof matchingEntries>>[number];

/**
 * The verdict of the lists of `levels` in `direction` on an address (docs/decisions/0020): a block
 * entry at any level refuses it; every level with an allow list must name it (narrower levels can
 * only narrow what wider ones let through, never reopen it). Undefined: let through.
 */
function verdict(
  levels: readonly ListLevel[],
  direction: Direction,
  candidates: readonly string[],
  matches: readonly Match[],
  allowPresent: ReadonlySet<string>,
): ListRule | undefined {
  const at = (level: ListLevel, listType: ListType) =>
    matches.find(
      (m) =>
        m.scopeKey === scopeKeyOf(level) &&
        m.direction === direction &&
        m.listType === listType &&
        candidates.includes(m.entry),
    );
  for (const level of levels) {
    const blocked = at(level, 'block');
    if (blocked) return { level: level.kind, direction, listType: 'block', entry: blocked.entry };
  }
  for (const level of levels) {
    if (allowPresent.has(`${scopeKeyOf(level)}|${direction}`) && !at(level, 'allow'))
      return { level: level.kind, direction, listType: 'allow' };
  }
  return undefined;
}

/**
 * The lists' part of the one delivery path (delivery.service.ts calls it at its screen point, in
 * the unit of work, with SQL only): send lists refuse a send outright; receive and reply lists
 * mark the copies they refuse (stored labelled `blocked`, no message.received).
 */
export function createListScreen() {
  return {
    /**
     * The lists' verdict on one delivery. `send`: the sender's send lists refuse the whole send
     * (throws RecipientBlockedError for the first refused recipient). `receive`: the recipient
     * inboxes whose receive lists (reply lists for mail answering a message the inbox sent) refuse
     * the sender, with the rule; inboxes of several organizations are screened each by their own
     * organization's lists. One presence probe per organization covers both sides, so a delivery
     * within an organization without lists spends one statement on them.
     */
    async screen(
      trx: Db,
      send: { from: Inbox; recipients: readonly string[] } | undefined,
      receive: { inboxes: readonly Inbox[]; from: string; answers: readonly string[] },
    ): Promise<Map<string, ListRule>> {
      const refused = new Map<string, ListRule>();
      const receiving: Direction[] = receive.answers.length ? ['receive', 'reply'] : ['receive'];
      const byOrganization = new Map<string, Inbox[]>();
      if (send?.recipients.length) byOrganization.set(send.from.organizationId, []);
      for (const inbox of receive.inboxes)
        byOrganization.set(inbox.organizationId, [...(byOrganization.get(inbox.organizationId) ?? []), inbox]);
      const senderCandidates = candidatesOf(receive.from);
      for (const [organizationId, own] of byOrganization) {
        const sending = send?.recipients.length && send.from.organizationId === organizationId ? send : undefined;
        const probes = [
          ...(sending
            ? levelsOf(sending.from).map((l) => ({ direction: 'send' as Direction, scopeKey: scopeKeyOf(l) }))
            : []),
          ...[...new Set(own.flatMap((i) => levelsOf(i).map(scopeKeyOf)))].flatMap((scopeKey) =>
            receiving.map((direction) => ({ direction, scopeKey })),
          ),
        ];
        const present = await listsPresent(trx, organizationId, probes);
        const listed = (d: Direction) => present.block.has(d) || [...present.allow].some((k) => k.endsWith(`|${d}`));
        if (sending && listed('send')) {
          const levels = levelsOf(sending.from);
          const candidates = new Map(sending.recipients.map((r) => [r, candidatesOf(r)]));
          const matches = await matchingEntries(
            trx,
            organizationId,
            ['send'],
            [...new Set([...candidates.values()].flat())],
          );
          for (const [recipient, candidatesOfRecipient] of candidates) {
            const rule = verdict(levels, 'send', candidatesOfRecipient, matches, present.allow);
            if (rule) throw new RecipientBlockedError(addressOf(recipient), rule);
          }
        }
        if (!own.length || !receiving.some(listed)) continue;
        const matches = await matchingEntries(trx, organizationId, receiving, senderCandidates);
        const answering =
          receive.answers.length && listed('reply')
            ? await inboxesThatSent(
                trx,
                own.map((i) => i.inboxId),
                receive.answers,
              )
            : new Set<string>();
        for (const inbox of own) {
          const rule = verdict(
            levelsOf(inbox),
            answering.has(inbox.inboxId) ? 'reply' : 'receive',
            senderCandidates,
            matches,
            present.allow,
          );
          if (rule) refused.set(inbox.inboxId, rule);
        }
      }
      return refused;
    },
  };
}

export type ListScreen = ReturnType<typeof createListScreen>;

/** Lists at the organization, pod and inbox levels, as the SDK's `lists`, `pods.lists` and `inboxes.lists` manage them. */
export function createAccessListService({ db, commits, clock }: AccessListServiceDeps) {
  /** The level a call names, checked against the key's organization and scope (404 outside it). */
  async function levelOf(owner: KeyOwner, address: ListAddress): Promise<ListLevel> {
    if (address.level === 'organization') {
      requireInScope(
        owner,
        { organizationId: owner.organizationId, podId: null, inboxId: null },
        () => new ListNotFoundError(),
      );
      return { kind: 'organization' };
    }
    if (address.level === 'pod') {
      // A pod out of reach is a list out of reach (LIST_NOT_FOUND), by the one pod check.
      const { podId } = await podInScope(db, owner, address.podId.trim()).catch((err: unknown) => {
        throw err instanceof PodNotFoundError ? new ListNotFoundError() : err;
      });
      return { kind: 'pod', podId };
    }
    const inbox = await requireScopedInbox(db, owner, address.inboxId);
    return { kind: 'inbox', podId: inbox.podId, inboxId: inbox.inboxId };
  }

  /** The stored spelling of an entry named in a path: normalised when valid, else as given (it then matches nothing). */
  const pathEntry = (raw: string) => {
    try {
      return normalizeEntry(raw).entry;
    } catch {
      return raw;
    }
  };

  return {
    async create(
      owner: KeyOwner,
      address: ListAddress,
      direction: string,
      type: string,
      input: { entry: string; reason?: string },
    ): Promise<AccessListEntry> {
      requirePermission(owner, 'listEntryCreate');
      const d = parseDirection(direction);
      const t = parseListType(type);
      const level = await levelOf(owner, address);
      const { entry, entryType } = normalizeEntry(input.entry);
      const reason = input.reason?.trim() || null;
      if (reason !== null && reason.length > MAX_REASON)
        throw new InvalidListEntryError(input.entry, `reason: at most ${MAX_REASON} characters.`);
      const stored: AccessListEntry = {
        organizationId: owner.organizationId,
        podId: level.kind === 'organization' ? null : level.podId,
        inboxId: level.kind === 'inbox' ? level.inboxId : null,
        direction: d,
        listType: t,
        entry,
        entryType,
        reason,
        createdAt: clock.now().toISOString(),
      };
      if (!(await commits.run((trx) => insertEntry(trx, stored, scopeKeyOf(level)))))
        throw new ListEntryExistsError(entry);
      return stored;
    },

    async get(
      owner: KeyOwner,
      address: ListAddress,
      direction: string,
      type: string,
      entry: string,
    ): Promise<AccessListEntry> {
      requirePermission(owner, 'listEntryRead');
      const d = parseDirection(direction);
      const t = parseListType(type);
      const level = await levelOf(owner, address);
      const found = await findEntry(db, owner.organizationId, scopeKeyOf(level), d, t, pathEntry(entry));
      if (!found) throw new ListEntryNotFoundError(entry);
      return found;
    },

    async list(
      owner: KeyOwner,
      address: ListAddress,
      direction: string,
      type: string,
      query: { limit?: number; pageToken?: string },
    ) {
      requirePermission(owner, 'listEntryRead');
      const d = parseDirection(direction);
      const t = parseListType(type);
      const limit = parseLimit(query.limit);
      const cursor = query.pageToken ? decodeCursor(query.pageToken, 'string') : undefined;
      const level = await levelOf(owner, address);
      const rows = await listEntries(db, owner.organizationId, scopeKeyOf(level), d, t, {
        limit,
        ...(cursor ? { after: cursor.sort } : {}),
      });
      return { limit, ...page(rows, limit, (e) => ({ sort: e.entry, tiebreak: e.entry }), 'asc') };
    },

    async delete(owner: KeyOwner, address: ListAddress, direction: string, type: string, entry: string): Promise<void> {
      requirePermission(owner, 'listEntryDelete');
      const d = parseDirection(direction);
      const t = parseListType(type);
      const level = await levelOf(owner, address);
      if (
        !(await commits.run((trx) => deleteEntry(trx, owner.organizationId, scopeKeyOf(level), d, t, pathEntry(entry))))
      )
        throw new ListEntryNotFoundError(entry);
    },
  };
}

export type AccessListService = ReturnType<typeof createAccessListService>;
