import { Type } from 'typebox';

export const ErrorResponse = Type.Object(
  {
    error: Type.Object({
      type: Type.String({
        description: 'validation_error, authentication_error, not_found, conflict, rate_limit_exceeded, …',
      }),
      message: Type.String(),
      details: Type.Optional(
        Type.Object(
          { field: Type.Optional(Type.String()), code: Type.Optional(Type.String()) },
          { additionalProperties: true },
        ),
      ),
      request_id: Type.Optional(Type.String()),
    }),
  },
  { $id: 'ErrorResponse', description: 'Error' },
);

const ref = Type.Ref('ErrorResponse');

/** The error responses every authenticated route can give, for the OpenAPI document. */
export const errorResponses = { 400: ref, 401: ref, 403: ref, 404: ref, 429: ref } as const;

export const InboxIdParams = Type.Object({
  inbox_id: Type.String({ minLength: 1, maxLength: 320, description: 'The inbox address, e.g. agent@inbox.localhost' }),
});

export const PageQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, description: 'Items per page (default 50, at most 100)' })),
  page_token: Type.Optional(Type.String({ maxLength: 1000 })),
  ascending: Type.Optional(Type.Boolean({ description: 'Oldest first' })),
});
