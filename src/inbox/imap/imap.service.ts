import type { Kysely } from 'kysely';
import type { Clock } from '../../platform/clock.js';
import { dialectOf } from '../../platform/db/dialect.js';
import type { GroupCommit } from '../../platform/db/group-commit.js';
import type { Inbox } from '../core/inbox.js';
import { type Message, validateLabels } from '../core/message.js';
import { type KeyOwner, holds } from '../core/scope.js';
import { TRASH_LABEL } from '../core/thread.js';
import { type Folder, MESSAGE_FOLDERS, SPAM_LABEL, FOLDERS, UNREAD_LABEL } from '../core/folders.js';
import { findScopedInbox } from '../inboxes/inbox-scope.js';
import { loginToInbox } from '../inboxes/inbox-login.js';
import { findInbox } from '../inboxes/inbox.repository.js';
import type { LabelChange, LabelsService } from '../mailstore/labels.service.js';
import type { RemovalService } from '../mailstore/removal.service.js';
import {
  findMessage,
  findMessagesByPks,
  findRawSource,
  findRowSources,
  openRawSource,
} from '../mailstore/message.repository.js';
import {
  type FolderEntry,
  countFolder,
  countFolderUpTo,
  findFoldersOf,
  findFolderState,
  listFolder,
  listFolderUidsUpTo,
} from '../mailstore/folder.repository.js';
import type { Db, InboxDatabase } from '../schema/database.js';
import type { SearchService } from '../search/search.service.js';
import type { DraftService } from '../drafts/draft.service.js';
import { AppError } from '../../platform/errors/app-error.js';
import { DraftBeingSentError, DraftNotFoundError } from '../drafts/draft.errors.js';
import { composeMessage, formatMailbox, parseMailbox, type Mailbox } from '../mail/compose.js';
import { headerSectionEnd, inboundContent, parseMessageWithMailparser } from '../smtp/parse.js';
import { MimeScanner, parseEntity, type MimeEntity } from '../mail/mime-structure.js';

/**
 * The use cases of a mail client's session (decision 0045), free of the protocol: who logs in,
 * which folders a key may see, what a folder holds, and every change through the mail store's
 * labels and removal services, with the same scope checks and events as the REST API.
 * `imap.server.ts` speaks IMAP over these.
 */

/** A logged-in session: the key's owner and the one inbox it opened. */
export interface ImapAccount {
  readonly owner: KeyOwner;
  readonly inbox: Inbox;
}

export interface FolderView {
  readonly folder: Folder;
  readonly uidValidity: number;
  readonly uidNext: number;
  /** The folder's modseq when it was read (migration 0019; 0 for Drafts, which is read whole). */
  readonly modseq: number;
  readonly entries: FolderEntry[];
}

/** What changed in a folder since a session last read it (`ImapService.changes`). */
export interface FolderChanges {
  readonly uidNext: number;
  readonly modseq: number;
  /** Messages new or with other labels since the modseq the session knew, below `uidNext`, by UID. */
  readonly entries: FolderEntry[];
  /** The UIDs up to the session's last that are still there, when some of them are gone (else undefined). */
  readonly present: number[] | undefined;
}

export type LoginResult =
  | { readonly ok: true; readonly account: ImapAccount }
  | { readonly ok: false; readonly reason: 'credentials' | 'permission' };

export interface ImapServiceDeps {
  readonly db: Kysely<InboxDatabase>;
  readonly commits: GroupCommit<InboxDatabase>;
  readonly clock: Clock;
  readonly apiKeys: { authenticate(key: string): Promise<KeyOwner | undefined> };
  readonly labels: LabelsService;
  readonly removal: RemovalService;
  readonly search: Pick<SearchService, 'messages'>;
  /** The Drafts folder: the inbox's drafts, and APPEND creating one (decision 0045). */
  readonly drafts: Pick<DraftService, 'create' | 'folder' | 'withAttachments' | 'byPks' | 'delete'>;
}

/** A draft as a mail client sees it: its fields and source, composed again on every read (decision 0045). */
interface DraftMessage {
  readonly message: Message;
  readonly source: Buffer;
}

