import {
  SCHEMA_NAME,
  anyone,
  authenticated,
  defineResource,
  f,
  orderFilter,
  propertyFilter,
  searchFilter,
  type Principal,
} from '../engine/define.js';
import { USER_ROLES, isAdmin, readsAllUsers } from '../security/roles.js';
import { registerUser } from './user.processor.js';

const adminOrSelf = (principal: Principal | null, item: { id: number }): boolean =>
  isAdmin(principal) || item.id === principal?.id;

/**
 * An account. Registration is public but creates role `user` only (an admin key may create any
 * role); the response carries the API key, the only time it is ever shown. Accounts read and
 * change their own record; moderators read all; admins do everything but change their own role.
 */
export const User = defineResource({
  shortName: 'User',
  description: 'An account of the service; its API key authenticates requests (X-API-KEY).',
  path: '/api/users',
  table: 'users',
  fields: {
    id: f.id(),
    name: f.string({
      required: true,
      maxLength: 255,
      iri: SCHEMA_NAME,
      description: 'Display name',
      example: 'Erika Mustermann',
    }),
    email: f.string({
      required: true,
      unique: 'ignoreCase',
      maxLength: 255,
      format: 'email',
      description: 'E-mail address (unique regardless of case)',
      example: 'erika@example.org',
    }),
    role: f.enumOf(USER_ROLES, {
      required: true,
      description: 'Role (UserRole); only an admin may grant a role other than user, and nobody changes their own',
      default: () => 'user',
      keepOnReplace: true,
      writeAccess: ({ principal, previous }) => isAdmin(principal) && previous?.id !== principal?.id,
    }),
    apiKey: f.secret(['post'], {
      description: 'API key for the X-API-KEY header; returned once, in the response to user creation',
    }),
  },
  operations: {
    getCollection: { security: authenticated },
    get: { security: authenticated },
    post: { security: anyone, processor: registerUser },
    put: { security: authenticated, securityItem: adminOrSelf },
    patch: { security: authenticated, securityItem: adminOrSelf },
    delete: { security: authenticated, securityItem: adminOrSelf },
  },
  filters: [
    ...searchFilter({ name: 'iword_start', email: 'ipartial', role: 'exact' }),
    ...orderFilter('id', 'name', 'email'),
    ...propertyFilter(),
  ],
  scope: (principal) => (readsAllUsers(principal) ? null : { id: principal?.id ?? -1 }),
});
