import type { Message } from '../core/message.js';
import { flagsOf } from '../core/folders.js';
import {
  type MimeEntity,
  entityAt,
  envelopeAddresses,
  fieldOf,
  headerFields,
  lineCount,
  parseEntity,
  parseParams,
} from '../mail/mime-structure.js';

/**
 * FETCH data items (RFC 3501 §6.4.5, §7.4.2) built from a stored message and its source: the
 * values imap.server.ts hands to the compiler. No I/O.
 */

/** A node of imapflow's compiler: atoms, strings, literals, numbers, NIL and lists. */
export type Node =
  string | number | null | Buffer | { type: string; value?: unknown; section?: Node[]; partial?: number[] } | Node[];

const atom = (value: string) => ({ type: 'ATOM', value });
const literal = (value: Buffer) => ({ type: 'LITERAL', value });

/** A string as the protocol may carry it: quoted when it can be, a literal otherwise. */
export function str(value: string | null | undefined): Node {
  if (value === null || value === undefined) return null;
  if (/[\r\n\0\u0080-\uffff]/.test(value)) return literal(Buffer.from(value));
  return { type: 'STRING', value };
}

/** INTERNALDATE: `dd-Mon-yyyy hh:mm:ss +0000`. */
export function internalDate(iso: string): string {
  const d = new Date(iso);
  const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  const p = (n: number) => String(n).padStart(2, '0');
  return `${p(d.getUTCDate())}-${months[d.getUTCMonth()]}-${d.getUTCFullYear()} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`;
}

function addresses(value: string | undefined): Node {
  const list = envelopeAddresses(value);
  return list ? list.map((a) => a.map((v) => str(v))) : null;
}

/** ENVELOPE from the header fields of a message entity. */
export function envelope(entity: Pick<MimeEntity, 'fields'>): Node[] {
  const f = (name: string) => fieldOf(entity, name);
  const from = f('from');
  return [
    str(f('date')),
    str(f('subject')),
    addresses(from),
    addresses(f('sender') ?? from),
    addresses(f('reply-to') ?? from),
    addresses(f('to')),
    addresses(f('cc')),
    addresses(f('bcc')),
    str(f('in-reply-to')),
    str(f('message-id')),
  ];
}

function paramList(params: readonly (readonly [string, string])[]): Node {
  return params.length ? params.flatMap(([k, v]) => [str(k), str(v)]) : null;
}

/** BODYSTRUCTURE (with extension data) or BODY (without) of an entity. */
export function bodyStructure(source: Buffer, e: MimeEntity, extended: boolean): Node[] {
  const disposition = () => {
    const d = fieldOf(e, 'content-disposition');
    if (!d) return null;
    const parsed = parseParams(d);
    return [str(parsed.value), paramList(parsed.params)];
  };
  const language = () => str(fieldOf(e, 'content-language') ?? null);
  const location = () => str(fieldOf(e, 'content-location') ?? null);
  if (e.type === 'multipart') {
    const children: Node[] = e.children.map((c) => bodyStructure(source, c, extended));
    // A multipart without parts is written as an empty text part, which every client can parse.
    if (!children.length) children.push(['TEXT', 'PLAIN', ['CHARSET', 'US-ASCII'], null, null, '7BIT', 0, 0]);
    const out: Node[] = [...children, str(e.subtype.toUpperCase())];
    if (extended) out.push(paramList(e.params), disposition(), language(), location());
    return out;
  }
  const size = e.bodyEnd - e.bodyStart;
  const out: Node[] = [
    str(e.type.toUpperCase()),
    str(e.subtype.toUpperCase()),
    paramList(e.params.map(([k, v]) => [k.toUpperCase(), v] as const)),
    str(fieldOf(e, 'content-id') ?? null),
    str(fieldOf(e, 'content-description') ?? null),
    str((fieldOf(e, 'content-transfer-encoding') ?? '7BIT').toUpperCase()),
    size,
  ];
  if (e.message)
    out.push(
      envelope(e.message),
      bodyStructure(source, e.message, extended),
      e.lines ?? lineCount(source, e.bodyStart, e.bodyEnd),
    );
  else if (e.type === 'text') out.push(e.lines ?? lineCount(source, e.bodyStart, e.bodyEnd));
  if (extended) out.push(str(fieldOf(e, 'content-md5') ?? null), disposition(), language(), location());
  return out;
}

