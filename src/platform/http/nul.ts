/**
 * NUL characters (U+0000) in request input. PostgreSQL cannot store them in text at all and
 * SQLite stores them, so a string holding one would fail on one dialect and pass on the other.
 * Both services refuse them at their edge, before any field rule or database sees them: a path
 * with a `%00` names nothing (404), a `%00` in the query string or a NUL in any string or key of a
 * JSON body is invalid input (400).
 * See docs/decisions/0013-hostile-input-and-first-minutes.md.
 */

/** Where a request URL (still percent-encoded) decodes to a NUL: in its path, its query, or nowhere. */
export function nulInUrl(url: string): 'path' | 'query' | undefined {
  const q = url.indexOf('?');
  const has = (part: string) => part.includes('%00') || part.includes('\u0000');
  if (has(q === -1 ? url : url.slice(0, q))) return 'path';
  return q !== -1 && has(url.slice(q)) ? 'query' : undefined;
}

/**
 * Where the first NUL in a parsed JSON value is: the keys and indexes leading to the string (or
 * key) that holds it, `[]` for the value itself; `undefined` when there is none.
 */
export function nulPath(value: unknown): (string | number)[] | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? [] : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const inner = nulPath(value[i]);
      if (inner) return [i, ...inner];
    }
    return undefined;
  }
  for (const [key, inner] of Object.entries(value)) {
    if (key.includes('\u0000')) return [key];
    const found = nulPath(inner);
    if (found) return [key, ...found];
  }
  return undefined;
}
