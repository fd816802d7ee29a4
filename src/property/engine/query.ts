/**
 * Query strings as PHP (and so API Platform) reads them: `a[]=1&a[]=2` and `a[0]=1` are lists,
 * `order[price]=asc` is a map, a repeated plain key keeps its first position and its last value.
 * Pagination links are written back the way API Platform's IriHelper writes them.
 */

export type QueryValue = string | QueryValue[] | { [key: string]: QueryValue };
export type Query = Map<string, QueryValue>;

function decode(component: string): string {
  const s = component.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(s);
  } catch {
    // Malformed percent-encoding: decode what can be decoded and keep the rest literally.
    return s.replace(/(%[0-9A-Fa-f]{2})+/g, (m) => {
      try {
        return decodeURIComponent(m);
      } catch {
        return m;
      }
    });
  }
}

const MAX_PAIRS = 100;
const MAX_DEPTH = 4;

export function parseQuery(raw: string): Query {
  const query: Query = new Map();
  if (!raw) return query;
  let pairs = 0;
  for (const part of raw.split('&')) {
    if (!part) continue;
    if (++pairs > MAX_PAIRS) break;
    const eq = part.indexOf('=');
    const key = decode(eq < 0 ? part : part.slice(0, eq));
    const value = eq < 0 ? '' : decode(part.slice(eq + 1));
    const open = key.indexOf('[');
    if (open <= 0 || !key.endsWith(']')) {
      if (key) query.set(key, value);
      continue;
    }
    const base = key.slice(0, open);
    const path = key
      .slice(open + 1, -1)
      .split('][')
      .slice(0, MAX_DEPTH);
    let container: QueryValue | undefined = query.get(base);
    if (container === undefined || typeof container === 'string') {
      container = path[0] === '' ? [] : {};
      query.set(base, container);
    }
    insert(container, path, value);
  }
  return query;
}

function insert(container: QueryValue, path: readonly string[], value: string): void {
  const [head, ...rest] = path;
  if (head === undefined || typeof container === 'string') return;
  if (rest.length === 0) {
    if (Array.isArray(container)) {
      container.push(value);
    } else if (head === '') {
      container[String(Object.keys(container).length)] = value;
    } else {
      container[head] = value;
    }
    return;
  }
  let child: QueryValue | undefined;
  if (Array.isArray(container)) {
    child = rest[0] === '' ? [] : {};
    container.push(child);
  } else {
    const existing = container[head];
    child = existing === undefined || typeof existing === 'string' ? (rest[0] === '' ? [] : {}) : existing;
    container[head === '' ? String(Object.keys(container).length) : head] = child;
  }
  insert(child, rest, value);
}

/** The values of a list-or-scalar parameter (`x=1`, `x[]=1&x[]=2`, `x[0]=1`) as strings. */
export function listValues(value: QueryValue | undefined): string[] {
  if (value === undefined) return [];
  if (typeof value === 'string') return [value];
  const items = Array.isArray(value) ? value : Object.values(value);
  return items.filter((v): v is string => typeof v === 'string');
}

/** RFC 3986 encoding, as PHP's rawurlencode: only unreserved characters stay literal. */
function encode(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function build(prefix: string, value: QueryValue, out: string[]): void {
  if (typeof value === 'string') {
    out.push(`${prefix}=${encode(value)}`);
    return;
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
  for (const [k, v] of entries) build(`${prefix}[${k}]`, v, out);
}

/**
 * Builds `path?…&page=N` from the request's parameters: `page` removed and appended last, list
 * indices written as `[]`, everything RFC 3986-encoded (brackets included).
 */
export function buildQueryString(query: Query, pageParameter: string, page: number | undefined): string {
  const out: string[] = [];
  for (const [key, value] of query) {
    if (key === pageParameter) continue;
    build(key, value, out);
  }
  if (page !== undefined) out.push(`${pageParameter}=${page}`);
  return out
    .map((pair) => {
      const eq = pair.indexOf('=');
      return encode(pair.slice(0, eq)).replace(/%5B\d+%5D/g, '%5B%5D') + pair.slice(eq);
    })
    .join('&');
}
