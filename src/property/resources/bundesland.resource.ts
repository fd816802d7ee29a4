import { anyone, defineResource, f, orderFilter, propertyFilter, searchFilter } from '../engine/define.js';
import { writesReferenceData } from '../security/roles.js';

/** A German federal state: reference data, public to read, written by admin and technical. */
export const Bundesland = defineResource({
  shortName: 'Bundesland',
  description: 'A German federal state (reference data).',
  path: '/api/bundeslands',
  table: 'bundesland',
  fields: {
    id: f.id(),
    name: f.string({ required: true, unique: true, maxLength: 100, description: 'Name of the state', example: 'Sachsen' }),
    code: f.string({ required: true, unique: true, maxLength: 2, description: 'Two-letter code (ISO 3166-2:DE suffix)', example: 'SN' }),
  },
  operations: {
    getCollection: { security: anyone },
    get: { security: anyone },
    post: { security: writesReferenceData },
    put: { security: writesReferenceData },
    delete: { security: writesReferenceData },
  },
  filters: [...searchFilter({ name: 'istart', code: 'iexact' }), ...orderFilter('id', 'name', 'code'), ...propertyFilter()],
});
