import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../../platform/db/dialect.js';

/**
 * Immobilie gains `created_at` / `updated_at` (set by the engine, to the second, UTC), and the
 * indexes its range, date and order filters need. Existing rows get the migration's time. The
 * columns stay nullable: SQLite cannot add a NOT NULL column without a constant default.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function up(db: Kysely<any>): Promise<void> {
  const timestamp = dialectOf(db) === 'postgres' ? sql`timestamp(0) with time zone` : sql`text`;
  await db.schema.alterTable('immobilie').addColumn('created_at', timestamp).execute();
  await db.schema.alterTable('immobilie').addColumn('updated_at', timestamp).execute();
  const now = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString();
  await db.updateTable('immobilie').set({ created_at: now, updated_at: now }).execute();

  for (const column of ['wohnflaeche', 'nutzflaeche', 'zimmer', 'created_at', 'updated_at']) {
    await db.schema.createIndex(`immobilie_${column}`).on('immobilie').column(column).execute();
  }
  // The price per m² as the engine computes it in filters and ordering (persistence.ts).
  await db.schema
    .createIndex('immobilie_preis_pro_qm')
    .on('immobilie')
    .expression(sql`("kaufpreis" / nullif("wohnflaeche", 0))`)
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see up()
export async function down(db: Kysely<any>): Promise<void> {
  for (const index of [
    'immobilie_preis_pro_qm',
    'immobilie_wohnflaeche',
    'immobilie_nutzflaeche',
    'immobilie_zimmer',
    'immobilie_created_at',
    'immobilie_updated_at',
  ]) {
    await db.schema.dropIndex(index).execute();
  }
  await db.schema.alterTable('immobilie').dropColumn('updated_at').execute();
  await db.schema.alterTable('immobilie').dropColumn('created_at').execute();
}
