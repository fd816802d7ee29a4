import type { Kysely } from 'kysely';
import { decodeCursor, encodeCursor } from '../../platform/db/cursor.js';
import { afterUnits } from '../../platform/db/group-commit.js';
import { ValidationError } from '../../platform/errors/app-error.js';
import { type KeyOwner, requireLabelPermissions, requirePermission } from '../core/scope.js';
import { podInScope } from '../pods/pod-scope.js';
import type { Db, InboxDatabase } from '../schema/database.js';
import type { ComposedMessage, StoreHook } from '../mailstore/delivery.service.js';
import type { Inbox } from '../core/inbox.js';
import { requireScopedInbox } from '../inboxes/inbox-scope.js';
import { HIDDEN_BY_DEFAULT, parseLimit } from '../lists/list-query.js';
import { findMessagesByPks } from '../mailstore/message.repository.js';
import { type Message } from '../core/message.js';
import { inboxPool, OFFLOAD_WORDS_CHARS } from '../offload.js';
import { findThreadsByIds } from '../mailstore/thread.repository.js';
import { type Thread } from '../core/thread.js';
import {
  indexMessages,
  rebuildThreadDocument,
  stillStored,
  searchInboxRows,
  searchMessageHits,
  searchThreadHits,
  TIERS,
  type Hit,
  type SearchFilter,
  type SearchScope,
  type Tier,
} from './search.repository.js';
import {
  bodyParts,
  distinctBodyWords,
  InvalidQueryError,
  messageDocument,
  parseQuery,
  wordsOf,
  type QueryTerm,
  type SearchDocument,
} from '../core/search-text.js';

export interface SearchQuery {
  readonly q?: string;
  readonly limit?: number;
  readonly pageToken?: string;
  readonly before?: string;
  readonly after?: string;
  /**
   * Messages hidden by default, asked for with the label permission a list needs (IMAP's Trash
   * and Spam folders; the REST routes do not offer them).
   */
  readonly includeSpam?: boolean;
  readonly includeBlocked?: boolean;
  readonly includeTrash?: boolean;
}

export interface SearchPage<T> {
  readonly limit: number;
  readonly items: T[];
  readonly nextPageToken: string | undefined;
}

/** Search leaves out what lists leave out by default (spam, blocked, trash): it has no include_* flags. */
const HIDDEN = Object.keys(HIDDEN_BY_DEFAULT);

function time(field: 'before' | 'after', value: string | undefined): Partial<Record<'before' | 'after', string>> {
  if (value === undefined) return {};
  const t = new Date(value);
  if (Number.isNaN(t.getTime()))
    throw new ValidationError(`${field} must be an ISO-8601 date-time.`, field, 'INVALID_DATE');
  return { [field]: t.toISOString() };
}

/** A page token of a search: the tier and key of the last hit. */
function decodeSearchCursor(token: string | undefined): { tier: Tier; rank: number } | undefined {
  if (!token) return undefined;
  const c = decodeCursor(token, 'integer');
  const tier = Number(c.sort) as Tier;
  if (c.direction !== 'desc' || !TIERS.includes(tier) || String(tier) !== c.sort)
    throw new ValidationError('page_token is not a token this API issued.', 'page_token', 'INVALID_PAGE_TOKEN');
  return { tier, rank: c.tiebreak as number };
}

function nextToken(hits: readonly Hit[], limit: number): string | undefined {
  const last = hits[limit - 1];
  return hits.length > limit && last
    ? encodeCursor({ sort: String(last.tier), tiebreak: last.rank, direction: 'desc' })
    : undefined;
}

/**
 * A message's `distinctBodyWords`; in a worker thread when the body they are read from (its text,
 * or its HTML when it has none) has OFFLOAD_WORDS_CHARS or more.
 */
async function bodyWordsOf(message: Pick<ComposedMessage, 'text' | 'html' | 'attachments'>): Promise<string[]> {
  if ((message.text ?? message.html ?? '').length < OFFLOAD_WORDS_CHARS) return distinctBodyWords(message);
  return inboxPool().run<string[]>('bodyWords', bodyParts(message));
}

/**
 * Full-text search of messages and threads (index maintained in the delivery transaction by
 * store hook), and search of inboxes by address and display name. docs/decisions/0017.
 */
