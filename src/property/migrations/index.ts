import type { MigrationSet } from '../../platform/db/migrate.js';
import * as createTables from './0001_create_tables.js';
import * as seedReferenceData from './0002_seed_reference_data.js';

export const propertyMigrations: MigrationSet = {
  '0001_create_tables': createTables,
  '0002_seed_reference_data': seedReferenceData,
};

export const PROPERTY_MIGRATION_TABLE = 'property_migrations';
