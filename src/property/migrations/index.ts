import type { MigrationSet } from '../../platform/db/migrate.js';
import * as createTables from './0001_create_tables.js';
import * as seedReferenceData from './0002_seed_reference_data.js';
import * as timestampsAndFilterIndexes from './0003_timestamps_and_filter_indexes.js';
import * as collectionCounts from './0004_collection_counts.js';
import * as transferTaxRates from './0005_transfer_tax_rates.js';
import * as idsNeverReusedEmailCase from './0006_ids_never_reused_email_case.js';
import * as kaltmiete from './0007_kaltmiete.js';

export const propertyMigrations: MigrationSet = {
  '0001_create_tables': createTables,
  '0002_seed_reference_data': seedReferenceData,
  '0003_timestamps_and_filter_indexes': timestampsAndFilterIndexes,
  '0004_collection_counts': collectionCounts,
  '0005_transfer_tax_rates': transferTaxRates,
  '0006_ids_never_reused_email_case': idsNeverReusedEmailCase,
  '0007_kaltmiete': kaltmiete,
};

export const PROPERTY_MIGRATION_TABLE = 'property_migrations';
