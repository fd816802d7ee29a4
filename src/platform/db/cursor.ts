import { ValidationError } from '../errors/app-error.js';

/** Where a keyset page ends: the last item's sort key, and the direction the list runs in. */
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

export function decodeCursor(token: string): Cursor {
  try {
    const v = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 3 && typeof v[0] === 'string' && (typeof v[1] === 'string' || typeof v[1] === 'number') && (v[2] === 'asc' || v[2] === 'desc')) {
      return { sort: v[0], tiebreak: v[1], direction: v[2] };
    }
  } catch {
    // fall through
  }
  throw new ValidationError('page_token is not a token this API issued.', 'page_token', 'INVALID_PAGE_TOKEN');
}

/** Splits a limit+1 result into the page and the token of the next page, if there is one. */
export function page<T>(rows: readonly T[], limit: number, keyOf: (row: T) => { sort: string; tiebreak: string | number }, direction: 'asc' | 'desc'): { items: T[]; nextPageToken: string | undefined } {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  const nextPageToken = rows.length > limit && last ? encodeCursor({ ...keyOf(last), direction }) : undefined;
  return { items, nextPageToken };
}