/** Bytes of a source through the empty line that ends its header (all of it without one). */
function headWithBlankLine(raw: Buffer): number {
  const end = headerSectionEnd(raw);
  return end >= raw.length ? raw.length : end + (raw[end] === 0x0d ? 2 : 1);
}

/** An error of a service the REST API would answer with 4xx, as IMAP's `NO [code]`. */
function asImapNo(err: unknown): unknown {
  if (!(err instanceof AppError) || !err.expected) return err;
  const code = err.kind === 'forbidden' ? 'NOPERM' : err.kind === 'not_found' ? 'NONEXISTENT' : 'CANNOT';
  return new ImapNoError(code, err.message);
}

/** Statements name at most this many messages each. */
const BATCH = 500;

function chunks<T>(items: readonly T[], size = BATCH): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** UIDVALIDITY: the inbox's creation time in seconds, within 32 bits and never 0 (decision 0045). */
export function uidValidityOf(inbox: Pick<Inbox, 'createdAt'>): number {
  const seconds = Math.floor(Date.parse(inbox.createdAt) / 1000);
  return (Number.isFinite(seconds) ? seconds % 0xffffffff : 0) || 1;
}

/** The labels that put a message into `folder` (MOVE), and those that take it out of the others. */
function moveChange(from: Folder, to: Folder): LabelChange {
  switch (to) {
    case 'Trash':
      return { add: [TRASH_LABEL], remove: [] };
    case 'Spam':
      return { add: [SPAM_LABEL], remove: from === 'Trash' ? [TRASH_LABEL] : [] };
    default:
      // Back to where its direction puts it (INBOX or Sent): out of the trash and of spam.
      return { add: [], remove: [TRASH_LABEL, SPAM_LABEL] };
  }
}

