import { SCHEMA_NAME, anyone, defineResource, f, orderFilter, propertyFilter, searchFilter } from '../engine/define.js';
import { writesReferenceData } from '../security/roles.js';

/** A kind of heating: reference data, public to read, written by admin and technical. */
export const Heizungstyp = defineResource({
  shortName: 'Heizungstyp',
  description: 'A kind of heating system (reference data).',
  path: '/api/heizungstyps',
  table: 'heizungstyp',
  fields: {
    id: f.id(),
    name: f.string({
      required: true,
      unique: true,
      maxLength: 100,
      iri: SCHEMA_NAME,
      description: 'Name of the heating type',
      example: 'Wärmepumpe',
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
  filters: [...searchFilter({ name: 'ipartial' }), ...orderFilter('id', 'name'), ...propertyFilter()],
});
