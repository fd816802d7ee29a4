import type { Kysely } from 'kysely';
import { decodeCursor, page } from '../../platform/db/cursor.js';
import { dialectOf, isUniqueViolation } from '../../platform/db/dialect.js';
import type { GroupCommit } from '../../platform/db/group-commit.js';
import { AppError } from '../../platform/errors/app-error.js';
import { timeOrderedUuid } from '../../platform/ids.js';
import { cancelJob, enqueue, type Job } from '../../platform/jobs/jobs.js';
import { type KeyOwner, inScope, requirePermission } from '../core/scope.js';
import { findAgentSignup } from '../api-keys/api-key.repository.js';
import { podInScope } from '../pods/pod-scope.js';
import type { Db, InboxDatabase } from '../schema/database.js';
import { InboxNotFoundError } from '../inboxes/inbox.errors.js';
import type { Inbox } from '../core/inbox.js';
import { findScopedInbox } from '../inboxes/inbox-scope.js';
import { parseLimit, parseListFilter } from '../lists/list-query.js';
import { formatMailbox, forwardSubject, previewOf } from '../mail/compose.js';
import { answerHeaders, replyInput } from '../outgoing/answers.js';
import { AttachmentNotFoundError, AttachmentsTooLargeError, ConflictingLabelsError } from '../core/message.errors.js';
import { type AttachmentMeta, validateLabels } from '../core/message.js';
import { type DownloadLink, type MessageService } from '../messages/message.service.js';
import type { SendService } from '../outgoing/send.service.js';
import type { FolderProjection } from '../mailstore/folders.js';
import { findOwnMessage } from '../mailstore/message-lookup.js';
import {
  checkBodySizes,
  createOutgoingRules,
  toSendAttachment,
  type OutgoingRules,
  type SendAttachmentInput,
  type SendInput,
} from '../outgoing/outgoing.js';
import { DRAFT_SEND_QUEUE, type DraftSendJob } from '../core/queues.js';
import {
  DraftBeingSentError,
  DraftChangedError,
  DraftKindError,
  DraftNotFoundError,
  DraftReservedLabelError,
  InvalidSendAtError,
} from './draft.errors.js';
import {
  deleteDraft,
  deleteDraftAttachments,
  findDraft,
  findDraftByClientId,
  findDraftsByPks,
  insertDraft,
  insertDraftAttachments,
  listDraftAttachmentContents,
  listDrafts,
  listDraftUids,
  updateDraft,
  type Draft,
  type DraftScope,
  type SendStatus,
} from './draft.repository.js';

/** The label of a draft whose send is scheduled (AgentMail's); only the service sets it. */
export const SCHEDULED_LABEL = 'scheduled';

type Addresses = string | readonly string[];

export interface CreateDraftInput extends Omit<SendInput, 'headers'> {
  readonly inReplyTo?: string;
  readonly forwardOf?: string;
  readonly replyAll?: boolean;
  readonly sendAt?: string;
  readonly clientId?: string;
}

/** Omitted fields stay; `null` (or `[]` for recipients) clears them. */
export interface UpdateDraftInput {
  readonly replyTo?: Addresses | null;
  readonly to?: Addresses | null;
  readonly cc?: Addresses | null;
  readonly bcc?: Addresses | null;
  readonly subject?: string | null;
  readonly text?: string | null;
  readonly html?: string | null;
  readonly addAttachments?: readonly SendAttachmentInput[];
  readonly removeAttachments?: readonly string[];
  readonly addLabels?: readonly string[];
  readonly removeLabels?: readonly string[];
  readonly sendAt?: string | null;
}

export interface DraftListQuery {
  readonly limit?: number;
  readonly pageToken?: string;
  readonly labels?: string | readonly string[];
  readonly before?: string;
  readonly after?: string;
  readonly ascending?: boolean;
}

