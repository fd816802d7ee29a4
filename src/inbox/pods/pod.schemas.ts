import { Type, type Static } from 'typebox';
import type { Pod } from './pod.repository.js';

export const PodParams = Type.Object({ pod_id: Type.String({ minLength: 1, maxLength: 64 }) });
export const PodInboxParams = Type.Object({
  pod_id: Type.String({ minLength: 1, maxLength: 64 }),
  inbox_id: Type.String({ minLength: 1, maxLength: 320 }),
});
export const PodThreadParams = Type.Object({
  pod_id: Type.String({ minLength: 1, maxLength: 64 }),
  thread_id: Type.String({ minLength: 1, maxLength: 64 }),
});
export const PodThreadAttachmentParams = Type.Object({
  ...PodThreadParams.properties,
  attachment_id: Type.String({ minLength: 1, maxLength: 64 }),
});

export const CreatePodBody = Type.Object({
  name: Type.Optional(Type.String({ maxLength: 255 })),
  client_id: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'Idempotency key: a repeat returns the pod created first',
    }),
  ),
});

export const PodResponse = Type.Object({
  pod_id: Type.String(),
  name: Type.String(),
  client_id: Type.Optional(Type.String()),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});

export const ListPodsResponse = Type.Object({
  count: Type.Integer(),
  limit: Type.Integer(),
  next_page_token: Type.Optional(Type.String()),
  pods: Type.Array(PodResponse),
});

export function toPodResponse(pod: Pod): Static<typeof PodResponse> {
  return {
    pod_id: pod.podId,
    name: pod.name,
    ...(pod.clientId !== null ? { client_id: pod.clientId } : {}),
    created_at: pod.createdAt,
    updated_at: pod.updatedAt,
  };
}
