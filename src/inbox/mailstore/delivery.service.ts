import { RECEIVED_BLOCKED, type EmitInput } from '../core/events.js';
import type { Kysely } from 'kysely';
import type { Clock } from '../../platform/clock.js';
import { dialectOf } from '../../platform/db/dialect.js';
import type { GroupCommit } from '../../platform/db/group-commit.js';
import { timeOrderedUuid, type Ids } from '../../platform/ids.js';
import { enqueue } from '../../platform/jobs/jobs.js';
import type { Db, InboxDatabase } from '../schema/database.js';
import { bouncedEvents, deliveredEvent, receivedEvent, sentEvent, type MessageRef } from '../core/message-events.js';
import type { EventService } from '../events/event.service.js';
import { InboxNotFoundError } from '../inboxes/inbox.errors.js';
import { findInboxesByAddresses } from '../inboxes/inbox.repository.js';
import { type Inbox } from '../core/inbox.js';
import { normalizeSubject } from '../mail/compose.js';
import { SendLimitExceededError } from '../core/message.errors.js';
import {
  blobIdsOf,
  bodyStoredAsBlob,
  releaseBlobs,
  storeBlob,
  storeBlobPieces,
  storedAsBlob,
} from './message-blobs.js';
import {
  findThreadsHoldingMessages,
  incrementSendCount,
  insertMessages,
  type NewMessage,
} from './message.repository.js';
import { type Message } from '../core/message.js';
import { OUTBOUND_MAIL_QUEUE, type OutboundMailJob } from '../core/queues.js';
import { findThreadsForUpdate, insertThreads, updateThread } from './thread.repository.js';
import { type Thread, addMessageToThread, startThread } from '../core/thread.js';
import type { ListScreen } from '../access-lists/access-list.service.js';
import { countOf, recordUsage, usageOf } from '../usage/usage-counts.js';
import type { UsageDelta } from '../usage/usage.repository.js';
import { chooseThreads } from './threading.js';
import type { FolderProjection } from './folders.js';

/** A message as composed (API) or parsed (SMTP): everything but what differs per copy. */
export type ComposedMessage = Omit<NewMessage, 'organizationId' | 'inboxId' | 'threadId' | 'labels' | 'bcc'>;

/**
 * A message whose source is still being composed (compose.ts `composeSource`, large messages):
 * `prepare` writes the pieces into a blob as they come, and learns the size from them.
 */
export type ComposingMessage = Omit<ComposedMessage, 'raw' | 'size'> & { readonly source: AsyncIterable<Buffer> };

/** A recipient on a local domain. */
export interface LocalRecipient {
  /** The address as the message or envelope names it (events and bounces report it). */
  readonly address: string;
  /** The inbox ids that may take it, in order of preference: the first that exists gets the copy. */
  readonly inboxIds: readonly string[];
}

/** The inbox that sends the message (API sends, replies, forwards, drafts): it keeps a copy. */
export interface Sender {
  /** The caller's organization: the inbox must belong to it. */
  readonly organizationId: string;
  readonly inboxId: string;
  /** The caller's labels, on the sender's copy only. */
  readonly labels: readonly string[];
  /** Kept on the sender's copy only; the source never names them. */
  readonly bcc: readonly string[];
  /** Bare addresses on other domains: one outbound job hands them to the relay. */
  readonly external: readonly string[];
}

/** Why an inbox got no copy although the message named it. */
export type Withheld = 'duplicate' | 'report';

/**
 * A check of the recipient inboxes inside the unit of work, before anything is stored: it may
 * withhold a copy from some of them (inbound delivery status notifications today; allow and block
 * lists are meant to plug in here). Runs SQL on `trx` only.
 */
export type Screen = (
  trx: Db,
  inboxes: readonly Inbox[],
) => Promise<{ withheld: ReadonlyMap<string, Withheld>; jobs: number }>;

/** Runs after the copies were stored, in the same transaction (search-index maintenance plugs in here). */
export type AfterStore = (
  trx: Db,
  stored: readonly { inbox: Inbox; message: Message; thread: Thread }[],
) => Promise<void>;

