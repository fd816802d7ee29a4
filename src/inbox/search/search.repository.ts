import { sql, type RawBuilder } from 'kysely';
import { runCompiledOnce, runSqlOnce } from '../../platform/db/compiled-once.js';
import type { Cursor } from '../../platform/db/cursor.js';
import { dialectOf } from '../../platform/db/dialect.js';
import { afterKey } from '../../platform/db/keyset.js';
import { inboxFromRow } from '../inboxes/inbox.repository.js';
import { storedBodies } from '../mailstore/message-blobs.js';
import { type Inbox } from '../core/inbox.js';
import type { Db } from '../schema/database.js';
import {
  joinWords,
  mergeDocuments,
  messageDocument,
  scopeWord,
  splitWords,
  threadWord,
  inboxSearchWords,
  type IndexableMessage,
  type QueryTerm,
  type SearchDocument,
} from '../core/search-text.js';

/** Where a document lives: the scope columns (PostgreSQL) or scope words (FTS5). */
export interface DocumentScope {
  readonly organizationId: string;
  readonly podId: string;
  readonly inboxId: string;
}

/** What a search covers: always an organization, narrowed to a pod or an inbox. */
export interface SearchScope {
  readonly organizationId: string;
  readonly podId?: string;
  readonly inboxId?: string;
}

export interface SearchFilter {
  /** Normalised ISO-8601 times: only items strictly before / after. */
  readonly before?: string;
  readonly after?: string;
  /** Items whose labels (messages) or all of whose messages (threads) carry one of these are left out. */
  readonly hidden: readonly string[];
}

/**
 * Relevance tiers, best first: the query matches the subject (3), else the addresses (2), else
 * the document as a whole (1: words may come from any field, the body and attachment names
 * included). Within a tier, newest first (by storage order: the message's key, or for a thread
 * the key of its newest message).
 */
export const TIERS = [3, 2, 1] as const;
export type Tier = (typeof TIERS)[number];

export interface Hit {
  readonly tier: Tier;
  /** The message key, or the key of the thread's newest message. */
  readonly rank: number;
  readonly threadId: string;
}

/**
 * The scope words of a document (three SHA-256 digests), kept per scope: every message stored
 * writes two documents, and an instance serves a bounded number of inboxes (the map starts over
 * at 1,000 scopes).
 */
const scopeCache = new Map<string, string>();
const scopeWords = (s: DocumentScope, threadId?: string) => {
  const key = `${s.organizationId}\u0000${s.podId}\u0000${s.inboxId}`;
  let words = scopeCache.get(key);
  if (words === undefined) {
    words = [scopeWord('o', s.organizationId), scopeWord('p', s.podId), scopeWord('i', s.inboxId)].join(' ');
    if (scopeCache.size >= 1000) scopeCache.clear();
    scopeCache.set(key, words);
  }
  return threadId ? `${words} ${threadWord(threadId)}` : words;
};
/** A tsvector of `words` (the array itself is the parameter, as a statement compiled once is given it). */
const vector = (words: readonly string[]) => sql`array_to_tsvector(${words}::text[])`;

/** The messages' own documents (indexMessages). */
async function insertMessageDocuments(
  db: Db,
  entries: readonly { pk: number; threadId: string; scope: DocumentScope; doc: SearchDocument }[],
): Promise<void> {
  const postgres = dialectOf(db) === 'postgres';
  for (const { pk, scope, doc } of entries) {
    if (postgres) {
      const { subject, addresses } = doc;
      const all = [...subject, ...addresses, ...doc.body];
      await runSqlOnce(
        db,
        'message_search.insert',
        [pk, scope.organizationId, scope.podId, scope.inboxId, subject, addresses, all],
        () => sql`insert into message_search (message_pk, organization_id, pod_id, inbox_id, subject, addresses, document)
        values (${pk}, ${scope.organizationId}, ${scope.podId}, ${scope.inboxId}, ${vector(subject)}, ${vector(addresses)}, ${vector(all)})`,
      );
    } else {
      const words = scopeWords(scope);
      const subject = joinWords(doc.subject);
      const addresses = joinWords(doc.addresses);
      const body = joinWords(doc.body);
      await runSqlOnce(
        db,
        'message_search.insert',
        [pk, words, subject, addresses, body],
        () =>
          sql`insert into message_search (rowid, scope, subject, addresses, body) values (${pk}, ${words}, ${subject}, ${addresses}, ${body})`,
      );
    }
  }
}