/** A parsed `BODY[section]<partial>` request. */
export interface SectionRequest {
  readonly parts: number[];
  /** '' (all of it), HEADER, TEXT, MIME, HEADER.FIELDS, HEADER.FIELDS.NOT */
  readonly kind: string;
  readonly fields: string[];
  /** The section as the response names it, e.g. `1.HEADER.FIELDS (SUBJECT)`. */
  readonly name: Node[];
}

/** Reads the section of a BODY[...] item; undefined for one that is not valid. */
export function parseSection(section: readonly unknown[]): SectionRequest | undefined {
  const first = section[0] as { value?: unknown } | undefined;
  if (!first) return { parts: [], kind: '', fields: [], name: [] };
  const spec = String(first.value ?? '').toUpperCase();
  const tokens = spec.split('.');
  const parts: number[] = [];
  while (tokens.length && /^[1-9]\d{0,8}$/.test(tokens[0] as string)) parts.push(Number(tokens.shift()));
  const kind = tokens.join('.');
  if (!['', 'HEADER', 'TEXT', 'MIME', 'HEADER.FIELDS', 'HEADER.FIELDS.NOT'].includes(kind)) return undefined;
  if (!parts.length && !kind) return undefined;
  if (kind === 'MIME' && !parts.length) return undefined;
  let fields: string[] = [];
  if (kind.startsWith('HEADER.FIELDS')) {
    const list = section[1];
    if (!Array.isArray(list) || !list.length) return undefined;
    fields = list.map((f: { value?: unknown }) => String(f?.value ?? '').toUpperCase());
    if (fields.some((f) => !f)) return undefined;
    return { parts, kind, fields, name: [atom(spec), fields.map((f) => atom(f))] };
  }
  if (section.length > 1) return undefined;
  return { parts, kind, fields, name: [atom(spec)] };
}

/** The bytes a section names in `source` (empty when the part does not exist, as servers answer). */
export function sectionBytes(source: Buffer, root: MimeEntity, request: SectionRequest): Buffer {
  const entity = entityAt(root, request.parts);
  if (!entity) return Buffer.alloc(0);
  // HEADER and TEXT of a part address the message a message/rfc822 part holds.
  const message = request.parts.length ? entity.message : root;
  switch (request.kind) {
    case '':
      return request.parts.length ? source.subarray(entity.bodyStart, entity.bodyEnd) : source;
    case 'MIME':
      return source.subarray(entity.headerStart, entity.bodyStart);
    case 'TEXT':
      return message ? source.subarray(message.bodyStart, message.bodyEnd) : Buffer.alloc(0);
    case 'HEADER':
      return message ? source.subarray(message.headerStart, message.bodyStart) : Buffer.alloc(0);
    default: {
      if (!message) return Buffer.alloc(0);
      const not = request.kind === 'HEADER.FIELDS.NOT';
      const text = source.toString('latin1', message.headerStart, message.bodyStart);
      // Whole fields with their folded lines, as written.
      const kept: string[] = [];
      let keep = false;
      for (const line of text.split(/(?<=\n)/)) {
        if (line === '\r\n' || line === '\n') break;
        if (!/^[ \t]/.test(line)) {
          const name = line
            .slice(0, Math.max(0, line.indexOf(':')))
            .trim()
            .toUpperCase();
          keep = name !== '' && request.fields.includes(name) !== not;
        }
        if (keep) kept.push(line.endsWith('\n') && !line.endsWith('\r\n') ? `${line.slice(0, -1)}\r\n` : line);
      }
      return Buffer.from(`${kept.join('')}\r\n`, 'latin1');
    }
  }
}

