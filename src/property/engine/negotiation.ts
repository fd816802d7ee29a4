import { AppError } from '../../platform/errors/app-error.js';

export type Format = 'jsonld' | 'json';

export const FORMAT_MIME: Readonly<Record<Format, string>> = {
  jsonld: 'application/ld+json',
  json: 'application/json',
};
export const OUTPUT_FORMATS: readonly Format[] = ['jsonld', 'json'];
export const SUFFIX_FORMATS: Readonly<Record<string, Format>> = { jsonld: 'jsonld', json: 'json' };

interface MediaRange {
  readonly type: string;
  readonly subtype: string;
  readonly q: number;
  readonly order: number;
}

function parseAccept(header: string): MediaRange[] {
  const ranges: MediaRange[] = [];
  header.split(',').forEach((part, order) => {
    const [range, ...params] = part.trim().split(';');
    const [type, subtype] = (range ?? '').trim().toLowerCase().split('/');
    if (!type || !subtype) return;
    let q = 1;
    for (const p of params) {
      const [k, v] = p.trim().split('=');
      if (k?.trim().toLowerCase() === 'q') {
        const n = Number(v);
        q = Number.isFinite(n) ? Math.min(Math.max(n, 0), 1) : 0;
      }
    }
    ranges.push({ type, subtype, q, order });
  });
  return ranges;
}

function matches(range: MediaRange, mime: string): boolean {
  const [type, subtype] = mime.split('/');
  return (
    (range.type === '*' && range.subtype === '*') ||
    (range.type === type && (range.subtype === '*' || range.subtype === subtype))
  );
}

function specificity(range: MediaRange): number {
  return range.type === '*' ? 0 : range.subtype === '*' ? 1 : 2;
}

/** Ranges by preference: quality, then specificity, then their order in the header. */
function byPreference(ranges: readonly MediaRange[]): MediaRange[] {
  return ranges
    .filter((r) => r.q > 0)
    .sort((a, b) => b.q - a.q || specificity(b) - specificity(a) || a.order - b.order);
}

/**
 * Picks the output format: a path suffix narrows the candidates, Accept chooses among them (the
 * most preferred range that a candidate satisfies wins; a bare wildcard gives the first candidate,
 * JSON-LD), no match → 406.
 */
export function negotiate(accept: string | undefined, candidates: readonly Format[]): Format {
  if (!accept || !accept.trim()) return candidates[0] as Format;
  // Clients send a handful of distinct Accept headers: remember the outcome (never a 406).
  const key = `${candidates.join(',')}|${accept}`;
  const known = NEGOTIATED.get(key);
  if (known) return known;
  const chosen = negotiateUncached(accept, candidates);
  if (NEGOTIATED.size >= 500) NEGOTIATED.clear();
  NEGOTIATED.set(key, chosen);
  return chosen;
}

const NEGOTIATED = new Map<string, Format>();

function negotiateUncached(accept: string, candidates: readonly Format[]): Format {
  const ranges = parseAccept(accept);
  for (const range of byPreference(ranges)) {
    const format = candidates.find((c) => matches(range, FORMAT_MIME[c]));
    if (format) return format;
  }
  const requested = ranges[0] ? `${ranges[0].type}/${ranges[0].subtype}` : accept.trim();
  throw new AppError(
    'not_acceptable',
    `Requested format "${requested}" is not supported. Supported MIME types are ${candidates.map((c) => `"${FORMAT_MIME[c]}"`).join(', ')}.`,
  );
}

/** Errors are answered as problem+json when the client prefers plain or problem JSON, else as JSON-LD. */
export function negotiateErrorFormat(accept: string | undefined): 'jsonld' | 'problem' {
  if (!accept) return 'jsonld';
  for (const range of byPreference(parseAccept(accept))) {
    if (specificity(range) < 2) return 'jsonld';
    if (range.type === 'application' && range.subtype === 'ld+json') return 'jsonld';
    if (range.type === 'application' && (range.subtype === 'json' || range.subtype === 'problem+json'))
      return 'problem';
  }
  return 'jsonld';
}

/** The media type of a Content-Type header, without parameters, lower-cased. */
export function mediaType(contentType: string | undefined): string | undefined {
  if (!contentType) return undefined;
  const type = contentType.split(';')[0]?.trim().toLowerCase();
  return type || undefined;
}

export function requireContentType(contentType: string | undefined, accepted: readonly string[]): void {
  const type = mediaType(contentType);
  if (!type) throw new AppError('unsupported_media_type', 'The "Content-Type" header must exist.');
  if (!accepted.includes(type)) {
    throw new AppError(
      'unsupported_media_type',
      `The content-type "${type}" is not supported. Supported MIME types are ${accepted.map((a) => `"${a}"`).join(', ')}.`,
    );
  }
}
