import addressparser from 'nodemailer/lib/addressparser';

/**
 * The MIME structure of a stored source as IMAP sees it (RFC 3501 §6.4.5, §7.4.2): every entity
 * with the byte offsets of its header and body in the source, so that a section is a slice of
 * the stored bytes, never a re-encoding. Tolerant of what real mail holds (LF-only lines, missing
 * closing boundaries, junk in parameters). No I/O.
 */

export interface MimeEntity {
  /** Offsets into the source: the header (with the blank line that ends it), then the body. */
  readonly headerStart: number;
  readonly bodyStart: number;
  readonly bodyEnd: number;
  /** Unfolded header fields in order, names as written. */
  readonly fields: readonly (readonly [name: string, value: string])[];
  readonly type: string;
  readonly subtype: string;
  readonly params: readonly (readonly [string, string])[];
  /** Parts of a multipart entity. */
  readonly children: readonly MimeEntity[];
  /** The message a message/rfc822 entity holds. */
  readonly message?: MimeEntity;
  /** Lines of the body, counted as `lineCount` does (set by `MimeScanner`, which keeps no source). */
  readonly lines?: number;
}

/** Entities nest at most this deep; deeper ones are taken as opaque bodies (hostile input). */
const MAX_DEPTH = 32;

function headerEnd(source: Buffer, start: number, end: number): { headerEnd: number; bodyStart: number } {
  let i = start;
  // An empty header: the body starts at once after a blank first line.
  if (source[i] === 0x0d && source[i + 1] === 0x0a) return { headerEnd: i, bodyStart: i + 2 };
  if (source[i] === 0x0a) return { headerEnd: i, bodyStart: i + 1 };
  while (i < end) {
    const lf = source.indexOf(0x0a, i);
    if (lf < 0 || lf >= end) return { headerEnd: end, bodyStart: end };
    const next = lf + 1;
    if (source[next] === 0x0a) return { headerEnd: next, bodyStart: next + 1 };
    if (source[next] === 0x0d && source[next + 1] === 0x0a) return { headerEnd: next, bodyStart: next + 2 };
    i = next;
  }
  return { headerEnd: end, bodyStart: end };
}

/** Header fields of `text`, unfolded. */
export function headerFields(text: string): [string, string][] {
  const out: [string, string][] = [];
  for (const line of text.split(/\r?\n/)) {
    if (/^[ \t]/.test(line) && out.length) {
      const last = out[out.length - 1] as [string, string];
      last[1] += ` ${line.trim()}`;
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    out.push([line.slice(0, colon).trim(), line.slice(colon + 1).trim()]);
  }
  return out;
}

/** `value; a=b; c="d"` → the value and its parameters (names lower-cased). */
export function parseParams(header: string): { value: string; params: [string, string][] } {
  const parts: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < header.length; i++) {
    const c = header[i] as string;
    if (c === '\\' && quoted && i + 1 < header.length) {
      current += c + (header[++i] as string);
      continue;
    }
    if (c === '"') quoted = !quoted;
    if (c === ';' && !quoted) {
      parts.push(current);
      current = '';
    } else current += c;
  }
  parts.push(current);
  const value = (parts.shift() ?? '').trim();
  const params: [string, string][] = [];
  for (const p of parts) {
    const eq = p.indexOf('=');
    if (eq <= 0) continue;
    const name = p.slice(0, eq).trim().toLowerCase();
    let v = p.slice(eq + 1).trim();
    if (v.startsWith('"') && v.endsWith('"') && v.length >= 2) v = v.slice(1, -1).replace(/\\(.)/g, '$1');
    if (name) params.push([name, v]);
  }
  return { value, params };
}

export function fieldOf(entity: Pick<MimeEntity, 'fields'>, name: string): string | undefined {
  const lower = name.toLowerCase();
  return entity.fields.find(([n]) => n.toLowerCase() === lower)?.[1];
}