interface StoredThreadDocument {
  readonly rank: number;
  readonly doc: SearchDocument;
}

async function findThreadDocument(db: Db, threadId: string): Promise<StoredThreadDocument | undefined> {
  if (dialectOf(db) === 'postgres') {
    const rows = await runSqlOnce(
      db,
      'thread_search.find',
      [threadId],
      () =>
        sql<{
          rank_pk: string | number;
          subject_words: string;
          address_words: string;
          body_words: string;
        }>`select rank_pk, subject_words, address_words, body_words from thread_search where thread_id = ${threadId}`,
    );
    const r = rows[0];
    return r
      ? {
          rank: Number(r.rank_pk),
          doc: {
            subject: splitWords(r.subject_words),
            addresses: splitWords(r.address_words),
            body: splitWords(r.body_words),
          },
        }
      : undefined;
  }
  const match = `{scope}: "${threadWord(threadId)}"`;
  const rows = await runSqlOnce(
    db,
    'thread_search.find',
    [match],
    () =>
      sql<{
        rowid: number;
        subject: string;
        addresses: string;
        body: string;
      }>`select rowid, subject, addresses, body from thread_search where thread_search match ${match}`,
  );
  const r = rows[0];
  return r
    ? {
        rank: Number(r.rowid),
        doc: { subject: splitWords(r.subject), addresses: splitWords(r.addresses), body: splitWords(r.body) },
      }
    : undefined;
}

/** Writes a thread's document, replacing the one it had. */
async function writeThreadDocument(
  db: Db,
  threadId: string,
  scope: DocumentScope,
  rank: number,
  doc: SearchDocument,
  previous: StoredThreadDocument | undefined,
): Promise<void> {
  const subjectWords = joinWords(doc.subject);
  const addressWords = joinWords(doc.addresses);
  const bodyWords = joinWords(doc.body);
  if (dialectOf(db) === 'postgres') {
    const { subject, addresses } = doc;
    const all = [...subject, ...addresses, ...doc.body];
    const { organizationId, podId, inboxId } = scope;
    await runSqlOnce(
      db,
      'thread_search.write',
      [threadId, rank, organizationId, podId, inboxId, subjectWords, addressWords, bodyWords, subject, addresses, all],
      () => sql`insert into thread_search (thread_id, rank_pk, organization_id, pod_id, inbox_id, subject_words, address_words, body_words, subject, addresses, document)
      values (${threadId}, ${rank}, ${organizationId}, ${podId}, ${inboxId}, ${subjectWords}, ${addressWords}, ${bodyWords}, ${vector(subject)}, ${vector(addresses)}, ${vector(all)})
      on conflict (thread_id) do update set rank_pk = excluded.rank_pk, subject_words = excluded.subject_words, address_words = excluded.address_words, body_words = excluded.body_words,
        subject = excluded.subject, addresses = excluded.addresses, document = excluded.document`,
    );
    return;
  }
  if (previous)
    await runSqlOnce(
      db,
      'thread_search.delete',
      [previous.rank],
      () => sql`delete from thread_search where rowid = ${previous.rank}`,
    );
  const words = scopeWords(scope, threadId);
  await runSqlOnce(
    db,
    'thread_search.write',
    [rank, words, subjectWords, addressWords, bodyWords, threadId],
    () =>
      sql`insert into thread_search (rowid, scope, subject, addresses, body, thread_id) values (${rank}, ${words}, ${subjectWords}, ${addressWords}, ${bodyWords}, ${threadId})`,
  );
}

/** Adds a message's words to its thread's document; the thread ranks by its newest message. */
async function addToThreadDocument(
  db: Db,
  threadId: string,
  scope: DocumentScope,
  pk: number,
  doc: SearchDocument,
): Promise<void> {
  const previous = await findThreadDocument(db, threadId);
  const merged = previous ? mergeDocuments([previous.doc, doc]) : doc;
  await writeThreadDocument(db, threadId, scope, Math.max(pk, previous?.rank ?? 0), merged, previous);
}

/**
 * Indexes stored messages, each once: its own document, and its words added to its thread's
 * (the delivery transaction's afterStore hook, and the migration's reindex).
 */
export async function indexMessages(
  db: Db,
  entries: readonly { pk: number; threadId: string; scope: DocumentScope; doc: SearchDocument }[],
): Promise<void> {
  await insertMessageDocuments(db, entries);
  for (const e of entries) await addToThreadDocument(db, e.threadId, e.scope, e.pk, e.doc);
}

