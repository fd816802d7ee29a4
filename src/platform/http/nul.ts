/**
 * NUL characters (U+0000) in request input. PostgreSQL cannot store them in text at all and
 * SQLite stores them, so a string holding one would fail on one dialect and pass on the other.
 * Both services refuse them at their edge, before any field rule or database sees them: a
 * `%00` anywhere in the URL (path or query), or a NUL in any string or key of a JSON body.
 * See docs/decisions/0008-hostile-input.md.
 */

/** Whether a request URL (path and query, still percent-encoded) decodes to a NUL somewhere. */
export function urlHasNul(url: string): boolean {
  return url.includes('%00') || url.includes('\u0000');
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
