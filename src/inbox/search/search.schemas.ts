import { Type } from 'typebox';

export const SearchQuery = Type.Object({
  q: Type.String({
    maxLength: 4000,
    description:
      'Words, all of which must occur (subject, addresses, body, attachment names); `word*` matches words beginning with it; other characters separate words',
  }),
  limit: Type.Optional(Type.Integer({ minimum: 1, description: 'Items per page (default 50, at most 100)' })),
  page_token: Type.Optional(Type.String({ maxLength: 1000 })),
  before: Type.Optional(Type.String({ format: 'date-time', description: 'Only items strictly before this time' })),
  after: Type.Optional(Type.String({ format: 'date-time', description: 'Only items strictly after this time' })),
});

export const SearchInboxesQuery = Type.Object({
  q: Type.String({
    maxLength: 256,
    description: 'Words of the address or display name (word prefixes), 2 to 256 characters',
  }),
  limit: Type.Optional(Type.Integer({ minimum: 1, description: 'Items per page (default 50, at most 100)' })),
  page_token: Type.Optional(Type.String({ maxLength: 1000 })),
});

export const PodIdParams = Type.Object({ pod_id: Type.String({ minLength: 1, maxLength: 64 }) });