/** The entries whose message is still stored (by key, in the order given). */
export async function stillStored<E extends { readonly pk: number }>(db: Db, entries: readonly E[]): Promise<E[]> {
  if (!entries.length) return [];
  const pks = entries.map((e) => e.pk);
  const rows = await runCompiledOnce(db, `search.still-stored:${pks.length}`, pks, () =>
    db.selectFrom('messages').select('id').where('id', 'in', pks),
  );
  const kept = new Set(rows.map((r) => Number(r.id)));
  return entries.filter((e) => kept.has(e.pk));
}

interface IndexRow {
  id: number | string;
  thread_id: string;
  organization_id: string;
  inbox_id: string;
  pod_id: string;
  subject: string | null;
  from_address: string;
  to_addresses: string;
  cc_addresses: string | null;
  bcc_addresses: string | null;
  reply_to: string | null;
  text_body: string | null;
  html_body: string | null;
  attachments: string | null;
}

const list = (text: string | null): string[] => (text ? (JSON.parse(text) as string[]) : []);

function indexable(r: IndexRow): IndexableMessage {
  return {
    subject: r.subject,
    from: r.from_address,
    to: list(r.to_addresses),
    cc: list(r.cc_addresses),
    bcc: list(r.bcc_addresses),
    replyTo: list(r.reply_to),
    text: r.text_body,
    html: r.html_body,
    attachments: r.attachments ? (JSON.parse(r.attachments) as { filename: string | null }[]) : [],
  };
}

const INDEX_COLUMNS = [
  'messages.id',
  'messages.thread_id',
  'messages.organization_id',
  'messages.inbox_id',
  'inboxes.pod_id',
  'messages.subject',
  'messages.from_address',
  'messages.to_addresses',
  'messages.cc_addresses',
  'messages.bcc_addresses',
  'messages.reply_to',
  'messages.text_body',
  'messages.html_body',
  'messages.attachments',
] as const;

/**
 * Rebuilds a thread's document from its messages (after one of them was deleted), or removes it
 * when none is left.
 */
export async function rebuildThreadDocument(db: Db, threadId: string): Promise<void> {
  const rows: IndexRow[] = [];
  for (const { text_blob, html_blob, ...row } of await db
    .selectFrom('messages')
    .innerJoin('inboxes', 'inboxes.inbox_id', 'messages.inbox_id')
    .select([...INDEX_COLUMNS, 'messages.text_blob', 'messages.html_blob'])
    .where('messages.thread_id', '=', threadId)
    .orderBy('messages.id')
    .execute()) {
    const { text, html } = await storedBodies(db, { ...row, text_blob, html_blob });
    rows.push({ ...row, text_body: text, html_body: html } as IndexRow);
  }
  const previous = await findThreadDocument(db, threadId);
  const last = rows[rows.length - 1];
  if (!last) {
    if (dialectOf(db) === 'postgres') await sql`delete from thread_search where thread_id = ${threadId}`.execute(db);
    else if (previous) await sql`delete from thread_search where rowid = ${previous.rank}`.execute(db);
    return;
  }
  const doc = mergeDocuments(rows.map((r) => messageDocument(indexable(r))));
  await writeThreadDocument(
    db,
    threadId,
    { organizationId: last.organization_id, podId: last.pod_id, inboxId: last.inbox_id },
    Number(last.id),
    doc,
    previous,
  );
}

/**
 * Indexes every stored message and thread (the migration that creates the index, 0007: no body is
 * in a blob yet then, decision 0053).
 */
export async function reindexAll(db: Db): Promise<void> {
  let after = 0;
  for (;;) {
    const rows = (await db
      .selectFrom('messages')
      .innerJoin('inboxes', 'inboxes.inbox_id', 'messages.inbox_id')
      .select(INDEX_COLUMNS)
      .where('messages.id', '>', after)
      .orderBy('messages.id')
      .limit(500)
      .execute()) as IndexRow[];
    if (!rows.length) break;
    const entries = rows.map((r) => ({
      pk: Number(r.id),
      threadId: r.thread_id,
      scope: { organizationId: r.organization_id, podId: r.pod_id, inboxId: r.inbox_id },
      doc: messageDocument(indexable(r)),
    }));
    await indexMessages(db, entries);
    after = Number(rows[rows.length - 1]?.id);
  }
  const inboxes = await db.selectFrom('inboxes').select(['inbox_id', 'display_name']).execute();
  for (const i of inboxes)
    await db
      .updateTable('inboxes')
      .set({ search_words: inboxSearchWords(i.inbox_id, i.display_name) })
      .where('inbox_id', '=', i.inbox_id)
      .execute();
}

