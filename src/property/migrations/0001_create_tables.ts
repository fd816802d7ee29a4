import type { Kysely } from 'kysely';
import { dialectOf, floatType, serialPrimaryKey } from '../../platform/db/dialect.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function up(db: Kysely<any>): Promise<void> {
  const dialect = dialectOf(db);
  const pk = serialPrimaryKey(dialect);
  const float = floatType(dialect);

  await db.schema
    .createTable('users')
    .addColumn('id', pk, (c) => c.primaryKey())
    .addColumn('name', 'varchar(255)', (c) => c.notNull())
    .addColumn('email', 'varchar(255)', (c) => c.notNull().unique())
    .addColumn('role', 'varchar(20)', (c) => c.notNull())
    .addColumn('api_key_hash', 'char(64)', (c) => c.notNull().unique())
    .execute();

  await db.schema
    .createTable('bundesland')
    .addColumn('id', pk, (c) => c.primaryKey())
    .addColumn('name', 'varchar(100)', (c) => c.notNull().unique())
    .addColumn('code', 'varchar(2)', (c) => c.notNull().unique())
    .execute();

  await db.schema
    .createTable('heizungstyp')
    .addColumn('id', pk, (c) => c.primaryKey())
    .addColumn('name', 'varchar(100)', (c) => c.notNull().unique())
    .execute();

  // Reference data a property points at may not vanish under it (RESTRICT → 409); an account's
  // properties go with the account.
  await db.schema
    .createTable('immobilie')
    .addColumn('id', pk, (c) => c.primaryKey())
    .addColumn('verwalter_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('adresse', 'varchar(255)', (c) => c.notNull())
    .addColumn('wohnflaeche', float)
    .addColumn('nutzflaeche', float)
    .addColumn('zimmer', 'integer')
    .addColumn('typ', 'varchar(20)', (c) => c.notNull())
    .addColumn('kaufpreis', float)
    .addColumn('bundesland_id', 'integer', (c) => c.notNull().references('bundesland.id').onDelete('restrict'))
    .addColumn('heizungstyp_id', 'integer', (c) => c.references('heizungstyp.id').onDelete('restrict'))
    .execute();

  await db.schema.createIndex('immobilie_verwalter_id').on('immobilie').columns(['verwalter_id', 'id']).execute();
  await db.schema.createIndex('immobilie_bundesland_id').on('immobilie').column('bundesland_id').execute();
  await db.schema.createIndex('immobilie_heizungstyp_id').on('immobilie').column('heizungstyp_id').execute();
  await db.schema.createIndex('immobilie_typ').on('immobilie').column('typ').execute();
  await db.schema.createIndex('immobilie_kaufpreis').on('immobilie').column('kaufpreis').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see up()
export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['immobilie', 'heizungstyp', 'bundesland', 'users']) await db.schema.dropTable(table).execute();
}
