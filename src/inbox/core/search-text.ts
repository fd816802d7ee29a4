import { hash } from 'node:crypto';
import { ValidationError } from '../../platform/errors/app-error.js';
import type { Message } from './message.js';
import { nextTurn } from '../../platform/turns.js';

/**
 * The words of the search index, computed here once for both dialects (docs/decisions/0017):
 * lower-cased, diacritics removed (NFKD without combining marks), split at every character that
 * is neither a letter nor a digit, and cut to MAX_WORD characters. SQLite's FTS5 and PostgreSQL's
 * tsvector receive these words as they are (FTS5 splits the space-joined list at the spaces;
 * PostgreSQL builds its vector with array_to_tsvector, no parser), so both dialects index the
 * same words and answer a query the same way.
 */
export const MAX_WORD = 32;
/** Bytes of words one document holds at most (PostgreSQL refuses a tsvector over 1 MB). */
export const DOCUMENT_BUDGET = 400_000;
export const MAX_QUERY_LENGTH = 1000;
export const MAX_QUERY_TERMS = 16;

const WORD = /[\p{L}\p{N}]+/gu;
const MARKS = /\p{M}+/gu;

function cut(word: string): string {
  if (word.length <= MAX_WORD) return word;
  return Array.from(word).slice(0, MAX_WORD).join('');
}

