import { Type, type Static } from 'typebox';

export const InboxThreadParams = Type.Object({
  inbox_id: Type.String({ minLength: 1, maxLength: 320 }),
  thread_id: Type.String({ minLength: 1, maxLength: 64 }),
});
export const ThreadParams = Type.Object({ thread_id: Type.String({ minLength: 1, maxLength: 64 }) });
export const InboxThreadAttachmentParams = Type.Object({
  ...InboxThreadParams.properties,
  attachment_id: Type.String({ minLength: 1, maxLength: 64 }),
});
export const ThreadAttachmentParams = Type.Object({
  ...ThreadParams.properties,
  attachment_id: Type.String({ minLength: 1, maxLength: 64 }),
});

export const GetThreadQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({ minimum: 1, description: 'Messages per page (at most 100); without it, every message' }),
  ),
  page_token: Type.Optional(Type.String({ maxLength: 1000 })),
});

export const UpdateThreadBody = Type.Object({
  add_labels: Type.Optional(Type.Array(Type.String({ maxLength: 1000 }), { maxItems: 100 })),
  remove_labels: Type.Optional(
    Type.Array(Type.String({ maxLength: 1000 }), {
      maxItems: 100,
      description: 'Wins over add_labels for a label in both',
    }),
  ),
});

/** PATCH …/threads/:thread_id body → the thread service's label change. */
export function toThreadLabelChange(b: Static<typeof UpdateThreadBody>): {
  addLabels?: readonly string[];
  removeLabels?: readonly string[];
} {
  return {
    ...(b.add_labels !== undefined ? { addLabels: b.add_labels } : {}),
    ...(b.remove_labels !== undefined ? { removeLabels: b.remove_labels } : {}),
  };
}