export interface DraftServiceDeps extends OutgoingRules {
  readonly db: Kysely<InboxDatabase>;
  /** The database's commit batcher, shared with every other writer. */
  readonly commits: GroupCommit<InboxDatabase>;
  /** The one send path (send.service.ts through the message service) and its download links. */
  readonly messages: Pick<MessageService, 'downloadLink'>;
  readonly outgoing: Pick<SendService, 'sendDraft'>;
  /** Wakes the job runner after a commit that queued work. */
  readonly notifyJobs: () => void;
  /** The Drafts folder of mail clients: a UID per revision, and the news of a change (decision 0045). */
  readonly folders: Pick<FolderProjection, 'draftSaved' | 'removed'>;
}

/** A send_at from the wire: a date-time a job can be scheduled at (ISO-8601 UTC, years 0001–9999). */
function parseSendAt(value: string): string {
  const t = new Date(value);
  if (Number.isNaN(t.getTime()))
    throw new InvalidSendAtError('must be an ISO-8601 date-time, e.g. 2030-01-15T09:00:00Z.');
  const iso = t.toISOString();
  if (!/^\d{4}-/.test(iso) || iso < '0001') throw new InvalidSendAtError('must be between the years 0001 and 9999.');
  return iso;
}

/** Labels a caller may give a draft: a message's rules, and `scheduled` is the service's. */
function draftLabels(field: string, labels: readonly string[] | undefined): string[] {
  const out = validateLabels(field, labels);
  if (out.some((l) => l.toLowerCase() === SCHEDULED_LABEL)) throw new DraftReservedLabelError(field);
  return out;
}

const userLabels = (draft: Draft) => draft.labels.filter((l) => l !== SCHEDULED_LABEL);
const withScheduled = (labels: readonly string[], status: SendStatus | null) =>
  status === 'scheduled' || status === 'sending'
    ? [...labels.filter((l) => l !== SCHEDULED_LABEL), SCHEDULED_LABEL]
    : labels.filter((l) => l !== SCHEDULED_LABEL);

/** The label rows to add and remove when a draft's labels go from `before` to `after`. */
function labelChange(before: readonly string[], after: readonly string[]) {
  return { added: after.filter((l) => !before.includes(l)), removed: before.filter((l) => !after.includes(l)) };
}

/**
 * Drafts of an inbox: written bit by bit (validated by the rules of a send, except for what may
 * still be missing), listed per inbox, pod and organization, sent now or at `send_at` by a job of
 * the durable queue, always through the one send path (docs/decisions/0016).
 */