export function createSearchService({ db }: { db: Kysely<InboxDatabase> }) {
  /** Where a thread search looks: the route's inbox or pod, narrowed by the key's scope. */
  async function threadScope(owner: KeyOwner, where: { inboxId?: string; podId?: string }): Promise<SearchScope> {
    if (where.inboxId !== undefined) {
      const inbox = await requireScopedInbox(db, owner, where.inboxId);
      return { organizationId: owner.organizationId, inboxId: inbox.inboxId };
    }
    if (where.podId !== undefined) await podInScope(db, owner, where.podId);
    const podId = where.podId ?? owner.podId;
    return {
      organizationId: owner.organizationId,
      ...(podId !== undefined ? { podId } : {}),
      ...(owner.inboxId !== undefined ? { inboxId: owner.inboxId } : {}),
    };
  }

  function prepare(query: SearchQuery): {
    terms: QueryTerm[];
    limit: number;
    filter: SearchFilter;
    after: { tier: Tier; rank: number } | undefined;
  } {
    const terms = parseQuery(query.q);
    const limit = parseLimit(query.limit);
    return {
      terms,
      limit,
      filter: {
        hidden: HIDDEN.filter((label) => query[HIDDEN_BY_DEFAULT[label as keyof typeof HIDDEN_BY_DEFAULT]] !== true),
        ...time('before', query.before),
        ...time('after', query.after),
      },
      after: decodeSearchCursor(query.pageToken),
    };
  }

  /**
   * The delivery's store hook: the body's words before the unit of work (the costly part, for a
   * big message; `bodyWordsOf`), then in it each copy's document and its rows. The copies share
   * everything but bcc, which only the sender's copy keeps: a document per distinct bcc, not per
   * copy.
   */
  const indexHook: StoreHook = async (composed) => {
    const body = await bodyWordsOf(composed);
    return async (trx, stored) => {
      const docs = new Map<string, SearchDocument>();
      const docOf = (message: Message): SearchDocument => {
        const key = message.bcc.join('\n');
        let doc = docs.get(key);
        if (!doc) docs.set(key, (doc = messageDocument(message, body)));
        return doc;
      };
      const entries = stored.map(({ inbox, message, thread }) => ({
        pk: message.pk,
        threadId: thread.threadId,
        scope: { organizationId: inbox.organizationId, podId: inbox.podId, inboxId: inbox.inboxId },
        doc: docOf(message),
      }));
      // At the end of the batch (group-commit.ts afterUnits). A unit that ran after this one in
      // the batch may have deleted a copy: its document must not outlive it, nor go to a later
      // message that is given the same key.
      await afterUnits(trx, async (afterOthers) =>
        indexMessages(trx, afterOthers ? await stillStored(trx, entries) : entries),
      );
    };
  };

  return {
    indexHook,

    /** After a message of the thread was deleted (in that transaction): the thread's document without it. */
    rebuildThread: (trx: Db, threadId: string) => rebuildThreadDocument(trx, threadId),

    /** Messages of one inbox matching `q`, best first (subject, then addresses, then anywhere; newest first within each). */
    async messages(owner: KeyOwner, inboxId: string, query: SearchQuery): Promise<SearchPage<Message>> {
      requirePermission(owner, 'messageRead');
      requireLabelPermissions(owner, query);
      const { terms, limit, filter, after } = prepare(query);
      const inbox = await requireScopedInbox(db, owner, inboxId);
      const hits = await searchMessageHits(
        db,
        { organizationId: owner.organizationId, inboxId: inbox.inboxId },
        terms,
        filter,
        limit + 1,
        after,
      );
      const byPk = new Map(
        (
          await findMessagesByPks(
            db,
            hits.slice(0, limit).map((h) => h.rank),
          )
        ).map((m) => [m.pk, m]),
      );
      return {
        limit,
        items: hits.slice(0, limit).flatMap((h) => byPk.get(h.rank) ?? []),
        nextPageToken: nextToken(hits, limit),
      };
    },

    /** Threads of an inbox, a pod or the key's whole scope matching `q`, ranked like messages (newest message first within a tier). */
    async threads(
      owner: KeyOwner,
      where: { inboxId?: string; podId?: string },
      query: SearchQuery,
    ): Promise<SearchPage<Thread>> {
      requirePermission(owner, 'messageRead');
      const { terms, limit, filter, after } = prepare(query);
      const scope = await threadScope(owner, where);
      const hits = await searchThreadHits(db, scope, terms, filter, limit + 1, after);
      const byId = new Map(
        (
          await findThreadsByIds(
            db,
            hits.slice(0, limit).map((h) => h.threadId),
          )
        ).map((t) => [t.threadId, t]),
      );
      return {
        limit,
        items: hits.slice(0, limit).flatMap((h) => byId.get(h.threadId) ?? []),
        nextPageToken: nextToken(hits, limit),
      };
    },

    /**
     * Inboxes whose address or display name has words starting with each word of `q` (2 to 256
     * characters), newest first, in the key's scope (and the route's pod).
     */
    async inboxes(
      owner: KeyOwner,
      query: { q?: string; limit?: number; pageToken?: string; podId?: string },
    ): Promise<SearchPage<Inbox>> {
      requirePermission(owner, 'inboxRead');
      const q = query.q ?? '';
      if (q.trim().length < 2 || q.length > 256)
        throw new InvalidQueryError('an inbox search is 2 to 256 characters long.');
      const terms = [...new Set(wordsOf(q))];
      if (!terms.length) throw new InvalidQueryError('the query has no word (letters or digits) to search for.');
      if (terms.length > 16) throw new InvalidQueryError('at most 16 distinct words.');
      const limit = parseLimit(query.limit);
      const cursor = query.pageToken ? decodeCursor(query.pageToken, 'string') : undefined;
      if (cursor && cursor.direction !== 'desc')
        throw new ValidationError('page_token is not a token this API issued.', 'page_token', 'INVALID_PAGE_TOKEN');
      if (query.podId !== undefined) await podInScope(db, owner, query.podId);
      const podId = query.podId ?? owner.podId;
      const rows = await searchInboxRows(
        db,
        {
          organizationId: owner.organizationId,
          ...(podId !== undefined ? { podId } : {}),
          ...(owner.inboxId !== undefined ? { inboxId: owner.inboxId } : {}),
        },
        terms,
        limit + 1,
        cursor,
      );
      const items = rows.slice(0, limit);
      const last = items[items.length - 1];
      return {
        limit,
        items,
        nextPageToken:
          rows.length > limit && last
            ? encodeCursor({ sort: last.createdAt, tiebreak: last.inboxId, direction: 'desc' })
            : undefined,
      };
    },
  };
}

export type SearchService = ReturnType<typeof createSearchService>;