// --- queries -------------------------------------------------------------------------------

function ftsTerms(terms: readonly QueryTerm[]): string {
  return terms.map((t) => `"${t.word}"${t.prefix ? '*' : ''}`).join(' AND ');
}

function ftsScope(scope: SearchScope): string {
  const words = [
    scopeWord('o', scope.organizationId),
    ...(scope.podId !== undefined ? [scopeWord('p', scope.podId)] : []),
    ...(scope.inboxId !== undefined ? [scopeWord('i', scope.inboxId)] : []),
  ];
  return `{scope}: (${words.map((w) => `"${w}"`).join(' AND ')})`;
}

/** The FTS5 expression of one tier (every word quoted: the query cannot inject syntax). */
function ftsTier(scope: SearchScope, terms: readonly QueryTerm[], tier: Tier): string {
  const q = `(${ftsTerms(terms)})`;
  const s = ftsScope(scope);
  if (tier === 3) return `${s} AND ({subject}: ${q})`;
  if (tier === 2) return `${s} AND (({addresses}: ${q}) NOT ({subject}: ${q}))`;
  return `${s} AND (((({subject addresses body}: ${q}) NOT ({subject}: ${q})) NOT ({addresses}: ${q})))`;
}

function pgTier(alias: string, tier: Tier, query: RawBuilder<unknown>): RawBuilder<unknown> {
  const col = (c: string) => sql.raw(`${alias}.${c}`);
  if (tier === 3) return sql`${col('subject')} @@ ${query}`;
  if (tier === 2) return sql`${col('addresses')} @@ ${query} and not ${col('subject')} @@ ${query}`;
  return sql`${col('document')} @@ ${query} and not ${col('subject')} @@ ${query} and not ${col('addresses')} @@ ${query}`;
}

function pgScope(alias: string, scope: SearchScope): RawBuilder<unknown> {
  const parts = [sql`${sql.raw(alias)}.organization_id = ${scope.organizationId}`];
  if (scope.podId !== undefined) parts.push(sql`${sql.raw(alias)}.pod_id = ${scope.podId}`);
  if (scope.inboxId !== undefined) parts.push(sql`${sql.raw(alias)}.inbox_id = ${scope.inboxId}`);
  return sql.join(parts, sql` and `);
}

const tsquery = (terms: readonly QueryTerm[]) =>
  sql`${terms.map((t) => `'${t.word}'${t.prefix ? ':*' : ''}`).join(' & ')}::tsquery`;

function hiddenList(hidden: readonly string[]): RawBuilder<unknown> {
  return sql.join(hidden.map((h) => sql`${h}`));
}

/**
 * One tier of matching messages, newest first, after the cursor key `below` (exclusive), at most
 * `limit` rows. FTS5 walks its index in rowid order and stops at the limit; PostgreSQL walks
 * message_search_inbox backwards or intersects the GIN index, whichever its planner finds cheaper.
 */
async function messageTier(
  db: Db,
  scope: SearchScope,
  terms: readonly QueryTerm[],
  filter: SearchFilter,
  tier: Tier,
  below: number | undefined,
  limit: number,
): Promise<Hit[]> {
  const postgres = dialectOf(db) === 'postgres';
  const key = postgres ? sql`s.message_pk` : sql`message_search.rowid`;
  const conditions: RawBuilder<unknown>[] = postgres
    ? [pgScope('s', scope), pgTier('s', tier, tsquery(terms))]
    : [sql`message_search match ${ftsTier(scope, terms, tier)}`];
  if (below !== undefined) conditions.push(sql`${key} < ${below}`);
  if (filter.before) conditions.push(sql`m.timestamp < ${filter.before}`);
  if (filter.after) conditions.push(sql`m.timestamp > ${filter.after}`);
  if (filter.hidden.length)
    conditions.push(
      sql`not exists (select 1 from message_labels l where l.message_pk = m.id and l.label in (${hiddenList(filter.hidden)}))`,
    );
  const from = postgres
    ? sql`message_search s join messages m on m.id = s.message_pk`
    : sql`message_search join messages m on m.id = message_search.rowid`;
  const { rows } = await sql<{
    pk: number | string;
    thread_id: string;
  }>`select ${key} as pk, m.thread_id from ${from} where ${sql.join(conditions, sql` and `)} order by ${key} desc limit ${limit}`.execute(
    db,
  );
  return rows.map((r) => ({ tier, rank: Number(r.pk), threadId: r.thread_id }));
}

