import { ValidationError } from '../errors/app-error.js';
import { nulPath } from '../http/nul.js';

/** Where a keyset page ends: the last item's sort key, and the direction the list runs in. */
export interface Cursor {
  /** The sort value of the last item returned (a timestamp). */
  readonly sort: string;
  /** Its unique tiebreaker (an internal id or key). */
  readonly tiebreak: string | number;
  readonly direction: 'asc' | 'desc';
}

/**
 * Opaque page tokens: base64url JSON of the last sort key; tampering yields a 400, never a 500, the
 * same on both dialects.
 */
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
    // A NUL reaches no query: PostgreSQL would fail on it (22021) where SQLite compares it, so the
    // dialects would disagree. No token this API issued holds one (no stored value does).
    if (
      nulPath(v) === undefined &&
      Array.isArray(v) &&
      v.length === 3 &&
      typeof v[0] === 'string' &&
      tiebreakOk(v[1]) &&
      (v[2] === 'asc' || v[2] === 'desc')
    ) {
      return { sort: v[0], tiebreak: v[1] as string | number, direction: v[2] };
    }
  } catch {
    // fall through
  }
  throw new ValidationError('page_token is not a token this API issued.', 'page_token', 'INVALID_PAGE_TOKEN');
}

/** Splits a limit+1 result into the page and the token of the next page, if there is one. */
export function page<T>(
  rows: readonly T[],
  limit: number,
  keyOf: (row: T) => { sort: string; tiebreak: string | number },
  direction: 'asc' | 'desc',
): { items: T[]; nextPageToken: string | undefined } {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  const nextPageToken = rows.length > limit && last ? encodeCursor({ ...keyOf(last), direction }) : undefined;
  return { items, nextPageToken };
}
