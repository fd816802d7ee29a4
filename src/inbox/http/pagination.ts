import { ValidationError } from './error-envelope.js';

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 100;

export interface Cursor {
  /** The sort value of the last item returned (a timestamp). */
  readonly sort: string;
  /** Its unique tiebreaker (an internal id or key). */
  readonly tiebreak: string | number;
  readonly direction: 'asc' | 'desc';
}

/** Opaque page tokens: base64url JSON of the last sort key; tampering yields a 400, never a 500. */
export function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify([cursor.sort, cursor.tiebreak, cursor.direction])).toString('base64url');
}

/**
 * `tiebreak` says what the list's tiebreaker is: an internal integer key, or a public id (text).
 * A token whose tiebreaker has the other type was not issued for this list: PostgreSQL would fail
 * comparing it with an integer column and SQLite would silently compare text with numbers.
 */
export function decodeCursor(token: string, tiebreak: 'integer' | 'string'): Cursor {
  try {
    const v = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as unknown;
    const tiebreakOk = (t: unknown) => (tiebreak === 'integer' ? Number.isSafeInteger(t) : typeof t === 'string');
    if (Array.isArray(v) && v.length === 3 && typeof v[0] === 'string' && tiebreakOk(v[1]) && (v[2] === 'asc' || v[2] === 'desc')) {
      return { sort: v[0], tiebreak: v[1] as string | number, direction: v[2] };
    }
  } catch {
    // fall through
  }
  throw new ValidationError('page_token is not a token this API issued.', 'page_token', 'INVALID_PAGE_TOKEN');
}

export function parseLimit(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1) throw new ValidationError('limit must be a positive integer.', 'limit', 'INVALID_LIMIT');
  return Math.min(limit, MAX_LIMIT);
}

/** Splits a limit+1 result into the page and the token of the next page, if there is one. */
export function page<T>(rows: readonly T[], limit: number, keyOf: (row: T) => { sort: string; tiebreak: string | number }, direction: 'asc' | 'desc'): { items: T[]; nextPageToken: string | undefined } {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  const nextPageToken = rows.length > limit && last ? encodeCursor({ ...keyOf(last), direction }) : undefined;
  return { items, nextPageToken };
}

export interface ListFilter {
  /** Items must carry every one of these labels. */
  readonly labels: readonly string[];
  /** Items carrying any of these labels are left out (spam, blocked and trash unless asked for). */
  readonly hidden: readonly string[];
  /** Only items strictly before / after these times (normalised ISO-8601 UTC). */
  readonly before?: string;
  readonly after?: string;
}

/**
 * The filters of message and thread lists. `labels` arrives as the SDK sends it, a JSON-encoded
 * array (`["a","b"]`); a bare label or a repeated parameter works too. Anything else that looks
 * like JSON is an error rather than a label.
 */
/** Labels that lists leave out unless `include_spam`, `include_blocked` or `include_trash` ask for them. */
export const HIDDEN_BY_DEFAULT = { spam: 'includeSpam', blocked: 'includeBlocked', trash: 'includeTrash' } as const;

export interface ListFilterQuery {
  readonly labels?: string | readonly string[];
  readonly before?: string;
  readonly after?: string;
  readonly includeSpam?: boolean;
  readonly includeBlocked?: boolean;
  readonly includeTrash?: boolean;
}

export function parseListFilter(query: ListFilterQuery): ListFilter {
  let labels: string[] = [];
  const raw = query.labels;
  if (Array.isArray(raw)) labels = [...raw];
  else if (typeof raw === 'string' && /^\s*[[{"]/.test(raw)) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      parsed = undefined;
    }
    if (!Array.isArray(parsed) || !parsed.every((l) => typeof l === 'string')) {
      throw new ValidationError('labels must be a JSON array of strings, e.g. ["unread"].', 'labels', 'INVALID_LABELS');
    }
    labels = parsed as string[];
  } else if (typeof raw === 'string' && raw !== '') labels = [raw];
  if (labels.length > 20) throw new ValidationError('labels: at most 20 labels per filter.', 'labels', 'INVALID_LABELS');
  const time = (field: 'before' | 'after') => {
    const value = query[field];
    if (value === undefined) return {};
    const t = new Date(value);
    if (Number.isNaN(t.getTime())) throw new ValidationError(`${field} must be an ISO-8601 date-time.`, field, 'INVALID_DATE');
    return { [field]: t.toISOString() };
  };
  const wanted = new Set(labels);
  // Asking for a label by name (labels=["spam"]) shows those items, as include_spam would.
  const hidden = Object.entries(HIDDEN_BY_DEFAULT)
    .filter(([label, flag]) => query[flag] !== true && !wanted.has(label))
    .map(([label]) => label);
  return { labels: [...wanted], hidden, ...time('before'), ...time('after') };
}
