import type { Kysely } from 'kysely';
import { dialectOf, floatType } from '../../platform/db/dialect.js';

/** The optional monthly cold rent (Kaltmiete) of a property, EUR, for its rental yield. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('immobilie')
    .addColumn('kaltmiete', floatType(dialectOf(db)))
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('immobilie').dropColumn('kaltmiete').execute();
}
