/** Inboxes as the service knows them, and inbox ids as paths give them. No SQL, no I/O. */

export type InboxMetadata = Readonly<Record<string, string | number | boolean>>;

/** AgentMail's InboxStatus: a paused inbox sends nothing (every door refuses) and still receives. */
export const INBOX_STATUSES = ['active', 'paused'] as const;
export type InboxStatus = (typeof INBOX_STATUSES)[number];

export interface Inbox {
  readonly inboxId: string;
  readonly organizationId: string;
  readonly podId: string;
  readonly username: string;
  readonly domain: string;
  readonly displayName: string | null;
  readonly clientId: string | null;
  /** SDK 0.5 metadata; absent or null: none. */
  readonly metadata?: InboxMetadata | null;
  readonly status: InboxStatus;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** Inbox ids are addresses; compare them case-insensitively by storing them lower-cased. */
export function normalizeInboxId(raw: string): string {
  return raw.trim().toLowerCase();
}

/** What names an inbox in events and usage: its organization, pod and id. */
export type InboxRef = Pick<Inbox, 'organizationId' | 'podId' | 'inboxId'>;
