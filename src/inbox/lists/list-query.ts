import { ValidationError } from '../../platform/errors/app-error.js';

/** Page sizes of every inbox list (the spec's default and cap). */
export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 100;

export function parseLimit(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1) throw new ValidationError('limit must be a positive integer.', 'limit', 'INVALID_LIMIT');
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
