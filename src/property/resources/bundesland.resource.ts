import { SCHEMA_NAME, anyone, defineResource, f, orderFilter, propertyFilter, searchFilter } from '../engine/define.js';
import { writesReferenceData } from '../security/roles.js';

/** A German federal state: reference data, public to read, written by admin and technical. */
export const Bundesland = defineResource({
  shortName: 'Bundesland',
  description: 'A German federal state (reference data).',
  path: '/api/bundeslands',
  table: 'bundesland',
  fields: {
    id: f.id(),
    name: f.string({
      required: true,
      unique: true,
      maxLength: 100,
      iri: SCHEMA_NAME,
      description: 'Name of the state',
      example: 'Sachsen',
    }),
    code: f.string({
      required: true,
      unique: true,
      maxLength: 2,
      description: 'Two-letter code (ISO 3166-2:DE suffix)',
      example: 'SN',
    }),
    grunderwerbsteuerSatz: f.number({
      column: 'grunderwerbsteuer_satz',
      minimum: 0,
      maximum: 100,
      description:
        'Real estate transfer tax rate (Grunderwerbsteuersatz) in percent of the purchase price; without it, properties in the state have no computed tax',
      example: 5.5,
    }),
  },
  // The same for every caller and rarely written: shared caches keep it, each write purges it.
  cacheHeaders: { public: true },
  operations: {
    getCollection: { security: anyone },
    get: { security: anyone },
    post: { security: writesReferenceData },
    put: { security: writesReferenceData },
    patch: { security: writesReferenceData },
    delete: { security: writesReferenceData },
  },
  filters: [
    ...searchFilter({ name: 'istart', code: 'iexact' }),
    ...orderFilter('id', 'name', 'code'),
    ...propertyFilter(),
  ],
});
