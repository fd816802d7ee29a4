import type { Kysely } from 'kysely';
import { dialectOf, floatType } from '../../platform/db/dialect.js';

/**
 * The real estate transfer tax rate (Grunderwerbsteuersatz, percent of the purchase price) of
 * each federal state, in force since 1 July 2025 (Bremen's rise to 5.5; earlier changes: Hamburg
 * and Sachsen 5.5 from 2023, Thüringen 5.0 from 2024). Keyed by the ISO code, so that a state an
 * operator renamed still gets its rate; a state this list does not know keeps no rate (its
 * properties then have no computed tax until an admin sets one).
 */
export const GRUNDERWERBSTEUER_SAETZE: Readonly<Record<string, number>> = {
  BW: 5.0,
  BY: 3.5,
  BE: 6.0,
  BB: 6.5,
  HB: 5.5,
  HH: 5.5,
  HE: 6.0,
  MV: 6.0,
  NI: 5.0,
  NW: 6.5,
  RP: 5.0,
  SL: 6.5,
  SN: 5.5,
  ST: 5.0,
  SH: 6.5,
  TH: 5.0,
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('bundesland')
    .addColumn('grunderwerbsteuer_satz', floatType(dialectOf(db)))
    .execute();
  for (const [code, satz] of Object.entries(GRUNDERWERBSTEUER_SAETZE)) {
    await db.updateTable('bundesland').set({ grunderwerbsteuer_satz: satz }).where('code', '=', code).execute();
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('bundesland').dropColumn('grunderwerbsteuer_satz').execute();
}