/**
 * A part of every delivery in two halves: the work on the composed message that needs no database
 * (the search index's words), done before the unit of work starts and in steps that let other
 * requests run between them, and the SQL that it returns, run in the unit of work after the copies
 * were stored. Nothing CPU-heavy runs inside the write transaction (issue 9, item 2).
 */
export type StoreHook = (message: Omit<ComposedMessage, 'raw' | 'size'>) => Promise<AfterStore>;

/** What `prepare` made of a composed message: its large bytes written as blobs, and the unit of work's share of every store hook. */
export interface PreparedMessage {
  readonly message: ComposedMessage;
  readonly afterStore: readonly AfterStore[];
}

export interface DeliveryRequest {
  /** From `delivery.prepare(message)`, awaited before the unit of work. */
  readonly prepared: PreparedMessage;
  readonly recipients: readonly LocalRecipient[];
  /** Labels of every recipient's copy after `received` and `unread` (inbound authentication verdicts). */
  readonly labels?: readonly string[];
  readonly sender?: Sender;
  /**
   * The Message-ID came from outside (SMTP): an inbox already holding it gets no second copy (a
   * retry after a lost 250, a list copy). Ids we generate are new, and skip the lookup.
   */
  readonly foreignMessageId?: boolean;
  readonly screen?: Screen;
}

export interface DeliveryResult {
  readonly messageId: string;
  /** The thread of the sender's copy, else of the first stored copy. */
  readonly threadId: string | undefined;
  /** Recipient inboxes that exist (whether or not they got a copy). */
  readonly found: number;
  readonly stored: number;
  readonly withheld: Readonly<Record<Withheld, number>>;
  /** Jobs queued (webhook deliveries, outbound mail): `commit` has woken the runner. */
  readonly jobs: number;
}

/** What a way into storage (send.service.ts, inbound.service.ts) needs to run a delivery. */
export interface DeliveryPathDeps {
  readonly db: Kysely<InboxDatabase>;
  /** Runs the unit of work on the database's commit batcher (`commit`). */
  readonly delivery: Delivery;
  readonly clock: Clock;
  readonly ids: Ids;
}

export interface DeliveryDeps {
  /** The database's commit batcher: large bytes are written ahead of the delivery in units of their own. */
  readonly commits: GroupCommit<InboxDatabase>;
  readonly clock: Clock;
  readonly ids: Ids;
  readonly events: EventService;
  readonly sendLimitPerDay: number;
  readonly storeHooks?: readonly StoreHook[];
  /** Allow and block lists (access-lists/): run at the screen point of every delivery. */
  readonly lists?: ListScreen;
  /** Wakes the job runner: `commit` calls it after a commit that queued work (webhook deliveries, outbound mail). */
  readonly notifyJobs?: () => void;
  /** The folders of mail clients: every stored copy takes its UIDs in the same transaction (decision 0045). */
  readonly folders?: FolderProjection;
}

/** The label of a copy the recipient's receive or reply lists refused (hidden from lists unless include_blocked). */
export const BLOCKED_LABEL = 'blocked';

/** Seconds from `now` until the next UTC midnight (at least 1). */
export function secondsUntilUtcMidnight(now: Date): number {
  const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  return Math.max(1, Math.ceil((midnight - now.getTime()) / 1000));
}

/** The `raw` of a message whose source is a blob. */
const EMPTY = Buffer.alloc(0);

const BOUNCE_DIAGNOSTIC = 'smtp; 550 5.1.1 no such mailbox';

/**
 * The one way a message enters storage (API send, reply, reply-all, forward, inbound SMTP, and
 * draft sends): in the caller's unit of work, and with nothing but SQL awaited, it resolves the
 * recipient inboxes, threads every copy by one rule (threading.ts), stores the copies and the
 * sender's, bounces local addresses without an inbox, queues the outbound job, emits the events
 * and counts the organization's daily quota. Compose or parse the message before the unit starts.
 */