export function createDraftService(deps: DraftServiceDeps) {
  const { db, commits, clock, ids, messages, outgoing, folders } = deps;
  const dialect = dialectOf(db);
  const rules = createOutgoingRules(deps);

  /** The inbox named in the path, if the key may see it; else 404 as if it did not exist. */
  async function requireInbox(owner: KeyOwner, inboxId: string): Promise<Inbox> {
    const inbox = await findScopedInbox(db, owner, inboxId);
    if (!inbox) throw new InboxNotFoundError(inboxId);
    return inbox;
  }

  /** The scope a list or lookup runs in: the path's (inbox or pod), narrowed by the key's. */
  function scopeOf(owner: KeyOwner, path: { inboxId?: string; podId?: string }): DraftScope {
    const podId = owner.podId ?? path.podId;
    const inboxId = owner.inboxId ?? path.inboxId;
    return {
      organizationId: owner.organizationId,
      ...(podId !== undefined ? { podId } : {}),
      ...(inboxId !== undefined ? { inboxId } : {}),
    };
  }

  async function requireDraft(
    owner: KeyOwner,
    scope: DraftScope,
    draftId: string,
    executor: Db = db,
    lock = false,
  ): Promise<Draft> {
    const draft = await findDraft(executor, scope, draftId, lock ? { lock: dialect } : {});
    if (!draft || !inScope(owner, draft)) throw new DraftNotFoundError(draftId);
    return draft;
  }

  /** Drafts of the inbox by key, with the permission and scope of a REST read (IMAP's Drafts). */
  async function readableByPks(owner: KeyOwner, inboxId: string, pks: readonly number[]): Promise<Draft[]> {
    requirePermission(owner, 'draftRead');
    const inbox = await requireInbox(owner, inboxId);
    return (await findDraftsByPks(db, inbox.inboxId, pks)).filter((draft) => inScope(owner, draft));
  }

  /** Where a path points: an inbox's drafts, a pod's, or the organization's. */
  async function resolve(owner: KeyOwner, path: { inboxId?: string; podId?: string }): Promise<DraftScope> {
    if (path.inboxId !== undefined)
      return scopeOf(owner, { inboxId: (await requireInbox(owner, path.inboxId)).inboxId });
    if (path.podId !== undefined) {
      // The pod of the path, if the key reaches it (the pods' own guard: 404 otherwise).
      await podInScope(db, owner, path.podId);
      return scopeOf(owner, { podId: path.podId });
    }
    return scopeOf(owner, {});
  }

  /** Schedules the send of draft `draftId` at `sendAt`: a job of the durable queue, in `trx`. */
  async function schedule(trx: Db, organizationId: string, draftId: string, sendAt: string): Promise<number> {
    const payload: DraftSendJob = { draft_id: draftId, organization_id: organizationId, send_at: sendAt };
    return enqueue(trx, clock, DRAFT_SEND_QUEUE, payload, new Date(sendAt));
  }

  /**
   * Sends `draft` as it stands through the one send path; `within` runs in the delivery's unit of
   * work and removes the draft (or throws, and nothing is sent).
   */
  async function sendAsIs(
    owner: KeyOwner,
    draft: Draft,
    labels: readonly string[],
    within: (trx: Db) => Promise<void>,
  ) {
    const attachments = await listDraftAttachmentContents(db, draft);
    const input: SendInput = {
      to: draft.to,
      cc: draft.cc,
      bcc: draft.bcc,
      replyTo: draft.replyTo,
      ...(draft.subject !== null ? { subject: draft.subject } : {}),
      ...(draft.text !== null ? { text: draft.text } : {}),
      ...(draft.html !== null ? { html: draft.html } : {}),
      labels,
      attachments: attachments.map((a) => toSendAttachment(a.meta, a.content)),
    };
    return outgoing.sendDraft(
      owner,
      draft.inboxId,
      { input, inReplyTo: draft.inReplyTo, references: draft.references, forwardOf: draft.forwardOf },
      within,
    );
  }

  /** Records that the scheduled send of `job` failed for good (if the draft is still that send's). */
  async function markFailed(trx: Db, job: Job<DraftSendJob>): Promise<void> {
    const draft = await findDraft(trx, { organizationId: job.payload.organization_id }, job.payload.draft_id, {
      lock: dialect,
    });
    if (!draft || draft.sendJobId !== job.id || draft.sendStatus !== 'sending') return;
    const failed: Draft = {
      ...draft,
      sendStatus: 'failed',
      labels: withScheduled(draft.labels, 'failed'),
      revision: draft.revision + 1,
      imapUid: await folders.draftSaved(trx, draft.inboxId),
      updatedAt: clock.now().toISOString(),
    };
    await updateDraft(trx, failed, draft.revision, labelChange(draft.labels, failed.labels));
  }

  return {
    /** Creates a draft, or returns the one created before in the inbox with the same client_id. */
    async create(
      owner: KeyOwner,
      inboxId: string,
      input: CreateDraftInput,
    ): Promise<{ draft: Draft; created: boolean }> {
      requirePermission(owner, 'draftCreate');
      const inbox = await requireInbox(owner, inboxId);
      if (input.clientId !== undefined) {
        const existing = await findDraftByClientId(db, inbox.inboxId, input.clientId);
        if (existing) return { draft: existing, created: false };
      }
      checkBodySizes(input, deps.maxBodyBytes);
      if (input.inReplyTo !== undefined && input.forwardOf !== undefined)
        throw new DraftKindError(
          'forward_of',
          'in_reply_to and forward_of are mutually exclusive: a draft is a reply or a forward.',
        );
      if (input.replyAll && input.inReplyTo === undefined)
        throw new DraftKindError('reply_all', 'needs in_reply_to (the message to reply to).');
      if (input.replyAll && (input.to !== undefined || input.cc !== undefined || input.bcc !== undefined))
        throw new DraftKindError('reply_all', 'addresses the whole thread: leave out to, cc and bcc.');
      const labels = draftLabels('labels', input.labels);
      const sendAt = input.sendAt === undefined ? null : parseSendAt(input.sendAt);
      let fields: SendInput = { ...input, labels };
      let inReplyTo: string | null = null;
      let forwardOf: string | null = null;
      let references: readonly string[] = [];
      if (input.inReplyTo !== undefined) {
        // The recipients, subject and threading come from the message answered.
        requirePermission(owner, 'messageRead');
        const parent = await findOwnMessage(db, owner, inbox.inboxId, input.inReplyTo, { bodies: false });
        const answer = replyInput(parent, { ...fields, ...(input.replyAll ? { replyAll: true } : {}) });
        fields = { ...answer, subject: input.subject ?? answer.subject };
        ({ inReplyTo, references } = answerHeaders(parent));
      } else if (input.forwardOf !== undefined) {
        // The subject and threading come from the original; its body and attachments join at send time.
        requirePermission(owner, 'messageRead');
        const original = await findOwnMessage(db, owner, inbox.inboxId, input.forwardOf, { bodies: false });
        fields = { ...fields, subject: input.subject ?? forwardSubject(original.subject) };
        forwardOf = original.messageId;
        references = answerHeaders(original).references;
      }
      const out = await rules.validateParts(fields);
      const now = clock.now();
      const timestamp = now.toISOString();
      const draftId = timeOrderedUuid(now, ids);
      const status: SendStatus | null = sendAt === null ? null : 'scheduled';
      const draft: Omit<Draft, 'pk' | 'imapUid'> = {
        draftId,
        organizationId: inbox.organizationId,
        podId: inbox.podId,
        inboxId: inbox.inboxId,
        clientId: input.clientId ?? null,
        labels: withScheduled(out.labels, status),
        replyTo: out.replyTo.map(formatMailbox),
        to: out.to.map(formatMailbox),
        cc: out.cc.map(formatMailbox),
        bcc: out.bcc.map(formatMailbox),
        subject: out.subject,
        preview: previewOf(out.text, out.html),
        text: out.text,
        html: out.html,
        attachments: out.attachments.map((a) => a.meta),
        inReplyTo,
        forwardOf,
        references,
        sendAt,
        sendStatus: status,
        sendJobId: null,
        revision: 1,
        createdAt: timestamp,
        updatedAt: timestamp,
      };
      try {
        const stored = await commits.run(async (trx) => {
          const sendJobId = sendAt === null ? null : await schedule(trx, inbox.organizationId, draftId, sendAt);
          const imapUid = await folders.draftSaved(trx, inbox.inboxId);
          const pk = await insertDraft(
            trx,
            { ...draft, sendJobId, imapUid },
            out.attachments.map((a) => ({ meta: a.meta, content: a.compose.content })),
          );
          return { ...draft, sendJobId, imapUid, pk };
        });
        if (sendAt !== null) deps.notifyJobs();
        return { draft: stored, created: true };
      } catch (err) {
        if (!isUniqueViolation(err) || input.clientId === undefined) throw err;
        // A concurrent create with the same client_id won.
        const existing = await findDraftByClientId(db, inbox.inboxId, input.clientId);
        if (!existing) throw err;
        return { draft: existing, created: false };
      }
    },

    /**
     * Changes a draft: its fields (validated as a send's, merged with what is there), attachments,
     * labels and schedule. A scheduled send that has started (send_status `sending`) answers 409.
     */
    async update(owner: KeyOwner, inboxId: string, draftId: string, change: UpdateDraftInput): Promise<Draft> {
      requirePermission(owner, 'draftUpdate');
      const inbox = await requireInbox(owner, inboxId);
      checkBodySizes(
        {
          ...(typeof change.text === 'string' ? { text: change.text } : {}),
          ...(typeof change.html === 'string' ? { html: change.html } : {}),
        },
        deps.maxBodyBytes,
      );
      const add = draftLabels('add_labels', change.addLabels);
      const remove = draftLabels('remove_labels', change.removeLabels);
      const both = add.find((l) => remove.includes(l));
      if (both !== undefined) throw new ConflictingLabelsError(both);
      const scope = scopeOf(owner, { inboxId: inbox.inboxId });
      // A draft the key does not reach fetches no attachment url (the unit of work checks it again).
      if (change.addAttachments?.some((a) => a.url !== undefined)) await requireDraft(owner, scope, draftId);
      // New attachments are decoded and checked before the unit of work: it awaits nothing but SQL.
      const added = change.addAttachments?.length
        ? (await rules.validateParts({ attachments: change.addAttachments })).attachments
        : [];
      const sendAt = change.sendAt === undefined || change.sendAt === null ? change.sendAt : parseSendAt(change.sendAt);
      const result = await commits.run(async (trx) => {
        const draft = await requireDraft(owner, scope, draftId, trx, true);
        if (draft.sendStatus === 'sending') throw new DraftBeingSentError(draftId);
        const pick = <K extends 'to' | 'cc' | 'bcc' | 'replyTo'>(key: K): Addresses =>
          change[key] === undefined ? draft[key] : (change[key] ?? []);
        const text = change.text === undefined ? draft.text : change.text;
        const html = change.html === undefined ? draft.html : change.html;
        const subject = change.subject === undefined ? draft.subject : change.subject;
        // The merged fields, checked by the rules of a send (but for what may still be missing).
        const out = rules.validateFields({
          to: pick('to'),
          cc: pick('cc'),
          bcc: pick('bcc'),
          replyTo: pick('replyTo'),
          ...(subject !== null ? { subject } : {}),
          ...(text !== null ? { text } : {}),
          ...(html !== null ? { html } : {}),
        });
        const removeIds = change.removeAttachments ?? [];
        const missing = removeIds.find((id) => !draft.attachments.some((a) => a.attachmentId === id));
        if (missing !== undefined) throw new AttachmentNotFoundError(missing);
        const attachments: AttachmentMeta[] = [
          ...draft.attachments.filter((a) => !removeIds.includes(a.attachmentId)),
          ...added.map((a) => a.meta),
        ];
        // What one request could give at most: its inline files and its files by url.
        const total = attachments.reduce((sum, a) => sum + a.size, 0);
        const max = deps.maxAttachmentBytes + deps.attachmentUrls.maxBytes;
        if (total > max) throw new AttachmentsTooLargeError(total, max);

        let { sendStatus, sendJobId } = draft;
        let scheduledAt = draft.sendAt;
        let queued = false;
        if (sendAt !== undefined) {
          // Rescheduling or unscheduling withdraws the old job (one that already runs finds the draft no longer its own).
          if (draft.sendJobId !== null) await cancelJob(trx, clock, draft.sendJobId);
          scheduledAt = sendAt;
          sendStatus = sendAt === null ? null : 'scheduled';
          sendJobId = sendAt === null ? null : await schedule(trx, draft.organizationId, draft.draftId, sendAt);
          queued = sendAt !== null;
        }
        const labels = withScheduled(
          [...userLabels(draft).filter((l) => !remove.includes(l)), ...add.filter((l) => !draft.labels.includes(l))],
          sendStatus,
        );
        const next: Draft = {
          ...draft,
          labels,
          to: out.to.map(formatMailbox),
          cc: out.cc.map(formatMailbox),
          bcc: out.bcc.map(formatMailbox),
          replyTo: out.replyTo.map(formatMailbox),
          subject: out.subject,
          text: out.text,
          html: out.html,
          preview: previewOf(out.text, out.html),
          attachments,
          sendAt: scheduledAt,
          sendStatus,
          sendJobId,
          revision: draft.revision + 1,
          imapUid: await folders.draftSaved(trx, draft.inboxId),
          updatedAt: clock.now().toISOString(),
        };
        if (!(await updateDraft(trx, next, draft.revision, labelChange(draft.labels, labels))))
          throw new DraftChangedError(draftId);
        await deleteDraftAttachments(trx, draft.pk, removeIds);
        await insertDraftAttachments(
          trx,
          draft.pk,
          added.map((a) => ({ meta: a.meta, content: a.compose.content })),
        );
        return { draft: next, queued };
      });
      if (result.queued) deps.notifyJobs();
      return result.draft;
    },

    /**
     * Deletes a draft, and with it its scheduled send; one being sent answers 409. With
     * `expected.imapUid` (IMAP EXPUNGE in Drafts, decision 0045) only that revision is deleted: a
     * draft changed since (a new UID) is left, and the answer is false.
     */
    async delete(
      owner: KeyOwner,
      inboxId: string,
      draftId: string,
      expected: { imapUid?: number } = {},
    ): Promise<boolean> {
      requirePermission(owner, 'draftDelete');
      const inbox = await requireInbox(owner, inboxId);
      const scope = scopeOf(owner, { inboxId: inbox.inboxId });
      return commits.run(async (trx) => {
        const draft = await requireDraft(owner, scope, draftId, trx, true);
        if (expected.imapUid !== undefined && draft.imapUid !== expected.imapUid) return false;
        if (draft.sendStatus === 'sending') throw new DraftBeingSentError(draftId);
        if (draft.sendJobId !== null) await cancelJob(trx, clock, draft.sendJobId);
        await deleteDraft(trx, draft.pk);
        await folders.removed(trx, [draft.inboxId]);
        return true;
      });
    },

    /**
     * Sends a draft now, through the one send path: the message is stored and the draft removed
     * in one unit of work, so that it is sent once (a concurrent change answers 409, nothing sent).
     * `addLabels`/`removeLabels` change the labels the sent message gets.
     */
    async send(
      owner: KeyOwner,
      inboxId: string,
      draftId: string,
      change: { addLabels?: readonly string[]; removeLabels?: readonly string[] },
    ): Promise<{ messageId: string; threadId: string }> {
      requirePermission(owner, 'draftSend');
      const inbox = await requireInbox(owner, inboxId);
      const add = draftLabels('add_labels', change.addLabels);
      const remove = draftLabels('remove_labels', change.removeLabels);
      const both = add.find((l) => remove.includes(l));
      if (both !== undefined) throw new ConflictingLabelsError(both);
      const draft = await requireDraft(owner, scopeOf(owner, { inboxId: inbox.inboxId }), draftId);
      if (draft.sendStatus === 'sending') throw new DraftBeingSentError(draftId);
      const labels = [
        ...userLabels(draft).filter((l) => !remove.includes(l)),
        ...add.filter((l) => !draft.labels.includes(l)),
      ];
      const sent = await sendAsIs(owner, draft, labels, async (trx) => {
        if (await deleteDraft(trx, draft.pk, draft.revision)) {
          if (draft.sendJobId !== null) await cancelJob(trx, clock, draft.sendJobId);
          await folders.removed(trx, [draft.inboxId]);
          return;
        }
        const now = await findDraft(trx, { organizationId: draft.organizationId }, draft.draftId);
        if (!now) throw new DraftNotFoundError(draftId);
        throw now.sendStatus === 'sending' ? new DraftBeingSentError(draftId) : new DraftChangedError(draftId);
      });
      return sent;
    },

    async get(owner: KeyOwner, path: { inboxId?: string; podId?: string }, draftId: string): Promise<Draft> {
      requirePermission(owner, 'draftRead');
      return requireDraft(owner, await resolve(owner, path), draftId);
    },

    /** Newest-updated first (or oldest with `ascending`), by keyset, in the inbox, pod or organization. */
    async list(owner: KeyOwner, path: { inboxId?: string; podId?: string }, query: DraftListQuery) {
      requirePermission(owner, 'draftRead');
      const limit = parseLimit(query.limit);
      const { labels, before, after } = parseListFilter(query);
      const cursor = query.pageToken ? decodeCursor(query.pageToken, 'integer') : undefined;
      const direction = cursor?.direction ?? (query.ascending ? 'asc' : 'desc');
      const scope = await resolve(owner, path);
      const rows = await listDrafts(
        db,
        scope,
        { labels, ...(before ? { before } : {}), ...(after ? { after } : {}) },
        { limit, direction, ...(cursor ? { after: cursor } : {}) },
      );
      return { limit, ...page(rows, limit, (d) => ({ sort: d.updatedAt, tiebreak: d.pk }), direction) };
    },

    /** Metadata and a signed download link of a draft's attachment (served like a message's). */
    async attachmentLink(
      owner: KeyOwner,
      path: { inboxId?: string; podId?: string },
      draftId: string,
      attachmentId: string,
      origin: string,
    ): Promise<{ attachment: AttachmentMeta } & DownloadLink> {
      requirePermission(owner, 'draftRead');
      const draft = await requireDraft(owner, await resolve(owner, path), draftId);
      const attachment = draft.attachments.find((a) => a.attachmentId === attachmentId);
      if (!attachment) throw new AttachmentNotFoundError(attachmentId);
      return {
        attachment,
        ...(await messages.downloadLink({ kind: 'draft-attachment', draftPk: draft.pk, attachmentId }, origin)),
      };
    },

    /**
     * The scheduled send (a job of DRAFT_SEND_QUEUE): takes the draft (send_status `sending`) if it
     * is still this job's, sends it, and removes it with the job's end in the delivery's unit of
     * work: sent once, even when a worker dies on the way (the next run finds it `sending` and goes
     * on). A send the rules refuse (no recipient, a forwarded message gone, the daily limit) leaves
     * the draft with send_status `failed`.
     */
    async runScheduledSend(job: Job<DraftSendJob>): Promise<void> {
      const { organization_id: organizationId, draft_id: draftId } = job.payload;
      const taken = await commits.run(async (trx) => {
        const draft = await findDraft(trx, { organizationId }, draftId, { lock: dialect });
        if (
          !draft ||
          draft.sendJobId !== job.id ||
          (draft.sendStatus !== 'scheduled' && draft.sendStatus !== 'sending')
        ) {
          // Deleted, rescheduled or sent meanwhile: nothing left for this job.
          await job.finish(trx, { status: 'done' });
          return undefined;
        }
        if (draft.sendStatus === 'sending') return draft;
        const sending: Draft = {
          ...draft,
          sendStatus: 'sending',
          revision: draft.revision + 1,
          imapUid: await folders.draftSaved(trx, draft.inboxId),
          updatedAt: clock.now().toISOString(),
        };
        if (!(await updateDraft(trx, sending, draft.revision, { added: [], removed: [] })))
          throw new DraftChangedError(draftId);
        return sending;
      });
      if (!taken) return;
      // The organization's rights now, not a key's: an unverified agent sign-up still mails only its human.
      const signup = await findAgentSignup(db, organizationId);
      const owner: KeyOwner = {
        apiKeyId: `job:${job.id}`,
        organizationId,
        ...(signup && signup.verifiedAt === null ? { sendOnlyTo: signup.humanEmail } : {}),
      };
      try {
        await sendAsIs(owner, taken, userLabels(taken), async (trx) => {
          if (!(await deleteDraft(trx, taken.pk, taken.revision))) throw new DraftChangedError(draftId);
          await folders.removed(trx, [taken.inboxId]);
          await job.finish(trx, { status: 'done' });
        });
      } catch (err) {
        // Refused by the rules (a caller's error, not ours): retrying would not help.
        if (!(err instanceof AppError) || !err.expected || err instanceof DraftChangedError) throw err;
        await commits.run(async (trx) => {
          await markFailed(trx, job);
          await job.finish(trx, { status: 'dead', error: `${err.code}: ${err.message}` });
        });
      }
    },

    /**
     * The Drafts folder of mail clients (IMAP, decision 0045): the inbox's drafts by UID, read
     * with the permission and scope of a REST list.
     */
    async folder(owner: KeyOwner, inboxId: string): Promise<{ uid: number; pk: number; labels: string[] }[]> {
      requirePermission(owner, 'draftRead');
      return listDraftUids(db, (await requireInbox(owner, inboxId)).inboxId);
    },

    /** Drafts of the inbox by key, with the permission and scope of a REST read (IMAP's Drafts). */
    byPks: readableByPks,

    /** Drafts of the inbox by key with their attachments' bytes (what a mail client fetches). */
    async withAttachments(owner: KeyOwner, inboxId: string, pks: readonly number[]) {
      const out: { draft: Draft; attachments: { meta: AttachmentMeta; content: Buffer }[] }[] = [];
      for (const draft of await readableByPks(owner, inboxId, pks))
        out.push({ draft, attachments: await listDraftAttachmentContents(db, draft) });
      return out;
    },

    markFailed,
  };
}

export type DraftService = ReturnType<typeof createDraftService>;