/** Long texts are normalized this many UTF-16 units at a time (more, up to the next whitespace). */
export const PIECE_LENGTH = 16 * 1024;
/** Spaces and line breaks; not U+FEFF, which \s includes but Unicode counts as case-ignorable. */
const WHITESPACE = /[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/g;

/**
 * The words of `text`, in order, repeats kept, computed piece by piece: a 2 MiB body is never
 * copied whole (lower-cased, normalized, stripped: three copies) nor split into one array of all
 * its words, which took about 30 MiB per big send in flight (bench/README.md, big sends).
 * Pieces end at whitespace, which no word, no letter's combining marks and no case mapping
 * context (Greek final sigma) crosses, so the words are those of the whole text at once.
 */
export function* words(text: string | null | undefined, pieceLength = PIECE_LENGTH): Generator<string> {
  if (!text) return;
  for (let start = 0; start < text.length;) {
    let end = start + pieceLength;
    if (end >= text.length) end = text.length;
    else {
      WHITESPACE.lastIndex = end;
      end = WHITESPACE.exec(text)?.index ?? text.length;
    }
    const found = text.slice(start, end).toLowerCase().normalize('NFKD').replace(MARKS, '').match(WORD);
    if (found) for (const w of found) yield cut(w);
    start = end;
  }
}

/** The words of a short text (a subject, an address, a name, a query), in order, repeats kept. */
export function wordsOf(text: string | null | undefined): string[] {
  return [...words(text)];
}

/** The fields a message or thread is found by: each a set of distinct words. */
export interface SearchDocument {
  readonly subject: readonly string[];
  readonly addresses: readonly string[];
  /** Text body (or the HTML's text when there is none) and attachment file names. */
  readonly body: readonly string[];
}

/** The fields of a message its words come from (a stored message, or a row read back for a rebuild). */
export type IndexableMessage = Pick<Message, 'subject' | 'from' | 'to' | 'cc' | 'bcc' | 'replyTo' | 'text' | 'html'> & {
  readonly attachments: readonly Pick<Message['attachments'][number], 'filename'>[];
};

const htmlText = (html: string): string =>
  html
    .replace(/<(script|style)[\s\S]*?<\/\1\s*>/gi, ' ')
    .replace(/<[^>]*>/g, ' ')
    .replace(/&[a-z0-9#]+;/gi, ' ');

/**
 * Distinct words per field, subject first, then addresses, then body, until DOCUMENT_BUDGET bytes:
 * a document never grows past what PostgreSQL stores in one tsvector, whatever the message.
 */
export function documentOf(parts: {
  subject: Iterable<string>;
  addresses: Iterable<string>;
  body: Iterable<string>;
}): SearchDocument {
  let budget = DOCUMENT_BUDGET;
  const seen = new Set<string>();
  const take = (found: Iterable<string>): string[] => {
    const out: string[] = [];
    const local = new Set<string>();
    for (const w of found) {
      if (local.has(w)) continue;
      const cost = seen.has(w) ? 0 : Buffer.byteLength(w) + 8;
      if (cost > budget) break;
      budget -= cost;
      seen.add(w);
      local.add(w);
      out.push(w);
    }
    return out;
  };
  const subject = take(parts.subject);
  const addresses = take(parts.addresses);
  return { subject, addresses, body: take(parts.body) };
}

/** The text body's words (or the HTML's text's when there is none), then the attachments' file names'. */
function* bodyWords(m: BodyParts): Generator<string> {
  yield* words(m.text ?? (m.html !== null ? htmlText(m.html) : null));
  for (const a of m.attachments) yield* words(a.filename);
}

export type BodyParts = Pick<IndexableMessage, 'text' | 'html' | 'attachments'>;

/** What `bodyWords` reads of a message: its text (or its HTML when it has none) and its file names. */
export function bodyParts(m: BodyParts): BodyParts {
  const text = m.text ?? null;
  return {
    text,
    html: text === null ? m.html : null,
    attachments: m.attachments.map((a) => ({ filename: a.filename })),
  };
}

/** Words read between two yields to the event loop in `distinctBodyWords` (about 1 ms of work). */
const WORDS_PER_TURN = 20_000;

/**
 * The distinct words of a message's body in order of first occurrence, as many as a document can
 * take from it: computed once per message before the unit of work, and in turns of the event loop,
 * so that a long body does not hold up other requests (decision 0017), or for a large body in a
 * worker thread (search.service.ts `bodyWordsOf`). `documentOf` given these makes the same
 * document as given every word of the body: it skips repeats, and stops at the first new word
 * over its budget, which comes before the end of this list: words that are also in the subject
 * or addresses cost it nothing, and those cost at most DOCUMENT_BUDGET together, so it never
 * takes body words worth more than twice that.
 */
export async function distinctBodyWords(m: BodyParts): Promise<string[]> {
  const out: string[] = [];
  const seen = new Set<string>();
  let budget = 2 * DOCUMENT_BUDGET;
  let read = 0;
  for (const w of bodyWords(m)) {
    if (++read % WORDS_PER_TURN === 0) await nextTurn();
    if (seen.has(w)) continue;
    const cost = Buffer.byteLength(w) + 8;
    if (cost > budget) break;
    budget -= cost;
    seen.add(w);
    out.push(w);
  }
  return out;
}

/** A message's document; `body`: its `distinctBodyWords` when computed beforehand. */
export function messageDocument(m: IndexableMessage, body?: readonly string[]): SearchDocument {
  return documentOf({
    subject: wordsOf(m.subject),
    addresses: [m.from, ...m.to, ...m.cc, ...m.bcc, ...m.replyTo].flatMap(wordsOf),
    body: body ?? bodyWords(m),
  });
}

/** The union of documents (a thread's messages), under the same budget. */
export function mergeDocuments(docs: readonly SearchDocument[]): SearchDocument {
  return documentOf({
    subject: docs.flatMap((d) => d.subject),
    addresses: docs.flatMap((d) => d.addresses),
    body: docs.flatMap((d) => d.body),
  });
}

/** Words stored as text (FTS5 columns, and the thread documents kept for merging). */
export const joinWords = (words: readonly string[]): string => words.join(' ');
export const splitWords = (text: string | null): string[] => (text ? text.split(' ').filter((w) => w !== '') : []);

/** Scope words of the FTS5 index: organization, pod, inbox and thread, hashed to letters and digits. */
export function scopeWord(kind: 'o' | 'p' | 'i', id: string): string {
  return kind + hash('sha256', id, 'hex').slice(0, 24);
}

/** A thread's id as one word (thread ids are UUIDs); the SQLite trigger on threads computes the same. */
export function threadWord(threadId: string): string {
  return `t${threadId.toLowerCase().replace(/[^a-z0-9]/g, '')}`;
}

export class InvalidQueryError extends ValidationError {
  constructor(problem: string) {
    super(`q: ${problem}`, 'q', 'INVALID_QUERY');
  }
}

/** A word of a query: the whole word, or (written with a trailing `*`) every word it begins. */
export interface QueryTerm {
  readonly word: string;
  readonly prefix: boolean;
}

const QUERY_WORD = /([\p{L}\p{N}]+)(\*)?/gu;

/**
 * The accepted query syntax: words. Every word must occur (AND) as a whole word of the document;
 * a word written with a trailing `*` matches every word it begins (`inv*` finds `invoice`). Any
 * other character separates words, so quotes, operators (`AND`, `-`, `:`, parentheses) and address
 * punctuation need no escaping and change nothing (`ann@example.com` = `ann example com`). At most
 * MAX_QUERY_LENGTH characters and MAX_QUERY_TERMS distinct words; a query without a letter or
 * digit is refused. (Whole words by default: a prefix is a union of every word it begins, which
 * costs in proportion to how common those words are; the caller asks for it explicitly.)
 */
export function parseQuery(q: string | undefined): QueryTerm[] {
  if (q === undefined || q.trim() === '') throw new InvalidQueryError('a search query is required.');
  if (q.length > MAX_QUERY_LENGTH) throw new InvalidQueryError(`at most ${MAX_QUERY_LENGTH} characters.`);
  const normalized = q.toLowerCase().normalize('NFKD').replace(MARKS, '');
  const terms = new Map<string, boolean>();
  for (const m of normalized.matchAll(QUERY_WORD)) {
    const word = cut(m[1] as string);
    terms.set(word, (terms.get(word) ?? false) || m[2] === '*');
  }
  if (!terms.size) throw new InvalidQueryError('the query has no word (letters or digits) to search for.');
  if (terms.size > MAX_QUERY_TERMS) throw new InvalidQueryError(`at most ${MAX_QUERY_TERMS} distinct words.`);
  return [...terms].map(([word, prefix]) => ({ word, prefix }));
}

/** The words an inbox is found by (address and display name), each preceded by a space. */
export function inboxSearchWords(inboxId: string, displayName: string | null): string {
  return [...new Set([...wordsOf(inboxId), ...wordsOf(displayName)])].map((w) => ` ${w}`).join('');
}
