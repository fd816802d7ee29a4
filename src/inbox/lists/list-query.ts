import { ValidationError } from '../../platform/errors/app-error.js';
import { nulPath } from '../../platform/http/nul.js';

/** Page sizes of every inbox list (the spec's default and cap). */
export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 100;

export function parseLimit(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1)
    throw new ValidationError('limit must be a positive integer.', 'limit', 'INVALID_LIMIT');
  return Math.min(limit, MAX_LIMIT);
}

export interface ListFilter {
  /** Items must carry every one of these labels. */
  readonly labels: readonly string[];
  /** Items carrying any of these labels are left out (spam, blocked and trash unless asked for). */
  readonly hidden: readonly string[];
  /** Only items strictly before / after these times (normalised ISO-8601 UTC). */
  readonly before?: string;
  readonly after?: string;
  /** Substring filters (SDK 0.5): each value must occur in the field, ASCII letters without case. */
  readonly contains: Readonly<Partial<Record<ContainsField, readonly string[]>>>;
}

/** Fields of the 0.5 substring filters: messages `from`, `to`, `subject`; threads `senders`, `recipients`, `subject`. */
export type ContainsField = 'from' | 'to' | 'subject' | 'senders' | 'recipients';

/** The paging and label/time parameters every list of the SDK shares, as sent (snake_case). */
export interface PageQuerystring {
  readonly limit?: number;
  readonly page_token?: string;
  readonly labels?: string | readonly string[];
  readonly before?: string;
  readonly after?: string;
  readonly ascending?: boolean;
}

/** Those parameters → the services' names; absent stays absent. */
export function toPageQuery(q: PageQuerystring): {
  limit?: number;
  pageToken?: string;
  labels?: string | readonly string[];
  before?: string;
  after?: string;
  ascending?: boolean;
} {
  return {
    ...(q.limit !== undefined ? { limit: q.limit } : {}),
    ...(q.page_token ? { pageToken: q.page_token } : {}),
    ...(q.labels !== undefined ? { labels: q.labels } : {}),
    ...(q.before !== undefined ? { before: q.before } : {}),
    ...(q.after !== undefined ? { after: q.after } : {}),
    ...(q.ascending !== undefined ? { ascending: q.ascending } : {}),
  };
}

/** Labels that lists leave out unless `include_spam`, `include_blocked` or `include_trash` ask for them. */
export const HIDDEN_BY_DEFAULT = { spam: 'includeSpam', blocked: 'includeBlocked', trash: 'includeTrash' } as const;

export interface ListFilterQuery {
  readonly labels?: string | readonly string[];
  readonly before?: string;
  readonly after?: string;
  readonly includeSpam?: boolean;
  readonly includeBlocked?: boolean;
  readonly includeTrash?: boolean;
  /** false leaves out mail labelled unauthenticated (shown by default: decision 0017). */
  readonly includeUnauthenticated?: boolean;
  readonly from?: string | readonly string[];
  readonly to?: string | readonly string[];
  readonly subject?: string | readonly string[];
  readonly senders?: string | readonly string[];
  readonly recipients?: string | readonly string[];
}

/**
 * A list parameter as the SDK sends it, a JSON-encoded array (`["a","b"]`); a bare value or a
 * repeated parameter works too. Anything else that looks like JSON is an error rather than a value.
 */
export function parseStringList(field: string, raw: string | readonly string[] | undefined, code: string): string[] {
  if (Array.isArray(raw)) return [...(raw as readonly string[])];
  if (typeof raw !== 'string' || raw === '') return [];
  if (!/^\s*[[{"]/.test(raw)) return [raw];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed) || !parsed.every((l) => typeof l === 'string'))
    throw new ValidationError(`${field} must be a JSON array of strings, e.g. ["a"].`, field, code);
  // A `\u0000` escape decodes to the NUL that `%00` would have been (refused for every URL).
  if (nulPath(parsed))
    throw new ValidationError(
      `${field}: contains a NUL character (U+0000), which no parameter accepts.`,
      field,
      'NUL_CHARACTER',
    );
  return parsed as string[];
}

const CONTAINS_FIELDS: readonly ContainsField[] = ['from', 'to', 'subject', 'senders', 'recipients'];

function parseContains(query: ListFilterQuery): Partial<Record<ContainsField, string[]>> {
  const out: Partial<Record<ContainsField, string[]>> = {};
  for (const field of CONTAINS_FIELDS) {
    const values = parseStringList(field, query[field], 'INVALID_FILTER');
    if (!values.length) continue;
    if (values.length > 20)
      throw new ValidationError(`${field}: at most 20 values per filter.`, field, 'INVALID_FILTER');
    if (values.some((v) => v.length === 0 || v.length > 998))
      throw new ValidationError(`${field}: values are 1 to 998 characters long.`, field, 'INVALID_FILTER');
    out[field] = [...new Set(values)];
  }
  return out;
}

/** The filters of message and thread lists (labels, times, hidden labels, 0.5 substring filters). */
export function parseListFilter(query: ListFilterQuery): ListFilter {
  const labels = parseStringList('labels', query.labels, 'INVALID_LABELS');
  if (labels.length > 20)
    throw new ValidationError('labels: at most 20 labels per filter.', 'labels', 'INVALID_LABELS');
  const time = (field: 'before' | 'after') => {
    const value = query[field];
    if (value === undefined) return {};
    const t = new Date(value);
    if (Number.isNaN(t.getTime()))
      throw new ValidationError(`${field} must be an ISO-8601 date-time.`, field, 'INVALID_DATE');
    return { [field]: t.toISOString() };
  };
  const wanted = new Set(labels);
  // Asking for a label by name (labels=["spam"]) shows those items, as include_spam would.
  const hidden = Object.entries(HIDDEN_BY_DEFAULT)
    .filter(([label, flag]) => query[flag] !== true && !wanted.has(label))
    .map(([label]) => label);
  if (query.includeUnauthenticated === false && !wanted.has('unauthenticated')) hidden.push('unauthenticated');
  return { labels: [...wanted], hidden, contains: parseContains(query), ...time('before'), ...time('after') };
}
