import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../../platform/db/dialect.js';
import { reindexAll } from '../search/search.repository.js';

// Full-text search (docs/decisions/0017-search-and-housekeeping.md):
// - SQLite: two FTS5 tables. message_search (contentless, rowid = messages.id) and thread_search
//   (rowid = the pk of the thread's newest message, so that rowid order is recency; it keeps its
//   words to merge the next message in). Columns: scope (organization, pod, inbox and thread as
//   hashed words), subject, addresses, body. Triggers drop the rows of deleted messages and threads
//   (also when an inbox delete cascades).
// - PostgreSQL: the same two documents as tables with tsvector columns (array_to_tsvector of the
//   words computed in search-text.ts, no parser) and GIN indexes; foreign keys cascade deletes.
// - inboxes: metadata (JSON text) and search_words (the words of the address and display name,
//   space-separated with a leading space, matched with LIKE '% word%').
// Existing messages, threads and inboxes are indexed here, in batches.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function up(db: Kysely<any>): Promise<void> {
  const postgres = dialectOf(db) === 'postgres';
  await db.schema.alterTable('inboxes').addColumn('metadata', 'text').execute();
  await db.schema.alterTable('inboxes').addColumn('search_words', 'text').execute();
  if (postgres) {
    await sql`create table message_search (
      message_pk bigint primary key references messages(id) on delete cascade,
      organization_id varchar(64) not null,
      pod_id varchar(64) not null,
      inbox_id varchar(320) not null,
      subject tsvector not null,
      addresses tsvector not null,
      document tsvector not null)`.execute(db);
    await sql`create index message_search_inbox on message_search (inbox_id, message_pk)`.execute(db);
    await sql`create table thread_search (
      thread_id varchar(64) primary key references threads(thread_id) on delete cascade,
      rank_pk bigint not null,
      organization_id varchar(64) not null,
      pod_id varchar(64) not null,
      inbox_id varchar(320) not null,
      subject_words text not null,
      address_words text not null,
      body_words text not null,
      subject tsvector not null,
      addresses tsvector not null,
      document tsvector not null)`.execute(db);
    for (const scope of ['inbox_id', 'pod_id', 'organization_id']) {
      await sql`create index ${sql.raw(`thread_search_${scope}`)} on thread_search (${sql.raw(scope)}, rank_pk)`.execute(
        db,
      );
    }
    for (const table of ['message_search', 'thread_search']) {
      for (const column of ['subject', 'addresses', 'document']) {
        await sql`create index ${sql.raw(`${table}_${column}_gin`)} on ${sql.raw(table)} using gin (${sql.raw(column)})`.execute(
          db,
        );
      }
    }
  } else {
    const options = sql.raw(`prefix='2 3', tokenize='unicode61 remove_diacritics 0'`);
    await sql`create virtual table message_search using fts5(scope, subject, addresses, body, content='', contentless_delete=1, ${options})`.execute(
      db,
    );
    await sql`create virtual table thread_search using fts5(scope, subject, addresses, body, thread_id unindexed, ${options})`.execute(
      db,
    );
    await sql`create trigger message_search_delete after delete on messages begin delete from message_search where rowid = old.id; end`.execute(
      db,
    );
    await sql`create trigger thread_search_delete after delete on threads begin
      delete from thread_search where rowid in (select rowid from thread_search where thread_search match '{scope}: "t' || lower(replace(old.thread_id, '-', '')) || '"');
    end`.execute(db);
  }
  // The index code is written against the typed database; the migration's Kysely<any> is that database.
  await reindexAll(db as never);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see up()
export async function down(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) === 'sqlite') {
    await sql`drop trigger if exists thread_search_delete`.execute(db);
    await sql`drop trigger if exists message_search_delete`.execute(db);
  }
  await sql`drop table if exists thread_search`.execute(db);
  await sql`drop table if exists message_search`.execute(db);
  await db.schema.alterTable('inboxes').dropColumn('search_words').execute();
  await db.schema.alterTable('inboxes').dropColumn('metadata').execute();
}