/** The structure of the entity at [start, end) of `source`. */
export function parseEntity(
  source: Buffer,
  start = 0,
  end = source.length,
  defaultType = 'text/plain',
  depth = 0,
): MimeEntity {
  const { headerEnd: hEnd, bodyStart } = headerEnd(source, start, end);
  const fields = headerFields(source.toString('latin1', start, hEnd));
  const ct = parseParams(fieldOf({ fields }, 'content-type') ?? defaultType);
  let [type, subtype] = ct.value.toLowerCase().split('/') as [string, string | undefined];
  let params = ct.params;
  if (!type || !subtype || !/^[a-z0-9!#$&^_.+-]+$/.test(type + subtype)) {
    [type, subtype] = defaultType.split('/') as [string, string];
    params = [];
  }
  if (type === 'text' && !params.some(([n]) => n === 'charset')) params = [...params, ['charset', 'us-ascii']];
  const base = { headerStart: start, bodyStart, bodyEnd: end, fields, type, subtype: subtype as string, params };
  if (depth >= MAX_DEPTH) return { ...base, children: [] };
  if (type === 'multipart') {
    const boundary = params.find(([n]) => n === 'boundary')?.[1];
    if (!boundary) return { ...base, children: [] };
    const childType = subtype === 'digest' ? 'message/rfc822' : 'text/plain';
    return {
      ...base,
      children: splitParts(source, bodyStart, end, boundary).map(([s, e]) =>
        parseEntity(source, s, e, childType, depth + 1),
      ),
    };
  }
  if (type === 'message' && subtype === 'rfc822') {
    const encoding = (fieldOf({ fields }, 'content-transfer-encoding') ?? '7bit').toLowerCase();
    // An encoded message/rfc822 is opaque (RFC 2046 forbids it; some senders do it anyway).
    if (['7bit', '8bit', 'binary'].includes(encoding))
      return { ...base, children: [], message: parseEntity(source, bodyStart, end, 'text/plain', depth + 1) };
  }
  return { ...base, children: [] };
}

/** The [start, end) of each part between the boundaries of a multipart body. */
function splitParts(source: Buffer, start: number, end: number, boundary: string): [number, number][] {
  const delimiter = Buffer.from(`--${boundary}`, 'latin1');
  const parts: [number, number][] = [];
  let partStart = -1;
  let i = start;
  while (i < end) {
    const lf = source.indexOf(0x0a, i);
    const lineEnd = lf < 0 || lf >= end ? end : lf + 1;
    if (source.compare(delimiter, 0, delimiter.length, i, Math.min(i + delimiter.length, end)) === 0) {
      const rest = source.toString('latin1', i + delimiter.length, lineEnd).trim();
      if (rest === '' || rest === '--') {
        // The line break before a delimiter belongs to the delimiter.
        if (partStart >= 0) parts.push([partStart, lineBreakBefore(source, partStart, i)]);
        if (rest === '--') return parts;
        partStart = lineEnd;
      }
    }
    i = lineEnd;
  }
  if (partStart >= 0 && partStart < end) parts.push([partStart, end]);
  return parts;
}

function lineBreakBefore(source: Buffer, floor: number, at: number): number {
  if (at - 2 >= floor && source[at - 2] === 0x0d && source[at - 1] === 0x0a) return at - 2;
  if (at - 1 >= floor && source[at - 1] === 0x0a) return at - 1;
  return at;
}

/** Lines of a body, as BODYSTRUCTURE counts them. */
export function lineCount(source: Buffer, start: number, end: number): number {
  if (end <= start) return 0;
  let lines = 0;
  for (let i = source.indexOf(0x0a, start); i >= 0 && i < end; i = source.indexOf(0x0a, i + 1)) lines++;
  return source[end - 1] === 0x0a ? lines : lines + 1;
}

/**
 * The entity a part number names (`[]`: the message itself). In a message, part 1 of a
 * non-multipart body is the body itself; a message/rfc822 part's numbers go on in the message it
 * holds (RFC 3501 §6.4.5).
 */
export function entityAt(root: MimeEntity, numbers: readonly number[]): MimeEntity | undefined {
  let node: MimeEntity = root;
  for (const n of numbers) {
    const container = node.message ?? node;
    if (container.type === 'multipart') {
      const child = container.children[n - 1];
      if (!child) return undefined;
      node = child;
    } else if (n === 1 && (node === root || node.message)) node = container;
    else return undefined;
  }
  return node;
}

/** One address of an ENVELOPE: (name adl mailbox host); a group is framed by a start and an end. */
export type EnvelopeAddress = [string | null, null, string | null, string | null];

/** An address list header as ENVELOPE lists it. */
export function envelopeAddresses(value: string | undefined): EnvelopeAddress[] | null {
  if (!value) return null;
  const out: EnvelopeAddress[] = [];
  const add = (a: { name?: string; address?: string }) => {
    const address = a.address ?? '';
    const at = address.lastIndexOf('@');
    out.push([
      a.name || null,
      null,
      at >= 0 ? address.slice(0, at) : address || null,
      at >= 0 ? address.slice(at + 1) : null,
    ]);
  };
  for (const entry of addressparser(value) as {
    name?: string;
    address?: string;
    group?: { name?: string; address?: string }[];
  }[]) {
    if (entry.group) {
      out.push([null, null, entry.name ?? '', null]);
      entry.group.forEach(add);
      out.push([null, null, null, null]);
    } else add(entry);
  }
  return out.length ? out : null;
}

/** A header longer than this is cut for its fields (its offsets stay exact). */
const MAX_SCANNED_HEADER = 256 * 1024;
/** A line longer than this is neither a header field nor a boundary (hostile input). */
const MAX_SCANNED_LINE = 64 * 1024;

interface Frame {
  readonly headerStart: number;
  readonly defaultType: string;
  readonly depth: number;
  header: Buffer[];
  headerBytes: number;
  /** Set once the header has ended. */
  body?: {
    readonly headerEnd: number;
    readonly bodyStart: number;
    /** Line feeds seen before the body started. */
    readonly lfBefore: number;
    readonly type: string;
    readonly subtype: string;
    readonly params: readonly (readonly [string, string])[];
    readonly fields: [string, string][];
    /** multipart: the delimiter line, and whether the closing one was seen. */
    readonly delimiter?: Buffer;
    closed: boolean;
    children: MimeEntity[];
    /** The part being read (multipart), or the message held (message/rfc822). */
    child?: Frame;
  };
}

/**
 * `parseEntity`'s structure of a source read in pieces, holding one line at a time and each
 * entity's header, never the source: for BODYSTRUCTURE of a large stored message (decision
 * 0045). Each leaf entity carries its line count. `push` the pieces in order, then `end()`.
 * mime-structure.test.ts proves it gives `parseEntity`'s structure for any cut into pieces.
 */
export class MimeScanner {
  private offset = 0;
  private lfs = 0;
  private carry: Buffer[] = [];
  private carryBytes = 0;
  /** The previous line: where it started, its length without its line break, its break's length. */
  private previous: { start: number; content: number; terminator: number } | undefined;
  private readonly root: Frame = { headerStart: 0, defaultType: 'text/plain', depth: 0, header: [], headerBytes: 0 };

  /** The last byte pushed (a CR before a line feed in the next piece makes a CRLF). */
  private lastByte = -1;

  push(piece: Buffer): void {
    let from = 0;
    while (from < piece.length) {
      const lf = piece.indexOf(0x0a, from);
      const end = lf < 0 ? piece.length : lf + 1;
      if (this.carryBytes < MAX_SCANNED_LINE)
        this.carry.push(piece.subarray(from, Math.min(end, from + MAX_SCANNED_LINE - this.carryBytes)));
      this.carryBytes += end - from;
      if (lf >= 0) {
        const before = lf > from ? piece[lf - 1] : this.carryBytes > 1 ? this.lastByte : -1;
        this.lastByte = 0x0a;
        from = end;
        this.line(before === 0x0d ? 2 : 1);
      } else {
        this.lastByte = piece[end - 1] as number;
        from = end;
      }
    }
  }

  end(): MimeEntity {
    if (this.carryBytes) this.line(0);
    return this.close(this.root, this.offset, this.lfs, this.offset === 0 ? undefined : this.lastByteIsLf);
  }

  private lastByteIsLf: boolean | undefined;

  /** One whole line (or the unterminated last one) of `carryBytes` bytes, ended by `terminator` bytes. */
  private line(terminator: number): void {
    const text = this.carry.length === 1 ? (this.carry[0] as Buffer) : Buffer.concat(this.carry);
    const length = this.carryBytes;
    const start = this.offset;
    const terminated = terminator > 0;
    this.carry = [];
    this.carryBytes = 0;
    const whole = length <= MAX_SCANNED_LINE;
    this.consume(this.root, text, start, length, terminator, whole);
    this.offset += length;
    if (terminated) this.lfs++;
    this.lastByteIsLf = terminated;
    this.previous = { start, content: length - terminator, terminator };
  }

  /** The line at `start` within `frame` (the entity it lies in, from the outermost down). */
  private consume(frame: Frame, text: Buffer, start: number, length: number, terminator: number, whole: boolean) {
    const body = frame.body;
    if (!body) {
      // The header ends at the first empty line (or at once, with an empty first line).
      if (length === terminator && terminator > 0) {
        this.startBody(frame, start, start + length);
        return;
      }
      if (frame.headerBytes < MAX_SCANNED_HEADER && whole) {
        frame.header.push(Buffer.from(text));
        frame.headerBytes += length;
      }
      return;
    }
    if (body.delimiter && !body.closed && whole && this.isDelimiter(text, body.delimiter, terminator)) {
      const closing = text.toString('latin1', body.delimiter.length, length - terminator).trim() === '--';
      if (body.child) {
        body.children.push(this.closeAtDelimiter(body.child, start));
        body.child = undefined;
      }
      if (closing) body.closed = true;
      else
        body.child = {
          headerStart: start + length,
          defaultType: body.subtype === 'digest' ? 'message/rfc822' : 'text/plain',
          depth: frame.depth + 1,
          header: [],
          headerBytes: 0,
        };
      return;
    }
    if (body.child) this.consume(body.child, text, start, length, terminator, whole);
  }

  private isDelimiter(text: Buffer, delimiter: Buffer, terminator: number): boolean {
    if (text.length < delimiter.length || text.compare(delimiter, 0, delimiter.length, 0, delimiter.length) !== 0)
      return false;
    const rest = text.toString('latin1', delimiter.length, text.length - terminator).trim();
    return rest === '' || rest === '--';
  }

  private startBody(frame: Frame, headerEnd: number, bodyStart: number) {
    const fields = headerFields(Buffer.concat(frame.header).toString('latin1'));
    frame.header = [];
    const ct = parseParams(fieldOf({ fields }, 'content-type') ?? frame.defaultType);
    let [type, subtype] = ct.value.toLowerCase().split('/') as [string, string | undefined];
    let params: (readonly [string, string])[] = ct.params;
    if (!type || !subtype || !/^[a-z0-9!#$&^_.+-]+$/.test(type + subtype)) {
      [type, subtype] = frame.defaultType.split('/') as [string, string];
      params = [];
    }
    if (type === 'text' && !params.some(([n]) => n === 'charset')) params = [...params, ['charset', 'us-ascii']];
    const lfBefore = this.lfs + 1;
    const base = {
      headerEnd,
      bodyStart,
      lfBefore,
      type,
      subtype: subtype as string,
      params,
      fields,
      closed: false,
      children: [],
    };
    if (frame.depth >= MAX_DEPTH) {
      frame.body = base;
      return;
    }
    const boundary = type === 'multipart' ? params.find(([n]) => n === 'boundary')?.[1] : undefined;
    const encoding = (fieldOf({ fields }, 'content-transfer-encoding') ?? '7bit').toLowerCase();
    frame.body = {
      ...base,
      ...(boundary ? { delimiter: Buffer.from(`--${boundary}`, 'latin1') } : {}),
      ...(type === 'message' && subtype === 'rfc822' && ['7bit', '8bit', 'binary'].includes(encoding)
        ? {
            child: {
              headerStart: bodyStart,
              defaultType: 'text/plain',
              depth: frame.depth + 1,
              header: [],
              headerBytes: 0,
            },
          }
        : {}),
    };
  }

  /** Ends `frame` before the delimiter line at `at`: the line break before it belongs to the delimiter. */
  private closeAtDelimiter(frame: Frame, at: number): MimeEntity {
    const prev = this.previous;
    if (!prev || prev.start < frame.headerStart || at === frame.headerStart)
      return this.close(frame, at, this.lfs, undefined);
    // The previous line lies in the entity: the entity ends before its line break.
    return this.close(
      frame,
      at - prev.terminator,
      this.lfs - (prev.terminator ? 1 : 0),
      prev.content === 0 ? true : false,
    );
  }

  /**
   * The entity of `frame`, ending at `end`, with `lfs` line feeds before `end`, `lastLf` whether
   * the byte before `end` is a line feed (undefined: `end` is where the entity starts, or unknown
   * because the source is empty).
   */
  private close(frame: Frame, end: number, lfs: number, lastLf: boolean | undefined): MimeEntity {
    if (!frame.body) {
      // No empty line: all of it is header.
      this.startBody(frame, end, end);
    }
    const body = frame.body as NonNullable<Frame['body']>;
    const bodyStart = Math.min(body.bodyStart, end);
    const children = [...body.children];
    let message: MimeEntity | undefined;
    // A delimiter on the last line of the entity opens no part (splitParts).
    if (body.child && (!body.delimiter || body.child.headerStart < end)) {
      const child = this.close(body.child, end, lfs, lastLf);
      if (body.delimiter) children.push(child);
      else message = child;
    }
    const lfsInBody = Math.max(0, lfs - body.lfBefore);
    const lines = end <= bodyStart ? 0 : lfsInBody + (lastLf === false ? 1 : 0);
    return {
      headerStart: frame.headerStart,
      bodyStart,
      bodyEnd: end,
      fields: body.fields,
      type: body.type,
      subtype: body.subtype,
      params: body.params,
      children,
      ...(message ? { message } : {}),
      lines,
    };
  }
}
