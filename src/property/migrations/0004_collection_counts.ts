import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../../platform/db/dialect.js';

/**
 * Counts of immobilie rows, kept by triggers in the writing transaction: one row for the whole
 * table (owner_id 0) and one per verwalter. `hydra:totalItems` of the unfiltered and of the
 * owner-scoped collection reads one row instead of counting (decision 0009). Triggers rather than
 * engine code, because rows also go by cascade (deleting an account) and by any other writer.
 * Every statement touches the owner's row before the whole-table row, so concurrent writers on
 * PostgreSQL always lock in the same order.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('collection_counts')
    .addColumn('resource_table', 'varchar(64)', (c) => c.notNull())
    .addColumn('owner_id', 'integer', (c) => c.notNull())
    .addColumn('total', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('collection_counts_pk', ['resource_table', 'owner_id'])
    .execute();

  await sql`insert into collection_counts (resource_table, owner_id, total)
    select 'immobilie', verwalter_id, count(*) from immobilie group by verwalter_id`.execute(db);
  await sql`insert into collection_counts (resource_table, owner_id, total) select 'immobilie', 0, count(*) from immobilie`.execute(
    db,
  );

  const add = (
    owner: string,
  ) => `insert into collection_counts (resource_table, owner_id, total) values ('immobilie', ${owner}, 1)
      on conflict (resource_table, owner_id) do update set total = collection_counts.total + 1;`;
  const remove = (owner: string) =>
    `update collection_counts set total = total - 1 where resource_table = 'immobilie' and owner_id = ${owner};`;
  // An owner whose last row went leaves no row behind.
  const prune = (owner: string) =>
    `delete from collection_counts where resource_table = 'immobilie' and owner_id = ${owner} and total <= 0;`;

  if (dialectOf(db) === 'postgres') {
    await sql
      .raw(
        `create function immobilie_collection_counts() returns trigger language plpgsql as $$
begin
  if tg_op = 'INSERT' then
    ${add('new.verwalter_id')}
    ${add('0')}
  elsif tg_op = 'DELETE' then
    ${remove('old.verwalter_id')}
    ${prune('old.verwalter_id')}
    ${remove('0')}
  elsif new.verwalter_id is distinct from old.verwalter_id then
    ${add('new.verwalter_id')}
    ${remove('old.verwalter_id')}
    ${prune('old.verwalter_id')}
  end if;
  return null;
end $$`,
      )
      .execute(db);
    await sql`create trigger immobilie_collection_counts after insert or delete or update of verwalter_id on immobilie
      for each row execute function immobilie_collection_counts()`.execute(db);
    return;
  }
  await sql
    .raw(
      `create trigger immobilie_count_insert after insert on immobilie begin ${add('new.verwalter_id')} ${add('0')} end`,
    )
    .execute(db);
  await sql
    .raw(
      `create trigger immobilie_count_delete after delete on immobilie begin ${remove('old.verwalter_id')} ${prune('old.verwalter_id')} ${remove('0')} end`,
    )
    .execute(db);
  await sql
    .raw(
      `create trigger immobilie_count_move after update of verwalter_id on immobilie when new.verwalter_id is not old.verwalter_id
       begin ${add('new.verwalter_id')} ${remove('old.verwalter_id')} ${prune('old.verwalter_id')} end`,
    )
    .execute(db);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see up()
export async function down(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) === 'postgres') {
    await sql`drop trigger immobilie_collection_counts on immobilie`.execute(db);
    await sql`drop function immobilie_collection_counts()`.execute(db);
  } else {
    for (const t of ['immobilie_count_insert', 'immobilie_count_delete', 'immobilie_count_move'])
      await sql.raw(`drop trigger ${t}`).execute(db);
  }
  await db.schema.dropTable('collection_counts').execute();
}
