import { RESERVED_LABELS } from './message.js';
import { TRASH_LABEL } from './thread.js';

/**
 * The folders a mail client sees (IMAP, decision 0045): views of the one store, chosen by a
 * message's labels, as the hosted AgentMail's are. No SQL, no I/O.
 */

export const FOLDERS = ['INBOX', 'Sent', 'Trash', 'Spam', 'Drafts'] as const;
export type Folder = (typeof FOLDERS)[number];

/** Folders that hold stored messages (Drafts shows drafts, which are no messages: decision 0045). */
export const MESSAGE_FOLDERS: readonly Folder[] = ['INBOX', 'Sent', 'Trash', 'Spam'];

export const SPAM_LABEL = 'spam';
export const UNREAD_LABEL = 'unread';
/** A copy the recipient's lists refused: in no folder, as lists leave it out unless asked. */
export const BLOCKED_LABEL = 'blocked';

/**
 * The folders a message with `labels` appears in: Trash if it is in the trash, else Spam if it is
 * spam, else INBOX if it was received and Sent if it was sent (both for mail an inbox sent itself).
 * A blocked copy is in none.
 */
export function foldersOf(labels: readonly string[]): Folder[] {
  if (labels.includes(TRASH_LABEL)) return ['Trash'];
  if (labels.includes(SPAM_LABEL)) return ['Spam'];
  if (labels.includes(BLOCKED_LABEL)) return [];
  const out: Folder[] = [];
  if (labels.includes('received')) out.push('INBOX');
  if (labels.includes('sent')) out.push('Sent');
  return out;
}

/** The folder a mailbox name means (INBOX in any case, the others as listed), if any. */
export function folderNamed(name: string): Folder | undefined {
  if (name.toUpperCase() === 'INBOX') return 'INBOX';
  return FOLDERS.find((f) => f === name);
}

/** SPECIAL-USE attributes (RFC 6154) of the folders. */
export const SPECIAL_USE: Readonly<Partial<Record<Folder, string>>> = {
  Sent: '\\Sent',
  Trash: '\\Trash',
  Spam: '\\Junk',
  Drafts: '\\Drafts',
};

/**
 * System flags that are labels. `\Seen` is the absence of `unread`; the others are labels of
 * their own. `\Deleted` lives in the session only (EXPUNGE acts on it at once), `\Draft` and
 * `\Recent` are never set.
 */
export const FLAG_LABELS: Readonly<Record<string, string>> = {
  '\\Flagged': 'starred',
  '\\Answered': 'answered',
};

/**
 * Labels that say where a message is or how it came (its folder, its direction, what the
 * service found): never shown as keywords and never set by one.
 */
const STRUCTURAL = new Set([
  ...RESERVED_LABELS,
  TRASH_LABEL,
  SPAM_LABEL,
  BLOCKED_LABEL,
  UNREAD_LABEL,
  'unauthenticated',
]);

/** Characters of an IMAP atom (RFC 3501 ATOM-CHAR, without `]`, as flag-keyword allows). */
const KEYWORD = /^[!#$&'+,\-.0-9:;<=>?@A-Z^_`a-z|}~]{1,255}$/;

/** The IMAP flags of a message with `labels`. */
export function flagsOf(labels: readonly string[]): string[] {
  const flags: string[] = [];
  if (!labels.includes(UNREAD_LABEL)) flags.push('\\Seen');
  for (const [flag, label] of Object.entries(FLAG_LABELS)) if (labels.includes(label)) flags.push(flag);
  const mapped = new Set(Object.values(FLAG_LABELS));
  for (const l of labels) if (!STRUCTURAL.has(l.toLowerCase()) && !mapped.has(l) && KEYWORD.test(l)) flags.push(l);
  return flags;
}

/**
 * Which label a flag a client sets or clears stands for, and whether setting the flag adds it
 * (`\Seen` removes `unread`). Undefined for flags that are no label (`\Deleted`, `\Recent`,
 * `\Draft`) or that would name a structural label.
 */
export function labelOfFlag(flag: string): { label: string; addsLabel: boolean } | undefined {
  if (flag.toLowerCase() === '\\seen') return { label: UNREAD_LABEL, addsLabel: false };
  const system = Object.keys(FLAG_LABELS).find((f) => f.toLowerCase() === flag.toLowerCase());
  if (system) return { label: FLAG_LABELS[system] as string, addsLabel: true };
  if (flag.startsWith('\\') || !KEYWORD.test(flag) || STRUCTURAL.has(flag.toLowerCase())) return undefined;
  return { label: flag, addsLabel: true };
}
