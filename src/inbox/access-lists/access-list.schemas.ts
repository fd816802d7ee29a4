import { Type } from 'typebox';
import type { AccessListEntry } from './access-list.repository.js';

const Direction = Type.String({ maxLength: 64, description: 'send, receive or reply' });
const ListTypeParam = Type.String({ maxLength: 64, description: 'allow or block' });
const EntryParam = Type.String({ minLength: 1, maxLength: 400, description: 'Email address or domain' });

export const ListParams = Type.Object({ direction: Direction, type: ListTypeParam });
export const EntryParams = Type.Object({ direction: Direction, type: ListTypeParam, entry: EntryParam });
export const PodListParams = Type.Object({
  pod_id: Type.String({ minLength: 1, maxLength: 64 }),
  direction: Direction,
  type: ListTypeParam,
});
export const PodEntryParams = Type.Object({
  pod_id: Type.String({ minLength: 1, maxLength: 64 }),
  direction: Direction,
  type: ListTypeParam,
  entry: EntryParam,
});
export const InboxListParams = Type.Object({
  inbox_id: Type.String({ minLength: 1, maxLength: 320 }),
  direction: Direction,
  type: ListTypeParam,
});
export const InboxEntryParams = Type.Object({
  inbox_id: Type.String({ minLength: 1, maxLength: 320 }),
  direction: Direction,
  type: ListTypeParam,
  entry: EntryParam,
});

export const CreateListEntryBody = Type.Object({
  entry: Type.String({
    minLength: 1,
    maxLength: 320,
    description: 'Email address, or a domain (which also covers its subdomains)',
  }),
  reason: Type.Optional(Type.String({ maxLength: 1000, description: 'Why the entry was added' })),
});

export const ListEntriesQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, description: 'Items per page (default 50, at most 100)' })),
  page_token: Type.Optional(Type.String({ maxLength: 1000 })),
});

const base = {
  entry: Type.String(),
  organization_id: Type.String(),
  reason: Type.Optional(Type.String()),
  direction: Type.String(),
  list_type: Type.String(),
  entry_type: Type.String({ description: 'email or domain' }),
  created_at: Type.String({ format: 'date-time' }),
  read_only: Type.Optional(Type.Boolean()),
};

export const ListEntryResponse = Type.Object(base, { $id: 'ListEntry' });
export const PodListEntryResponse = Type.Object(
  { ...base, pod_id: Type.String(), inbox_id: Type.Optional(Type.String()) },
  { $id: 'PodListEntry' },
);

const page = {
  count: Type.Integer(),
  limit: Type.Optional(Type.Integer()),
  next_page_token: Type.Optional(Type.String()),
};
export const ListEntriesResponse = Type.Object({ ...page, entries: Type.Array(ListEntryResponse) });
export const PodListEntriesResponse = Type.Object({ ...page, entries: Type.Array(PodListEntryResponse) });

export function toListEntryResponse(e: AccessListEntry) {
  return {
    entry: e.entry,
    organization_id: e.organizationId,
    ...(e.reason !== null ? { reason: e.reason } : {}),
    direction: e.direction,
    list_type: e.listType,
    entry_type: e.entryType,
    created_at: e.createdAt,
    read_only: false,
  };
}

export function toPodListEntryResponse(e: AccessListEntry) {
  return { ...toListEntryResponse(e), pod_id: e.podId ?? '', ...(e.inboxId !== null ? { inbox_id: e.inboxId } : {}) };
}