async function threadTier(
  db: Db,
  scope: SearchScope,
  terms: readonly QueryTerm[],
  filter: SearchFilter,
  tier: Tier,
  below: number | undefined,
  limit: number,
): Promise<Hit[]> {
  const postgres = dialectOf(db) === 'postgres';
  const key = postgres ? sql`s.rank_pk` : sql`thread_search.rowid`;
  const conditions: RawBuilder<unknown>[] = postgres
    ? [pgScope('s', scope), pgTier('s', tier, tsquery(terms))]
    : [sql`thread_search match ${ftsTier(scope, terms, tier)}`];
  if (below !== undefined) conditions.push(sql`${key} < ${below}`);
  if (filter.before) conditions.push(sql`t.timestamp < ${filter.before}`);
  if (filter.after) conditions.push(sql`t.timestamp > ${filter.after}`);
  if (filter.hidden.length) {
    // As in thread lists: a thread shows while one of its messages is not hidden.
    conditions.push(
      sql`exists (select 1 from messages mm where mm.thread_id = t.thread_id and not exists (select 1 from message_labels l where l.message_pk = mm.id and l.label in (${hiddenList(filter.hidden)})))`,
    );
  }
  const from = postgres
    ? sql`thread_search s join threads t on t.thread_id = s.thread_id`
    : sql`thread_search join threads t on t.thread_id = thread_search.thread_id`;
  const { rows } = await sql<{
    pk: number | string;
    thread_id: string;
  }>`select ${key} as pk, t.thread_id from ${from} where ${sql.join(conditions, sql` and `)} order by ${key} desc limit ${limit}`.execute(
    db,
  );
  return rows.map((r) => ({ tier, rank: Number(r.pk), threadId: r.thread_id }));
}

/** Up to `limit` hits in rank order (tier, then key, descending), after the cursor `(tier, rank)`. */
async function walkTiers(
  run: (tier: Tier, below: number | undefined, limit: number) => Promise<Hit[]>,
  limit: number,
  after?: { tier: Tier; rank: number },
): Promise<Hit[]> {
  const out: Hit[] = [];
  for (const tier of TIERS) {
    if (after && tier > after.tier) continue;
    const below = after && tier === after.tier ? after.rank : undefined;
    out.push(...(await run(tier, below, limit - out.length)));
    if (out.length >= limit) break;
  }
  return out;
}

export function searchMessageHits(
  db: Db,
  scope: SearchScope,
  terms: readonly QueryTerm[],
  filter: SearchFilter,
  limit: number,
  after?: { tier: Tier; rank: number },
): Promise<Hit[]> {
  return walkTiers((tier, below, n) => messageTier(db, scope, terms, filter, tier, below, n), limit, after);
}

export function searchThreadHits(
  db: Db,
  scope: SearchScope,
  terms: readonly QueryTerm[],
  filter: SearchFilter,
  limit: number,
  after?: { tier: Tier; rank: number },
): Promise<Hit[]> {
  return walkTiers((tier, below, n) => threadTier(db, scope, terms, filter, tier, below, n), limit, after);
}

/** Inboxes in `scope` whose search words start with every term, newest first, after `cursor`. */
export async function searchInboxRows(
  db: Db,
  scope: SearchScope,
  terms: readonly string[],
  limit: number,
  cursor?: Cursor,
): Promise<Inbox[]> {
  let q = db.selectFrom('inboxes').selectAll().where('organization_id', '=', scope.organizationId);
  if (scope.podId !== undefined) q = q.where('pod_id', '=', scope.podId);
  if (scope.inboxId !== undefined) q = q.where('inbox_id', '=', scope.inboxId);
  // Words are letters and digits only: nothing in them is a LIKE wildcard.
  for (const term of terms) q = q.where('search_words', 'like', `% ${term}%`);
  if (cursor) q = q.where((eb) => afterKey(eb, 'created_at', 'inbox_id', cursor, 'desc'));
  return (await q.orderBy('created_at', 'desc').orderBy('inbox_id', 'desc').limit(limit).execute()).map(inboxFromRow);
}
