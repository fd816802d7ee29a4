import type { Dialect } from '../../platform/db/types.js';
import { forUpdate } from '../../platform/db/dialect.js';
import type { Cursor } from '../../platform/db/cursor.js';
import { afterKey } from '../../platform/db/keyset.js';
import type { Db } from '../schema/database.js';
import { json, jsonOrNull } from '../mailstore/message.repository.js';
import { type AttachmentMeta } from '../core/message.js';
import type { DraftRow } from '../schema/draft.table.js';

export type SendStatus = 'scheduled' | 'sending' | 'failed';

export interface Draft {
  /** Internal key: the keyset tiebreaker and the owner of labels and attachments. */
  readonly pk: number;
  readonly draftId: string;
  readonly organizationId: string;
  readonly podId: string;
  readonly inboxId: string;
  readonly clientId: string | null;
  /** The caller's labels, and `scheduled` while a send is scheduled. */
  readonly labels: readonly string[];
  readonly replyTo: readonly string[];
  readonly to: readonly string[];
  readonly cc: readonly string[];
  readonly bcc: readonly string[];
  readonly subject: string | null;
  readonly preview: string | null;
  readonly text: string | null;
  readonly html: string | null;
  readonly attachments: readonly AttachmentMeta[];
  /** A reply: the Message-ID it answers; a forward: the id of the message it forwards. */
  readonly inReplyTo: string | null;
  readonly forwardOf: string | null;
  readonly references: readonly string[];
  readonly sendAt: string | null;
  readonly sendStatus: SendStatus | null;
  /** The job of the durable queue that sends a scheduled draft. */
  readonly sendJobId: number | null;
  /** Rises with every change: a send removes only the revision it composed. */
  readonly revision: number;
  /** Its UID in the Drafts folder of mail clients: taken anew with every revision (decision 0045). */
  readonly imapUid: number;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** An attachment about to be stored with a draft: its metadata and bytes. */
export interface NewDraftAttachment {
  readonly meta: AttachmentMeta;
  readonly content: Buffer;
}

/** Who may see which drafts: an organization, narrowed to a pod and to an inbox. */
export interface DraftScope {
  readonly organizationId: string;
  readonly podId?: string;
  readonly inboxId?: string;
}

export interface DraftListFilter {
  readonly labels: readonly string[];
  /** Only drafts updated strictly before / after these times (ISO-8601 UTC). */
  readonly before?: string;
  readonly after?: string;
}

export function draftFromRow(row: DraftRow): Draft {
  return {
    pk: Number(row.id),
    draftId: row.draft_id,
    organizationId: row.organization_id,
    podId: row.pod_id,
    inboxId: row.inbox_id,
    clientId: row.client_id,
    labels: json<string[]>(row.labels, []),
    replyTo: json<string[]>(row.reply_to, []),
    to: json<string[]>(row.to_addresses, []),
    cc: json<string[]>(row.cc_addresses, []),
    bcc: json<string[]>(row.bcc_addresses, []),
    subject: row.subject,
    preview: row.preview,
    text: row.text_body,
    html: row.html_body,
    attachments: json<AttachmentMeta[]>(row.attachments, []),
    inReplyTo: row.in_reply_to,
    forwardOf: row.forward_of,
    references: json<string[]>(row.references_ids, []),
    sendAt: row.send_at,
    sendStatus: row.send_status as SendStatus | null,
    sendJobId: row.send_job_id === null ? null : Number(row.send_job_id),
    revision: Number(row.revision),
    imapUid: Number(row.imap_uid ?? 0),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** The columns a draft's content and state are written to (all but its identity). */
function contentColumns(
  d: Omit<Draft, 'pk' | 'draftId' | 'organizationId' | 'podId' | 'inboxId' | 'clientId' | 'createdAt'>,
) {
  return {
    labels: JSON.stringify(d.labels),
    reply_to: jsonOrNull(d.replyTo),
    to_addresses: jsonOrNull(d.to),
    cc_addresses: jsonOrNull(d.cc),
    bcc_addresses: jsonOrNull(d.bcc),
    subject: d.subject,
    preview: d.preview,
    text_body: d.text,
    html_body: d.html,
    attachments: jsonOrNull(d.attachments),
    in_reply_to: d.inReplyTo,
    forward_of: d.forwardOf,
    references_ids: jsonOrNull(d.references),
    send_at: d.sendAt,
    send_status: d.sendStatus,
    send_job_id: d.sendJobId,
    revision: d.revision,
    imap_uid: d.imapUid,
    updated_at: d.updatedAt,
  };
}

/** Stores a new draft with its label rows and attachments; returns its key. */
export async function insertDraft(
  db: Db,
  draft: Omit<Draft, 'pk'>,
  attachments: readonly NewDraftAttachment[],
): Promise<number> {
  const row = await db
    .insertInto('drafts')
    .values({
      draft_id: draft.draftId,
      organization_id: draft.organizationId,
      pod_id: draft.podId,
      inbox_id: draft.inboxId,
      client_id: draft.clientId,
      created_at: draft.createdAt,
      ...contentColumns(draft),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const pk = Number(row.id);
  if (draft.labels.length)
    await db
      .insertInto('draft_labels')
      .values(draft.labels.map((label) => ({ draft_pk: pk, label })))
      .execute();
  await insertDraftAttachments(db, pk, attachments);
  return pk;
}

export async function insertDraftAttachments(
  db: Db,
  draftPk: number,
  attachments: readonly NewDraftAttachment[],
): Promise<void> {
  if (!attachments.length) return;
  await db
    .insertInto('draft_attachments')
    .values(
      attachments.map((a) => ({
        draft_pk: draftPk,
        attachment_id: a.meta.attachmentId,
        filename: a.meta.filename,
        content_type: a.meta.contentType,
        content_disposition: a.meta.contentDisposition,
        content_id: a.meta.contentId,
        size: a.meta.size,
        content: a.content,
      })),
    )
    .execute();
}

export async function deleteDraftAttachments(db: Db, draftPk: number, attachmentIds: readonly string[]): Promise<void> {
  if (!attachmentIds.length) return;
  await db
    .deleteFrom('draft_attachments')
    .where('draft_pk', '=', draftPk)
    .where('attachment_id', 'in', attachmentIds)
    .execute();
}

/**
 * Writes a draft's content and state (`revision` as given: the caller raised it) and its label
 * rows, only if the stored revision is still `expectedRevision`; returns whether it did.
 */
export async function updateDraft(
  db: Db,
  draft: Draft,
  expectedRevision: number,
  labelChange: { added: readonly string[]; removed: readonly string[] },
): Promise<boolean> {
  const result = await db
    .updateTable('drafts')
    .set(contentColumns(draft))
    .where('id', '=', draft.pk)
    .where('revision', '=', expectedRevision)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) return false;
  if (labelChange.removed.length)
    await db
      .deleteFrom('draft_labels')
      .where('draft_pk', '=', draft.pk)
      .where('label', 'in', labelChange.removed)
      .execute();
  if (labelChange.added.length)
    await db
      .insertInto('draft_labels')
      .values(labelChange.added.map((label) => ({ draft_pk: draft.pk, label })))
      .execute();
  return true;
}

/** Removes a draft (its labels and attachments go with it) if it is still at `revision`, when given. */
export async function deleteDraft(db: Db, pk: number, revision?: number): Promise<boolean> {
  let q = db.deleteFrom('drafts').where('id', '=', pk);
  if (revision !== undefined) q = q.where('revision', '=', revision);
  return (await q.executeTakeFirst()).numDeletedRows > 0n;
}

/** A draft by its public id within `scope` (locked with `lock`). */
export async function findDraft(
  db: Db,
  scope: DraftScope,
  draftId: string,
  options: { lock?: Dialect } = {},
): Promise<Draft | undefined> {
  let q = db
    .selectFrom('drafts')
    .selectAll()
    .where('draft_id', '=', draftId)
    .where('organization_id', '=', scope.organizationId);
  if (scope.podId !== undefined) q = q.where('pod_id', '=', scope.podId);
  if (scope.inboxId !== undefined) q = q.where('inbox_id', '=', scope.inboxId);
  if (options.lock) q = forUpdate(q, options.lock);
  const row = await q.executeTakeFirst();
  return row ? draftFromRow(row) : undefined;
}

export async function findDraftByClientId(db: Db, inboxId: string, clientId: string): Promise<Draft | undefined> {
  const row = await db
    .selectFrom('drafts')
    .selectAll()
    .where('inbox_id', '=', inboxId)
    .where('client_id', '=', clientId)
    .executeTakeFirst();
  return row ? draftFromRow(row) : undefined;
}

/** One page (limit + 1 rows) of the drafts in `scope` by (updated_at, id): an index range, never OFFSET. */
export async function listDrafts(
  db: Db,
  scope: DraftScope,
  filter: DraftListFilter,
  page: { limit: number; direction: 'asc' | 'desc'; after?: Cursor },
): Promise<Draft[]> {
  let q = db.selectFrom('drafts').selectAll().where('organization_id', '=', scope.organizationId);
  if (scope.podId !== undefined) q = q.where('pod_id', '=', scope.podId);
  if (scope.inboxId !== undefined) q = q.where('inbox_id', '=', scope.inboxId);
  if (filter.before) q = q.where('updated_at', '<', filter.before);
  if (filter.after) q = q.where('updated_at', '>', filter.after);
  for (const label of filter.labels) {
    q = q.where(({ exists, selectFrom }) =>
      exists(
        selectFrom('draft_labels')
          .select('draft_labels.label')
          .whereRef('draft_labels.draft_pk', '=', 'drafts.id')
          .where('draft_labels.label', '=', label),
      ),
    );
  }
  const cursor = page.after;
  if (cursor) q = q.where((eb) => afterKey(eb, 'updated_at', 'id', cursor, page.direction));
  const rows = await q
    .orderBy('updated_at', page.direction)
    .orderBy('id', page.direction)
    .limit(page.limit + 1)
    .execute();
  return rows.map(draftFromRow);
}

export async function findDraftAttachmentContent(
  db: Db,
  draftPk: number,
  attachmentId: string,
): Promise<{ filename: string | null; contentType: string | null; content: Buffer } | undefined> {
  const row = await db
    .selectFrom('draft_attachments')
    .select(['filename', 'content_type', 'content'])
    .where('draft_pk', '=', draftPk)
    .where('attachment_id', '=', attachmentId)
    .executeTakeFirst();
  return row ? { filename: row.filename, contentType: row.content_type, content: Buffer.from(row.content) } : undefined;
}

/** Every attachment of a draft with its bytes, in the draft's order. */
export async function listDraftAttachmentContents(
  db: Db,
  draft: Draft,
): Promise<{ meta: AttachmentMeta; content: Buffer }[]> {
  const rows = await db
    .selectFrom('draft_attachments')
    .select(['attachment_id', 'content'])
    .where('draft_pk', '=', draft.pk)
    .execute();
  const bytes = new Map(rows.map((r) => [r.attachment_id, Buffer.from(r.content)]));
  return draft.attachments.flatMap((meta) => {
    const content = bytes.get(meta.attachmentId);
    return content ? [{ meta, content }] : [];
  });
}

/** The drafts of an inbox by their UID in the Drafts folder (IMAP): UID, key and labels. */
export async function listDraftUids(db: Db, inboxId: string): Promise<{ uid: number; pk: number; labels: string[] }[]> {
  const rows = await db
    .selectFrom('drafts')
    .select(['id', 'imap_uid', 'labels'])
    .where('inbox_id', '=', inboxId)
    .orderBy('imap_uid')
    .execute();
  return rows.map((r) => ({ uid: Number(r.imap_uid ?? 0), pk: Number(r.id), labels: json<string[]>(r.labels, []) }));
}

/** Drafts of an inbox by key (others are left out). */
export async function findDraftsByPks(db: Db, inboxId: string, pks: readonly number[]): Promise<Draft[]> {
  if (!pks.length) return [];
  const rows = await db
    .selectFrom('drafts')
    .selectAll()
    .where('inbox_id', '=', inboxId)
    .where('id', 'in', [...pks])
    .execute();
  return rows.map(draftFromRow);
}