export { parseEntity, headerFields };

/** The FLAGS of a message, with the session's \Deleted. */
/** The flags of a message: its labels', `\Draft` for a draft (IMAP's Drafts), `\Deleted` when the session marked it. */
export function flagList(
  message: Pick<Message, 'labels'> | { labels: readonly string[] },
  deleted: boolean,
  draft = false,
): Node[] {
  return [...flagsOf(message.labels), ...(draft ? ['\\Draft'] : []), ...(deleted ? ['\\Deleted'] : [])].map((f) =>
    atom(f),
  );
}

/** A character outside ATOM-CHAR (RFC 3501 §9): such an atom is written as a quoted string. */
const NOT_ATOM = /[^\x21-\x7e]|[(){%*"\\\]]/;
const NOT_QUOTABLE = /[\r\n\0]/;

function quote(value: string): string {
  if (NOT_QUOTABLE.test(value)) throw new Error('Unquotable character in IMAP string value');
  return `"${value.replace(/["\\]/g, (c) => `\\${c}`)}"`;
}

const safeNumber = (value: unknown) => {
  const n = Math.round(Number(value));
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
};

/**
 * A response line as imapflow's compiler writes it (`tag command attributes…`, byte for byte: the
 * same spacing, quoting and literals; imap-fetch.test.ts compares the two), for the
 * node kinds FETCH, STATUS and ID answers hold, in one pass over one string: the compiler makes a
 * Buffer of every token, which was a third of the CPU of a header sync. Literals stay the Buffers
 * they are; the text between them becomes one Buffer each.
 */
export function compileResponse(tag: string, command: string, attributes: readonly Node[]): Buffer {
  const parts: Buffer[] = [];
  let text = command ? `${tag} ${command}` : tag;
  const walk = (node: Node, first: boolean, subArray: boolean) => {
    if (!first && !subArray) text += ' ';
    if (Array.isArray(node)) {
      text += '(';
      let sub = node.length > 1 && Array.isArray(node[0]);
      node.forEach((child, i) => {
        if (sub && !Array.isArray(child)) sub = false;
        walk(child, i === 0, sub);
      });
      text += ')';
      return;
    }
    if (node === null || node === undefined || (node as unknown) === false || (node as unknown) === '') {
      // imapflow writes NIL for every falsy value but 0 and ''; '' is a quoted empty string.
      text += node === '' ? '""' : 'NIL';
      return;
    }
    if (typeof node === 'number') {
      text += String(safeNumber(node));
      return;
    }
    if (typeof node === 'string' || Buffer.isBuffer(node)) {
      text += quote(node.toString());
      return;
    }
    switch (node.type.toUpperCase()) {
      case 'LITERAL': {
        const value = node.value as Buffer | string | null | undefined;
        const bytes = !value ? Buffer.alloc(0) : Buffer.isBuffer(value) ? value : Buffer.from(String(value));
        text += `{${bytes.length}}\r\n`;
        parts.push(Buffer.from(text));
        if (bytes.length) parts.push(bytes);
        text = '';
        return;
      }
      case 'STRING':
        text += quote(String(node.value ?? ''));
        return;
      case 'NUMBER':
        text += String(safeNumber(node.value));
        return;
      case 'ATOM':
      case 'SECTION': {
        const value = String(node.value ?? '');
        if (!node.section || value) {
          const bare = value.charAt(0) === '\\' ? value.slice(1) : value;
          text += node.value === '' || NOT_ATOM.test(bare) ? quote(value) : value;
        }
        if (node.section) {
          text += '[';
          node.section.forEach((child, i) => walk(child, i === 0, false));
          text += ']';
        }
        if (node.partial) text += `<${node.partial.map(safeNumber).join('.')}>`;
        return;
      }
      default:
        throw new Error(`No IMAP node of type ${node.type}`);
    }
  };
  attributes.forEach((a) => walk(a, false, false));
  if (text || !parts.length) parts.push(Buffer.from(text));
  return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
}
