/**
 * NUL characters (U+0000) in request input. PostgreSQL cannot store them in text at all and
 * SQLite stores them, so a string holding one would fail on one dialect and pass on the other.
 * Both services refuse them at their edge, before any field rule or database sees them: a path
 * with a `%00` names nothing (404), a `%00` in the query string or a NUL in any string or key of a
 * JSON body is invalid input (400). Strings a service decodes itself from what the client sent
 * (page tokens, JSON arrays in query parameters, WebSocket frames) are checked where they are
 * decoded, with `nulPath`.
 * See docs/decisions/0013-hostile-input-and-first-minutes.md and 0036-hostile-input-at-its-depth.md.
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
 * key) that holds it, `[]` for the value itself; `undefined` when there is none. Iterative, so
 * that a value nested however deep costs no stack.
 */
export function nulPath(value: unknown): (string | number)[] | undefined {
  // Depth first, in document order: each entry is a value and the path that leads to it.
  const pending: { value: unknown; path: (string | number)[] }[] = [{ value, path: [] }];
  while (pending.length) {
    const { value: at, path } = pending.pop() as { value: unknown; path: (string | number)[] };
    if (typeof at === 'string') {
      if (at.includes('\u0000')) return path;
      continue;
    }
    if (at === null || typeof at !== 'object') continue;
    const entries: [string | number, unknown][] = Array.isArray(at)
      ? at.map((inner, i) => [i, inner])
      : Object.entries(at as Record<string, unknown>);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, inner] = entries[i] as [string | number, unknown];
      if (typeof key === 'string' && key.includes('\u0000')) {
        // A key is found before anything under it, and before later siblings: seen in order below.
        pending.push({ value: '\u0000', path: [...path, key] });
        continue;
      }
      if (typeof inner === 'string' || (inner !== null && typeof inner === 'object'))
        pending.push({ value: inner, path: [...path, key] });
    }
  }
  return undefined;
}
