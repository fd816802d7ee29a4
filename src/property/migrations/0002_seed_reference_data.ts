import type { Kysely } from 'kysely';

/** The 16 federal states with the suffix of their ISO 3166-2:DE code. */
export const BUNDESLAENDER: readonly { name: string; code: string }[] = [
  { name: 'Baden-Württemberg', code: 'BW' },
  { name: 'Bayern', code: 'BY' },
  { name: 'Berlin', code: 'BE' },
  { name: 'Brandenburg', code: 'BB' },
  { name: 'Bremen', code: 'HB' },
  { name: 'Hamburg', code: 'HH' },
  { name: 'Hessen', code: 'HE' },
  { name: 'Mecklenburg-Vorpommern', code: 'MV' },
  { name: 'Niedersachsen', code: 'NI' },
  { name: 'Nordrhein-Westfalen', code: 'NW' },
  { name: 'Rheinland-Pfalz', code: 'RP' },
  { name: 'Saarland', code: 'SL' },
  { name: 'Sachsen', code: 'SN' },
  { name: 'Sachsen-Anhalt', code: 'ST' },
  { name: 'Schleswig-Holstein', code: 'SH' },
  { name: 'Thüringen', code: 'TH' },
];

export const HEIZUNGSTYPEN: readonly string[] = [
  'Gasheizung',
  'Ölheizung',
  'Wärmepumpe',
  'Fernwärme',
  'Holzpelletheizung',
  'Elektroheizung',
  'Solarthermie',
  'Blockheizkraftwerk (Kraft-Wärme-Kopplung)',
];

// Seeded once, by a migration: afterwards the rows are ordinary data that admin and technical
// accounts may edit or delete, and a restart never brings back what they removed.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function up(db: Kysely<any>): Promise<void> {
  await db
    .insertInto('bundesland')
    .values(BUNDESLAENDER.map((b) => ({ name: b.name, code: b.code })))
    .execute();
  await db
    .insertInto('heizungstyp')
    .values(HEIZUNGSTYPEN.map((name) => ({ name })))
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.deleteFrom('heizungstyp').execute();
  await db.deleteFrom('bundesland').execute();
}
