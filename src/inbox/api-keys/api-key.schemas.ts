import { Type, type Static } from 'typebox';
import type { ApiKeyRecord, Organization } from './api-key.repository.js';
import {
  PERMISSION_ALIASES,
  PERMISSIONS,
  permissionsFromWire,
  permissionsToWire,
  wirePermissionName,
  type Permissions,
} from '../core/scope.js';

/**
 * AgentMail's ApiKeyPermissions on the wire (snake_case booleans), with the former names of renamed
 * ones (SDK 0.5.27); unknown names are refused.
 */
export const PermissionsBody = Type.Object(
  Object.fromEntries(
    PERMISSIONS.flatMap((p) => {
      const alias = PERMISSION_ALIASES[p];
      return [
        [wirePermissionName(p), Type.Optional(Type.Boolean())],
        ...(alias !== undefined
          ? [[alias, Type.Optional(Type.Boolean({ description: `Former name of ${wirePermissionName(p)}` }))]]
          : []),
      ];
    }),
  ),
  {
    // An unknown permission is an error, not silently dropped (the validator strips fields of closed objects).
    additionalProperties: Type.Never(),
  },
);

export const ApiKeyIdParams = Type.Object({ api_key_id: Type.String({ minLength: 1, maxLength: 64 }) });
export const PodApiKeyParams = Type.Object({
  pod_id: Type.String({ minLength: 1, maxLength: 64 }),
  api_key_id: Type.String({ minLength: 1, maxLength: 64 }),
});
export const InboxApiKeyParams = Type.Object({
  inbox_id: Type.String({ minLength: 1, maxLength: 320 }),
  api_key_id: Type.String({ minLength: 1, maxLength: 64 }),
});

export const CreateApiKeyBody = Type.Object({
  name: Type.Optional(Type.String({ maxLength: 255 })),
  permissions: Type.Optional(PermissionsBody),
});
export const UpdateApiKeyBody = CreateApiKeyBody;

export const ApiKeyListQuery = Type.Object({
  type: Type.Optional(
    Type.Union([Type.Literal('bearer'), Type.Literal('public_key')], { description: 'Only bearer keys exist here' }),
  ),
  limit: Type.Optional(Type.Integer({ minimum: 1, description: 'Items per page (default 50, at most 100)' })),
  page_token: Type.Optional(Type.String({ maxLength: 1000 })),
  ascending: Type.Optional(Type.Boolean({ description: 'Oldest first' })),
});

/** What every answer about a key says (never its secret). */
const keyFields = {
  api_key_id: Type.String(),
  prefix: Type.String(),
  name: Type.String(),
  pod_id: Type.Optional(Type.String()),
  inbox_id: Type.Optional(Type.String()),
  permissions: Type.Optional(PermissionsBody),
  created_at: Type.String({ format: 'date-time' }),
};

export const ApiKeyResponse = Type.Object({
  type: Type.Literal('bearer'),
  ...keyFields,
  updated_at: Type.String({ format: 'date-time' }),
});

export const CreateApiKeyResponse = Type.Object({
  ...keyFields,
  api_key: Type.String({ description: 'The secret: shown this once, stored only as a hash' }),
});

export const ListApiKeysResponse = Type.Object({
  count: Type.Integer(),
  limit: Type.Integer(),
  next_page_token: Type.Optional(Type.String()),
  api_keys: Type.Array(ApiKeyResponse),
});

export const IdentityResponse = Type.Object({
  scope_type: Type.Union([Type.Literal('organization'), Type.Literal('pod'), Type.Literal('inbox')]),
  scope_id: Type.String(),
  organization_id: Type.String(),
  pod_id: Type.Optional(Type.String()),
  inbox_id: Type.Optional(Type.String()),
  api_key_id: Type.Optional(Type.String()),
});

export const OrganizationResponse = Type.Object({
  organization_id: Type.String(),
  inbox_count: Type.Integer(),
  domain_count: Type.Integer(),
  inbox_limit: Type.Optional(Type.Integer()),
  updated_at: Type.String({ format: 'date-time' }),
  created_at: Type.String({ format: 'date-time' }),
});

export const fromWirePermissions = (wire: Static<typeof PermissionsBody> | undefined): Permissions | undefined =>
  wire === undefined ? undefined : permissionsFromWire(wire);

function scopeFields(key: ApiKeyRecord) {
  return {
    ...(key.podId !== null ? { pod_id: key.podId } : {}),
    ...(key.inboxId !== null ? { inbox_id: key.inboxId } : {}),
    ...(key.permissions !== undefined ? { permissions: permissionsToWire(key.permissions) } : {}),
  };
}

export function toApiKeyResponse(key: ApiKeyRecord): Static<typeof ApiKeyResponse> {
  return {
    type: 'bearer',
    api_key_id: key.apiKeyId,
    prefix: key.prefix,
    name: key.name,
    ...scopeFields(key),
    created_at: key.createdAt,
    updated_at: key.updatedAt,
  };
}

export function toCreateApiKeyResponse(key: ApiKeyRecord & { secret: string }): Static<typeof CreateApiKeyResponse> {
  return {
    api_key_id: key.apiKeyId,
    api_key: key.secret,
    prefix: key.prefix,
    name: key.name,
    ...scopeFields(key),
    created_at: key.createdAt,
  };
}

/** Unverified agent sign-ups have one inbox (decision 0018). */
export const UNVERIFIED_INBOX_LIMIT = 1;

export function toOrganizationResponse(org: Organization): Static<typeof OrganizationResponse> {
  return {
    organization_id: org.organizationId,
    inbox_count: org.inboxCount,
    domain_count: 0,
    ...(org.unverified ? { inbox_limit: UNVERIFIED_INBOX_LIMIT } : {}),
    updated_at: org.createdAt,
    created_at: org.createdAt,
  };
}