export function createDelivery(deps: DeliveryDeps) {
  const { clock, ids, events } = deps;

  /**
   * The halves of the store hooks that need no database, for `message`, and its large bytes (source,
   * attachments, bodies) written as blobs in transactions of their own, which every copy will name: await
   * it before the unit of work, and run that unit with `commit`.
   */
  async function prepare(message: ComposedMessage | ComposingMessage): Promise<PreparedMessage> {
    const afterStore: AfterStore[] = [];
    for (const hook of deps.storeHooks ?? []) afterStore.push(await hook(message));
    const composing = 'source' in message;
    const largeText = bodyStoredAsBlob(message.text);
    const largeHtml = bodyStoredAsBlob(message.html);
    if (!composing && !largeText && !largeHtml && ![message.raw, ...message.attachmentContents].some(storedAsBlob))
      return { message, afterStore };
    const written: number[] = [];
    const blobOf = async (bytes: Buffer): Promise<number | null> => {
      if (!storedAsBlob(bytes)) return null;
      const id = await storeBlob(deps.commits, clock, bytes);
      written.push(id);
      return id;
    };
    try {
      const attachments: (number | null)[] = [];
      for (const bytes of message.attachmentContents) attachments.push(await blobOf(bytes));
      // Bodies once for all copies, not in each copy's row (decision 0053).
      const bodies = {
        text: largeText ? await blobOf(Buffer.from(message.text as string, 'utf8')) : null,
        html: largeHtml ? await blobOf(Buffer.from(message.html as string, 'utf8')) : null,
      };
      if (!composing)
        return {
          message: { ...message, blobs: { source: await blobOf(message.raw), attachments, ...bodies } },
          afterStore,
        };
      // Pieces of the source, taken as the worker thread composes them: after the hooks, which
      // need that thread too, and after the attachments' blobs, since a send moves the bytes of
      // those to the thread when the first piece is asked for (send.service.ts).
      const { source, ...rest } = message;
      const stored = await storeBlobPieces(deps.commits, clock, source);
      if (stored.blob !== null) written.push(stored.blob);
      const raw = stored.blob === null ? stored.bytes : EMPTY;
      return {
        message: { ...rest, raw, size: stored.size, blobs: { source: stored.blob, attachments, ...bodies } },
        afterStore,
      };
    } catch (error) {
      await releaseBlobs(deps.commits, written).catch(() => undefined);
      throw error;
    }
  }

  /**
   * Runs `unit` (the delivery of `prepared`) as a unit of work, then releases the blobs of
   * `prepared` when no copy claimed them: the unit failed, or stored no copy. A release that
   * fails leaves them to the sweep (message-blobs.ts `createBlobSweeper`).
   */
  async function commit(
    prepared: PreparedMessage,
    unit: (trx: Db) => Promise<DeliveryResult>,
  ): Promise<DeliveryResult> {
    const blobs = blobIdsOf(prepared.message.blobs);
    let stored = 0;
    try {
      const result = await deps.commits.run(unit);
      stored = result.stored;
      if (result.jobs) deps.notifyJobs?.();
      return result;
    } finally {
      if (!stored && blobs.length) await releaseBlobs(deps.commits, blobs).catch(() => undefined);
    }
  }

  async function deliver(trx: Db, request: DeliveryRequest): Promise<DeliveryResult> {
    const { sender } = request;
    const { message } = request.prepared;
    const wanted = request.recipients.flatMap((r) => r.inboxIds);
    const found = await findInboxesByAddresses(trx, [...new Set(sender ? [sender.inboxId, ...wanted] : wanted)]);
    const byId = new Map(found.map((i) => [i.inboxId, i]));
    const from = sender ? byId.get(sender.inboxId) : undefined;
    if (sender && (!from || from.organizationId !== sender.organizationId))
      throw new InboxNotFoundError(sender.inboxId);

    // Each inbox once, in the order the recipients name them; a local address without one bounces.
    const recipients = new Map<string, Inbox>();
    const bounced: string[] = [];
    for (const r of request.recipients) {
      const inbox = r.inboxIds.map((id) => byId.get(id)).find((i) => i !== undefined);
      if (inbox) recipients.set(inbox.inboxId, inbox);
      else bounced.push(r.address);
    }
    const withheld: Record<Withheld, number> = { duplicate: 0, report: 0 };
    let open = [...recipients.values()];
    let jobs = 0;
    if (request.foreignMessageId && open.length) {
      const holding = new Set(
        (
          await findThreadsHoldingMessages(
            trx,
            open.map((i) => i.inboxId),
            [message.messageId],
          )
        ).map((h) => h.inboxId),
      );
      withheld.duplicate += holding.size;
      open = open.filter((i) => !holding.has(i.inboxId));
    }
    if (request.screen && open.length) {
      const screened = await request.screen(trx, open);
      for (const reason of screened.withheld.values()) withheld[reason] += 1;
      jobs += screened.jobs;
      open = open.filter((i) => !screened.withheld.has(i.inboxId));
    }
    // The lists, before anything is stored: the sender's send lists refuse the whole send (400 naming the recipient and
    // the rule); copies the recipients' receive lists (reply lists for mail answering their own) refuse are kept, labelled
    // blocked, and announce nothing.
    const send =
      from && sender
        ? { from, recipients: [...request.recipients.map((r) => r.address), ...sender.external] }
        : undefined;
    const receivers = open.filter((i) => i !== from);
    const blocked =
      deps.lists && (send || receivers.length)
        ? await deps.lists.screen(trx, send, {
            inboxes: receivers,
            from: message.from,
            answers: [...(message.inReplyTo ? [message.inReplyTo] : []), ...message.references],
          })
        : new Map<string, unknown>();
    const selfDelivered = from !== undefined && open.some((i) => i.inboxId === from.inboxId);
    const copies: { inbox: Inbox; copy: Omit<NewMessage, 'threadId'> }[] = [];
    const copyFor = (
      inbox: Inbox,
      labels: readonly string[],
      bcc: readonly string[],
    ): Omit<NewMessage, 'threadId'> => ({
      ...message,
      organizationId: inbox.organizationId,
      inboxId: inbox.inboxId,
      labels: [...new Set(labels)],
      bcc,
    });
    if (from && sender)
      copies.push({
        inbox: from,
        copy: copyFor(from, ['sent', ...(selfDelivered ? ['received', 'unread'] : []), ...sender.labels], sender.bcc),
      });
    for (const inbox of open)
      if (inbox !== from)
        copies.push({
          inbox,
          copy: copyFor(
            inbox,
            blocked.has(inbox.inboxId)
              ? ['received', BLOCKED_LABEL, ...(request.labels ?? [])]
              : ['received', 'unread', ...(request.labels ?? [])],
            [],
          ),
        });
    if (!copies.length)
      return { messageId: message.messageId, threadId: undefined, found: recipients.size, stored: 0, withheld, jobs };

    const threadIdByInbox = await chooseThreads(
      trx,
      copies.map((c) => c.inbox.inboxId),
      message,
    );
    const existing = new Map(
      (await findThreadsForUpdate(trx, [...threadIdByInbox.values()], dialectOf(trx))).map((t) => [t.threadId, t]),
    );
    const now = clock.now();
    const created: Thread[] = [];
    const changed: Thread[] = [];
    const stored = copies.map(({ inbox, copy }) => {
      const current = existing.get(threadIdByInbox.get(inbox.inboxId) ?? '');
      const thread = current
        ? addMessageToThread(current, copy)
        : startThread(
            { threadId: timeOrderedUuid(now, ids), organizationId: inbox.organizationId, inboxId: inbox.inboxId },
            copy,
            normalizeSubject(copy.subject),
          );
      (current ? changed : created).push(thread);
      return { inbox, thread, message: { ...copy, threadId: thread.threadId } };
    });
    await insertThreads(trx, created);
    for (const t of changed) await updateThread(trx, t);
    const pks = await insertMessages(
      trx,
      stored.map((s) => s.message),
    );
    const storedMessages = stored.map((s) => ({
      inbox: s.inbox,
      thread: s.thread,
      message: { ...s.message, pk: pks.get(s.inbox.inboxId) as number },
    }));

    const first = stored[0] as (typeof stored)[number];
    const emitted: EmitInput[] = [];
    const ref: MessageRef | undefined = from
      ? {
          organizationId: from.organizationId,
          inboxId: from.inboxId,
          podId: from.podId,
          threadId: first.thread.threadId,
          messageId: message.messageId,
        }
      : undefined;
    // Here only the local leg: the outbound worker emits message.sent for the other recipients
    // when the relay takes the message (docs/decisions/0006-outbound-mail.md).
    if (ref && request.recipients.length)
      emitted.push(
        sentEvent(
          ref,
          request.recipients.map((r) => r.address),
          message.timestamp,
        ),
      );
    const counts: UsageDelta[] = [];
    for (const s of storedMessages) {
      counts.push(usageOf(s.inbox, 'message_count', now, 1), usageOf(s.inbox, 'storage_bytes', now, s.message.size));
      if (s.inbox === from && !selfDelivered) continue;
      if (blocked.has(s.inbox.inboxId)) {
        counts.push(countOf(s.inbox, RECEIVED_BLOCKED, now));
        continue;
      }
      emitted.push(receivedEvent(s.inbox, s.message, s.thread));
      for (const label of ['spam', 'unauthenticated'])
        if (s.message.labels.includes(label)) counts.push(countOf(s.inbox, `message.received.${label}`, now));
    }
    for (const t of created) counts.push(usageOf(byId.get(t.inboxId) as Inbox, 'thread_count', now, 1));
    if (ref) {
      // As SES reports a delivery: for the recipients that got it (all of them, unless some bounced).
      const delivered = request.recipients.filter((r) => !bounced.includes(r.address)).map((r) => r.address);
      if (delivered.length) emitted.push(deliveredEvent(ref, delivered, message.timestamp));
      // SES's vocabulary, which AgentMail passes on: a permanent bounce, "NoEmail" = no such address.
      if (bounced.length)
        emitted.push(
          ...bouncedEvents(
            ref,
            'Permanent',
            bounced.map((address) => ({ address, status: '5.1.1', diagnostic: BOUNCE_DIAGNOSTIC })),
            message.timestamp,
          ),
        );
    }
    jobs += (await events.emitMany(trx, emitted, { counts: false })).jobs;
    if (from && sender?.external.length) {
      const job: OutboundMailJob = {
        message_pk: pks.get(from.inboxId) as number,
        message_id: message.messageId,
        organization_id: from.organizationId,
        inbox_id: from.inboxId,
        thread_id: first.thread.threadId,
        recipients: sender.external,
      };
      await enqueue(trx, clock, OUTBOUND_MAIL_QUEUE, job);
      jobs += 1;
    }
    for (const hook of request.prepared.afterStore) await hook(trx, storedMessages);
    // Rows other deliveries also write come last, the most contended latest, for the same reason as
    // the send count below: on PostgreSQL each stays locked until the commit, and every other
    // delivery that writes it waits, so nothing that could run before it should run while it is
    // held. The usage counts (one of USAGE_SHARDS rows per metric and second), then the folders'
    // UIDs (one counter row per folder).
    await recordUsage(trx, [...counts, ...emitted.map((e) => countOf(e, e.eventType, now))]);
    await deps.folders?.stored(
      trx,
      storedMessages.map((s) => ({ pk: s.message.pk, inboxId: s.inbox.inboxId, labels: s.message.labels })),
    );

    if (from) {
      // Counted last: in PostgreSQL the counter row stays locked until the commit, and the
      // organization's other sends wait for it; a refused send rolls all of the above back.
      const sentToday = await incrementSendCount(trx, from.organizationId, message.timestamp.slice(0, 10));
      if (sentToday > deps.sendLimitPerDay)
        throw new SendLimitExceededError(deps.sendLimitPerDay, secondsUntilUtcMidnight(now));
    }
    return {
      messageId: message.messageId,
      threadId: first.thread.threadId,
      found: recipients.size,
      stored: stored.length,
      withheld,
      jobs,
    };
  }

  return { prepare, commit, deliver };
}

export type Delivery = ReturnType<typeof createDelivery>;