export function createImapService(deps: ImapServiceDeps) {
  const { db, commits, clock } = deps;
  /** The sources of drafts read by `messages`, for the FETCH of the same Message objects. */
  const draftSources = new WeakMap<Message, Buffer>();

  const mailboxes = (list: readonly string[]): Mailbox[] =>
    list.flatMap((a) => {
      const m = parseMailbox(a);
      return m ? [m] : [];
    });

  /**
   * The stored source of a message of the account's inbox, piece by piece: its first pieces up to
   * the blank line that ends its header, and with `scan` the structure of all of it (the pieces
   * after the header are read and dropped). A draft's source is in memory already.
   */
  async function readSource(
    account: ImapAccount,
    message: Message,
    scan: boolean,
  ): Promise<{ head: Buffer; root?: MimeEntity } | undefined> {
    if (message.inboxId !== account.inbox.inboxId) return undefined;
    const draft = draftSources.get(message);
    if (draft) return { head: draft, root: parseEntity(draft) };
    const opened = await openRawSource(db, message.pk);
    if (!opened) return undefined;
    const scanner = scan ? new MimeScanner() : undefined;
    const pieces: Buffer[] = [];
    let length = 0;
    let head: Buffer | undefined;
    for await (const piece of opened.pieces) {
      scanner?.push(piece);
      if (head) continue;
      pieces.push(piece);
      length += piece.length;
      const first = pieces.length === 1 ? piece : Buffer.concat(pieces, length);
      if (first.includes('\r\n\r\n') || first.includes('\n\n')) {
        head = first;
        if (!scanner) break;
      }
    }
    return { head: head ?? Buffer.concat(pieces, length), ...(scanner ? { root: scanner.end() } : {}) };
  }

  /** Drafts of the account's inbox by key, as messages with sources (Drafts is their view). */
  async function draftMessages(account: ImapAccount, pks: readonly number[]): Promise<DraftMessage[]> {
    const inbox = account.inbox;
    const from = { name: inbox.displayName ?? '', address: inbox.inboxId };
    const out: DraftMessage[] = [];
    for (const { draft, attachments } of await deps.drafts.withAttachments(account.owner, inbox.inboxId, pks)) {
      const messageId = `<${draft.draftId}@${inbox.domain}>`;
      // The same revision composes to the same bytes: a stable boundary and the draft's own date and id.
      const source = await composeMessage({
        messageId,
        date: new Date(draft.updatedAt),
        from,
        to: mailboxes(draft.to),
        cc: mailboxes(draft.cc),
        replyTo: mailboxes(draft.replyTo),
        subject: draft.subject,
        text: draft.text,
        html: draft.html,
        inReplyTo: draft.inReplyTo,
        references: draft.references,
        headers: {},
        baseBoundary: `${draft.draftId}-${draft.revision}`,
        attachments: attachments.map((a) => ({
          filename: a.meta.filename,
          contentType: a.meta.contentType ?? 'application/octet-stream',
          contentDisposition: a.meta.contentDisposition ?? 'attachment',
          contentId: a.meta.contentId,
          content: a.content,
        })),
      });
      const message: Message = {
        pk: draft.pk,
        organizationId: draft.organizationId,
        inboxId: draft.inboxId,
        threadId: '',
        messageId,
        labels: draft.labels,
        timestamp: draft.updatedAt,
        from: formatMailbox(from),
        replyTo: draft.replyTo,
        to: draft.to,
        cc: draft.cc,
        bcc: draft.bcc,
        subject: draft.subject,
        preview: draft.preview,
        text: draft.text,
        html: draft.html,
        inReplyTo: draft.inReplyTo,
        references: draft.references,
        headers: null,
        attachments: draft.attachments,
        size: source.length,
        createdAt: draft.createdAt,
        updatedAt: draft.updatedAt,
      };
      out.push({ message, source });
    }
    return out;
  }

  /** The messages `pks` of the account's inbox, locked for a change (others are left out: never another inbox's). */
  async function lockOwn(trx: Db, account: ImapAccount, pks: readonly number[]): Promise<Message[]> {
    const out: Message[] = [];
    for (const part of chunks([...pks].sort((a, b) => a - b)))
      out.push(...(await findMessagesByPks(trx, part, { lock: dialectOf(trx) })));
    return out.filter((m) => m.inboxId === account.inbox.inboxId && m.organizationId === account.owner.organizationId);
  }

  /** The inbox again, in scope, inside the change's transaction: a key narrowed or an inbox deleted meanwhile stops here. */
  async function inboxInTrx(trx: Db, account: ImapAccount): Promise<Inbox> {
    const inbox = await findScopedInbox(trx, account.owner, account.inbox.inboxId);
    if (!inbox) throw new ImapNoError('NONEXISTENT', 'The inbox is gone.');
    return inbox;
  }

  return {
    /** User name = the inbox's address, password = an API key that reaches it and may read messages. */
    async login(address: string, key: string): Promise<LoginResult> {
      const login = await loginToInbox(db, deps.apiKeys, address, key, 'messageRead');
      return login.ok ? { ok: true, account: { owner: login.owner, inbox: login.inbox } } : login;
    },

    /** The folders the key may open: Trash and Spam need the label permissions lists ask for. */
    folders(account: ImapAccount): Folder[] {
      return FOLDERS.filter(
        (f) =>
          (f !== 'Trash' || holds(account.owner, 'labelTrashRead')) &&
          (f !== 'Spam' || holds(account.owner, 'labelSpamRead')) &&
          (f !== 'Drafts' || holds(account.owner, 'draftRead')),
      );
    },

    /** What a folder holds now, by UID (SELECT, EXAMINE, STATUS and every resync). */
    async open(account: ImapAccount, folder: Folder): Promise<FolderView> {
      if (!this.folders(account).includes(folder))
        throw new ImapNoError('NOPERM', `This API key may not open ${folder}.`);
      const inbox = await findInbox(db, account.owner.organizationId, account.inbox.inboxId);
      if (!inbox) throw new ImapNoError('NONEXISTENT', 'The inbox is gone.');
      const uidValidity = uidValidityOf(inbox);
      // The counter first: a message stored between the two reads shows up at the next resync, never below UIDNEXT.
      const { uidNext, modseq } = await findFolderState(db, inbox.inboxId, folder);
      const all = MESSAGE_FOLDERS.includes(folder)
        ? await listFolder(db, inbox.inboxId, folder)
        : await deps.drafts.folder(account.owner, inbox.inboxId).catch((err: unknown) => {
            throw asImapNo(err);
          });
      return {
        folder,
        uidValidity,
        uidNext,
        modseq: MESSAGE_FOLDERS.includes(folder) ? modseq : 0,
        entries: all.filter((e) => e.uid < uidNext),
      };
    },

    /**
     * STATUS of a folder: its counts, without reading it whole (a client polls every folder so);
     * Drafts is read as `open` reads it. Counted below the UIDNEXT read first, as `open` lists.
     */
    async status(
      account: ImapAccount,
      folder: Folder,
    ): Promise<{ uidValidity: number; uidNext: number; messages: number; unseen: number }> {
      if (!MESSAGE_FOLDERS.includes(folder)) {
        const view = await this.open(account, folder);
        const unseen = view.entries.filter((e) => e.labels.includes(UNREAD_LABEL)).length;
        return { uidValidity: view.uidValidity, uidNext: view.uidNext, messages: view.entries.length, unseen };
      }
      if (!this.folders(account).includes(folder))
        throw new ImapNoError('NOPERM', `This API key may not open ${folder}.`);
      const inbox = await findInbox(db, account.owner.organizationId, account.inbox.inboxId);
      if (!inbox) throw new ImapNoError('NONEXISTENT', 'The inbox is gone.');
      const { uidNext } = await findFolderState(db, inbox.inboxId, folder);
      const counts = await countFolder(db, inbox.inboxId, folder, uidNext, UNREAD_LABEL);
      return { uidValidity: uidValidityOf(inbox), uidNext, messages: counts.messages, unseen: counts.labelled };
    },

    /**
     * What changed in a message folder since a session read it at `since.modseq` knowing `since.count`
     * messages up to UID `since.lastUid` (decision 0052): the rows written after that modseq, and
     * only when fewer than `since.count` rows remain up to `lastUid` the UIDs that do. Read in the
     * order `open` reads: the counter first, so every row below its UIDNEXT is committed and every
     * row written later has a higher modseq and is read next time. Undefined for Drafts (read whole).
     */
    async changes(
      account: ImapAccount,
      folder: Folder,
      since: { modseq: number; lastUid: number; count: number },
    ): Promise<FolderChanges | undefined> {
      if (!MESSAGE_FOLDERS.includes(folder)) return undefined;
      if (!this.folders(account).includes(folder))
        throw new ImapNoError('NOPERM', `This API key may not open ${folder}.`);
      const inboxId = account.inbox.inboxId;
      if (!(await findInbox(db, account.owner.organizationId, inboxId)))
        throw new ImapNoError('NONEXISTENT', 'The inbox is gone.');
      const { uidNext, modseq } = await findFolderState(db, inboxId, folder);
      const entries =
        modseq > since.modseq
          ? (await listFolder(db, inboxId, folder, since.modseq)).filter((e) => e.uid < uidNext)
          : [];
      const remaining = since.lastUid ? await countFolderUpTo(db, inboxId, folder, since.lastUid) : 0;
      const present =
        remaining < since.count ? await listFolderUidsUpTo(db, inboxId, folder, since.lastUid) : undefined;
      return { uidNext, modseq, entries, present };
    },

    /** The UID in Sent of the inbox's message with this Message-ID, if it is there (APPEND into Sent). */
    async findSent(account: ImapAccount, messageId: string): Promise<{ uidValidity: number; uid: number } | undefined> {
      const message = await findMessage(db, account.owner.organizationId, account.inbox.inboxId, messageId, {
        bodies: false,
      });
      if (!message) return undefined;
      const uid = (await findFoldersOf(db, [message.pk])).find((f) => f.folder === 'Sent')?.uid;
      return uid === undefined ? undefined : { uidValidity: uidValidityOf(account.inbox), uid };
    },

    /** Messages of the account's inbox by key, without bodies (FETCH); in Drafts, its drafts as messages. */
    async messages(account: ImapAccount, pks: readonly number[], folder: Folder): Promise<Map<number, Message>> {
      const out = new Map<number, Message>();
      if (folder === 'Drafts') {
        for (const part of chunks(pks))
          for (const { message, source } of await draftMessages(account, part)) {
            draftSources.set(message, source);
            out.set(message.pk, message);
          }
        return out;
      }
      for (const part of chunks(pks))
        for (const m of await findMessagesByPks(db, part))
          if (m.inboxId === account.inbox.inboxId && m.organizationId === account.owner.organizationId)
            out.set(m.pk, m);
      return out;
    },

    /** The stored source of a message of the account's inbox. */
    async source(account: ImapAccount, message: Message): Promise<Buffer | undefined> {
      if (message.inboxId !== account.inbox.inboxId) return undefined;
      const draft = draftSources.get(message);
      if (draft) return draft;
      return findRawSource(db, message.pk);
    },

    /**
     * The first bytes of the stored source, through the blank line that ends its header (or all of
     * it when it has none): for ENVELOPE, header sections and HEADER searches, a piece or two of a
     * large message instead of all of it.
     */
    async sourceHead(account: ImapAccount, message: Message): Promise<Buffer | undefined> {
      return (await readSource(account, message, false))?.head;
    },

    /**
     * `sourceHead` of many messages at once: the small sources kept in their rows read in one
     * statement per batch (a header sync of a folder), the others (blobs, drafts) one by one.
     */
    async sourceHeads(account: ImapAccount, messages: readonly Message[]): Promise<Map<number, Buffer>> {
      const own = messages.filter((m) => m.inboxId === account.inbox.inboxId && !draftSources.has(m));
      const out = new Map<number, Buffer>();
      for (const part of chunks(own))
        for (const [pk, raw] of await findRowSources(
          db,
          part.map((m) => m.pk),
        ))
          out.set(pk, raw.subarray(0, headWithBlankLine(raw)));
      for (const m of messages)
        if (!out.has(m.pk)) {
          const head = await this.sourceHead(account, m);
          if (head) out.set(m.pk, head);
        }
      return out;
    },

    /**
     * The whole sources of `messages` that are kept in their rows (blobs and drafts are left out),
     * in one statement, up to `maxBytes` of them by their sizes: BODY[] of a batch of small messages.
     */
    async smallSources(
      account: ImapAccount,
      messages: readonly Message[],
      maxBytes: number,
    ): Promise<Map<number, Buffer>> {
      const own = messages.filter(
        (m) => m.inboxId === account.inbox.inboxId && !draftSources.has(m) && m.size <= maxBytes,
      );
      return findRowSources(
        db,
        own.map((m) => m.pk),
      );
    },

    /**
     * The first bytes of the stored source (as `sourceHead`) and the MIME structure of all of it,
     * read piece by piece and never held whole (BODYSTRUCTURE of a large message).
     */
    async scanSource(account: ImapAccount, message: Message): Promise<{ head: Buffer; root: MimeEntity } | undefined> {
      const read = await readSource(account, message, true);
      return read && { head: read.head, root: read.root as MimeEntity };
    },

    /** The stored source in pieces, with its size (BODY[] of a whole message, streamed). */
    async openSource(account: ImapAccount, message: Message) {
      if (message.inboxId !== account.inbox.inboxId) return undefined;
      const draft = draftSources.get(message);
      if (draft) return { size: draft.length, pieces: [draft] };
      return openRawSource(db, message.pk);
    },

    /** STORE and the implicit \Seen of a FETCH: labels through the labels service (messageUpdate). */
    async relabel(account: ImapAccount, pks: readonly number[], change: LabelChange): Promise<Map<number, string[]>> {
      if (!holds(account.owner, 'messageUpdate'))
        throw new ImapNoError('NOPERM', 'This API key lacks the message_update permission.');
      const add = validateLabels('flags', change.add);
      const remove = validateLabels('flags', change.remove);
      return commits.run(async (trx) => {
        const inbox = await inboxInTrx(trx, account);
        const messages = await lockOwn(trx, account, pks);
        const byId = await deps.labels.apply(trx, inbox, messages, { add, remove }, clock.now().toISOString());
        return new Map(messages.map((m) => [m.pk, byId.get(m.messageId) ?? [...m.labels]]));
      });
    },

    /** MOVE: a change of labels (decision 0045); returns each moved message's new UID in `to`, by key. */
    async move(account: ImapAccount, from: Folder, to: Folder, pks: readonly number[]): Promise<Map<number, number>> {
      // Drafts' keys are drafts', not messages': no label of a message may change through them.
      if (from === 'Drafts')
        throw new ImapNoError('CANNOT', 'Drafts cannot be moved or copied; send them, or delete them (EXPUNGE).');
      if (!holds(account.owner, 'messageUpdate'))
        throw new ImapNoError('NOPERM', 'This API key lacks the message_update permission.');
      if (!this.folders(account).includes(to) || to === 'Drafts' || (to === 'INBOX' && from === 'Sent'))
        throw new ImapNoError('CANNOT', `Messages cannot be moved to ${to} from ${from}.`);
      const change = moveChange(from, to);
      return commits.run(async (trx) => {
        const inbox = await inboxInTrx(trx, account);
        const messages = await lockOwn(trx, account, pks);
        await deps.labels.apply(trx, inbox, messages, change, clock.now().toISOString());
        const uids = new Map<number, number>();
        for (const part of chunks(messages.map((m) => m.pk)))
          for (const f of await findFoldersOf(trx, part)) if (f.folder === to) uids.set(f.messagePk, f.uid);
        return uids;
      });
    },

    /**
     * EXPUNGE of messages marked \Deleted: out of the Trash they go for good (removal service,
     * messageDelete); anywhere else they move to the Trash, as a client's delete does.
     */
    async expunge(account: ImapAccount, folder: Folder, pks: readonly number[]): Promise<void> {
      if (folder === 'Drafts') throw new ImapNoError('CANNOT', 'Drafts are deleted by expungeDrafts.');
      if (!pks.length) return;
      if (folder !== 'Trash') {
        await this.move(account, folder, 'Trash', pks);
        return;
      }
      if (!holds(account.owner, 'messageDelete'))
        throw new ImapNoError('NOPERM', 'This API key lacks the message_delete permission.');
      await commits.run(async (trx) => {
        await inboxInTrx(trx, account);
        for (const m of await lockOwn(trx, account, pks)) await deps.removal.deleteMessage(trx, m);
      });
    },

    /**
     * Whether Drafts opens read-write: EXPUNGE there deletes drafts, so the key needs draft_delete,
     * what `DELETE /v0/inboxes/:id/drafts/:draft_id` needs (decision 0045). The draft service
     * checks it again at every delete.
     */
    draftsWritable(account: ImapAccount): boolean {
      return holds(account.owner, 'draftDelete');
    },

    /**
     * EXPUNGE (and CLOSE) in Drafts: the drafts marked \Deleted, by their UIDs in the session,
     * deleted one by one through the draft service's `delete`, the function of
     * `DELETE /v0/inboxes/:id/drafts/:draft_id` (its permission, scope and cancelled send). Only
     * the revision the client marked goes: a draft changed since has another UID and stays. A
     * draft gone meanwhile or being sent (it leaves Drafts when sent) is passed over.
     */
    async expungeDrafts(account: ImapAccount, marked: readonly { pk: number; uid: number }[]): Promise<void> {
      if (!marked.length) return;
      const inboxId = account.inbox.inboxId;
      const uidOf = new Map(marked.map((e) => [e.pk, e.uid]));
      try {
        for (const part of chunks([...uidOf.keys()]))
          for (const draft of await deps.drafts.byPks(account.owner, inboxId, part)) {
            try {
              await deps.drafts.delete(account.owner, inboxId, draft.draftId, { imapUid: uidOf.get(draft.pk) ?? -1 });
            } catch (err) {
              if (!(err instanceof DraftNotFoundError || err instanceof DraftBeingSentError)) throw err;
            }
          }
      } catch (err) {
        throw asImapNo(err);
      }
    },

    /**
     * APPEND into Drafts: the message becomes a draft of the inbox through the draft service, as
     * `POST /v0/inboxes/:id/drafts` makes one (draft_create, the rules of a send, the same rows);
     * returns its UID in Drafts. Its From is the inbox's, whatever the message says.
     */
    async appendDraft(account: ImapAccount, raw: Buffer): Promise<{ uidValidity: number; uid: number }> {
      const parsed = await parseMessageWithMailparser(raw).catch(() => {
        throw new ImapNoError('CANNOT', 'The message cannot be parsed.');
      });
      const content = inboundContent(parsed);
      const bcc = (Array.isArray(parsed.bcc) ? parsed.bcc : parsed.bcc ? [parsed.bcc] : []).flatMap((o) =>
        o.value.flatMap((v) => (v.address ? [formatMailbox({ name: v.name ?? '', address: v.address })] : [])),
      );
      try {
        const { draft } = await deps.drafts.create(account.owner, account.inbox.inboxId, {
          to: content.to,
          cc: content.cc,
          bcc,
          ...(content.replyTo.length ? { replyTo: content.replyTo } : {}),
          ...(content.subject !== null ? { subject: content.subject } : {}),
          ...(content.text !== null ? { text: content.text } : {}),
          ...(content.html !== null ? { html: content.html } : {}),
          attachments: content.attachments.map((a) => ({
            ...(a.meta.filename !== null ? { filename: a.meta.filename } : {}),
            ...(a.meta.contentType !== null ? { contentType: a.meta.contentType } : {}),
            ...(a.meta.contentDisposition !== null ? { contentDisposition: a.meta.contentDisposition } : {}),
            ...(a.meta.contentId !== null ? { contentId: a.meta.contentId } : {}),
            content: '',
            bytes: a.content,
          })),
        });
        return { uidValidity: uidValidityOf(account.inbox), uid: draft.imapUid };
      } catch (err) {
        throw asImapNo(err);
      }
    },

    /** SEARCH TEXT/BODY in Drafts: the drafts whose fields hold `text` (drafts are not in the full-text index). */
    async searchDrafts(account: ImapAccount, pks: readonly number[], text: string): Promise<Set<number>> {
      const needle = text.toLowerCase();
      const out = new Set<number>();
      for (const part of chunks(pks))
        for (const { draft } of await deps.drafts.withAttachments(account.owner, account.inbox.inboxId, part)) {
          const fields = [draft.subject, draft.text, draft.html, ...draft.to, ...draft.cc, ...draft.bcc];
          if (fields.some((f) => f?.toLowerCase().includes(needle))) out.add(draft.pk);
        }
      return out;
    },

    /**
     * SEARCH TEXT/BODY: keys of the account's inbox whose full-text document matches `text`
     * (search/). In Trash and Spam the labels lists hide are searched too, with the permissions
     * a list's include_* flags need (what the key lacks, the folder's messages are not: only a
     * message in the trash and spam or blocked at once is left out then).
     */
    async searchText(account: ImapAccount, text: string, folder: Folder): Promise<Set<number>> {
      const out = new Set<number>();
      const hidden =
        folder === 'Trash' || folder === 'Spam'
          ? {
              includeTrash: folder === 'Trash',
              includeSpam: folder === 'Spam' || holds(account.owner, 'labelSpamRead'),
              includeBlocked: holds(account.owner, 'labelBlockedRead'),
            }
          : {};
      let pageToken: string | undefined;
      // At most 100 pages of 100: a folder of mail clients is searched in full, within reason.
      for (let page = 0; page < 100; page++) {
        const result = await deps.search.messages(account.owner, account.inbox.inboxId, {
          q: text,
          limit: 100,
          ...hidden,
          ...(pageToken ? { pageToken } : {}),
        });
        for (const m of result.items) out.add(m.pk);
        pageToken = result.nextPageToken;
        if (!pageToken) break;
      }
      return out;
    },
  };
}

export type ImapService = ReturnType<typeof createImapService>;

/** A refusal with an IMAP response code (`NO [CODE] text`). */
export class ImapNoError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}
