/**
 * A JSON body read as the socket delivers it, without ever holding it whole
 * (docs/decisions/0029-large-json-bodies-read-in-pieces.md). The scanner follows only the body's
 * structure (objects, arrays, keys, where strings begin and end) and leaves every rule of JSON to
 * `JSON.parse`:
 *
 * - every string value of `largeBytes` or more of raw JSON is cut out of the body: its raw bytes
 *   (escapes as sent) are kept in pieces, or given to a `BytesSink` when `bytesAt` names its
 *   place (an attachment's base64, decoded as it arrives), and a placeholder token stands in its
 *   place;
 * - everything else, the skeleton, is kept as it came and parsed as JSON at the end; the caller
 *   then puts the large values back where their tokens ended up (`restoreLarge`).
 *
 * Strings are found with `Buffer.indexOf`, not a byte at a time, so that a body of megabytes costs
 * the event loop little more than the copies it already makes.
 */

/** Where a value sits in the body: the keys and array indexes leading to it. */
export type JsonPath = readonly (string | number)[];

/**
 * What became of a large string: the bytes a `BytesSink` decoded, or the string as JSON of its own
 * (its raw bytes between quotes) to be parsed.
 */
export type SinkResult = { readonly bytes: Buffer } | { readonly json: Buffer };

/**
 * Takes a string's raw JSON bytes piece by piece (escapes as sent) and decodes them as they come.
 * Whatever it cannot decode on the way (an escape, a character it does not expect) it hands back
 * as JSON at the end, so that the string is parsed and checked as any other.
 */
export interface BytesSink {
  write(raw: Buffer): void;
  end(): SinkResult;
}

/**
 * A sink for the large string at `path`, or undefined to keep its raw bytes. `maxRawBytes`: the
 * most the string can still be (the body's declared length less what came before it), or
 * undefined when the body's length is not known.
 */
export type BytesAt = (path: JsonPath, maxRawBytes: number | undefined) => BytesSink | undefined;

/**
 * Bytes appended into one buffer, sized ahead from the most they can be when that is known (its
 * pages become resident only as they are written, so an estimate too large costs nothing), or
 * grown by doubling when it is not. One buffer instead of pieces joined at the end: joining
 * megabytes is one long copy on the event loop, and a second copy in memory. Never a slice of
 * Node's shared pool, so that its ArrayBuffer can be moved to a worker thread.
 */
export class ByteBuffer {
  private buffer: Buffer;
  size = 0;

  constructor(capacity: number) {
    this.buffer = Buffer.allocUnsafeSlow(Math.max(capacity, 1024));
  }

  /** Room for `n` more bytes at `size` (grown if needed). */
  reserve(n: number): Buffer {
    if (this.size + n > this.buffer.length) {
      const grown = Buffer.allocUnsafeSlow(Math.max(this.buffer.length * 2, this.size + n));
      this.buffer.copy(grown, 0, 0, this.size);
      this.buffer = grown;
    }
    return this.buffer;
  }

  append(bytes: Buffer): void {
    bytes.copy(this.reserve(bytes.length), this.size);
    this.size += bytes.length;
  }

  /** What was appended (a view: no copy). */
  bytes(): Buffer {
    return this.buffer.subarray(0, this.size);
  }
}

/** A large string value cut out of the body. */
export interface LargeValue {
  /** The placeholder standing in its place in the skeleton. */
  readonly token: string;
  readonly result: SinkResult;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** Keys longer than this are kept whole in the skeleton but not remembered: no path names one. */
const MAX_KEY_BYTES = 256;

interface Frame {
  readonly array: boolean;
  /** Objects: whether the next string is a key. */
  expectKey: boolean;
  /** Objects: the key of the value being read (undefined before the first or for a long key). */
  key: string | undefined;
  /** Arrays: the index of the value being read. */
  index: number;
}

/** The string being read: a key (kept in the skeleton) or a value (kept aside until its size is known). */
interface OpenString {
  readonly key: boolean;
  /** Raw bytes read so far, copied (a socket's buffer may be reused once handed over). */
  pieces: Buffer[];
  size: number;
  /** Where the string starts in the body (after its quote). */
  readonly start: number;
  /** A large value's raw bytes, from the opening quote on. */
  bytes: ByteBuffer | undefined;
  /** Set once the value reached `largeBytes` and its place names a sink. */
  sink: BytesSink | undefined;
  /** Whether it is a large value (cut out of the skeleton). */
  large: boolean;
  readonly path: JsonPath;
}

export class JsonBodyScanner {
  private readonly skeleton: Buffer[] = [];
  private skeletonSize = 0;
  private readonly stack: Frame[] = [];
  private open: OpenString | undefined;
  /** Backslashes that ended the previous piece of the open string (an odd count escapes what follows). */
  private backslashes = 0;
  /** Bytes of the body before the piece being read. */
  private offset = 0;
  readonly large: LargeValue[] = [];

  constructor(
    private readonly options: {
      /** Raw size from which a string value is cut out. */
      readonly largeBytes: number;
      readonly bytesAt?: BytesAt;
      /** The body's declared length (Content-Length), if known: sizes what large values are read into. */
      readonly bodyBytes?: number;
      /** Prefix of the placeholder tokens: unguessable, so that no sent string can pass for one. */
      readonly tokenPrefix: string;
    },
  ) {}

  /** The skeleton's size so far, bytes. */
  get size(): number {
    return this.skeletonSize;
  }

  write(chunk: Buffer): void {
    try {
      this.read(chunk);
    } finally {
      this.offset += chunk.length;
    }
  }

  private read(chunk: Buffer): void {
    let i = 0;
    while (i < chunk.length) {
      if (this.open) {
        const end = this.closingQuote(chunk, i);
        this.take(chunk.subarray(i, end < 0 ? chunk.length : end));
        if (end < 0) return;
        this.closeString();
        i = end + 1;
        continue;
      }
      const quote = chunk.indexOf(QUOTE, i);
      const stop = quote < 0 ? chunk.length : quote + 1;
      for (let j = i; j < stop - (quote < 0 ? 0 : 1); j++) this.structure(chunk[j] as number);
      this.keep(chunk.subarray(i, stop));
      if (quote < 0) return;
      this.openString(this.offset + stop);
      i = stop;
    }
  }

  /** The skeleton: the body with every large string's bytes replaced by its token. */
  end(): Buffer {
    // An unterminated string: keep what there is, so that parsing the skeleton fails as the body would.
    if (this.open) {
      for (const piece of this.open.pieces) this.keep(piece);
      if (this.open.bytes) this.keep(this.open.bytes.bytes().subarray(1));
      this.open = undefined;
    }
    return Buffer.concat(this.skeleton, this.skeletonSize);
  }

  private keep(bytes: Buffer): void {
    if (!bytes.length) return;
    this.skeleton.push(Buffer.from(bytes));
    this.skeletonSize += bytes.length;
  }

  /** The index of the quote that ends the open string in `chunk` from `from` on, or -1. */
  private closingQuote(chunk: Buffer, from: number): number {
    let start = from;
    for (;;) {
      const quote = chunk.indexOf(QUOTE, start);
      const stop = quote < 0 ? chunk.length : quote;
      // Backslashes right before the quote (or the piece's end), with those that ended the last piece.
      let run = 0;
      let j = stop - 1;
      while (j >= start && chunk[j] === BACKSLASH) {
        run++;
        j--;
      }
      if (j < start) run += this.backslashes;
      if (quote < 0) {
        this.backslashes = run;
        return -1;
      }
      this.backslashes = 0;
      if (run % 2 === 0) return quote;
      // An escaped quote: part of the string.
      start = quote + 1;
      if (start >= chunk.length) return -1;
    }
  }

  /** Outside strings: follows objects, arrays, keys and indexes. */
  private structure(byte: number): void {
    const top = this.stack[this.stack.length - 1];
    switch (byte) {
      case 0x7b: // {
        this.stack.push({ array: false, expectKey: true, key: undefined, index: 0 });
        break;
      case 0x5b: // [
        this.stack.push({ array: true, expectKey: false, key: undefined, index: 0 });
        break;
      case 0x7d: // }
      case 0x5d: // ]
        this.stack.pop();
        break;
      case 0x2c: // ,
        if (top?.array) top.index++;
        else if (top) top.expectKey = true;
        break;
      case 0x3a: // :
        if (top && !top.array) top.expectKey = false;
        break;
    }
  }

  private openString(start: number): void {
    const top = this.stack[this.stack.length - 1];
    const key = top !== undefined && !top.array && top.expectKey;
    const path = key ? [] : this.stack.map((f) => (f.array ? f.index : (f.key ?? '')));
    this.open = { key, pieces: [], size: 0, sink: undefined, large: false, path, start, bytes: undefined };
    this.backslashes = 0;
  }

  private take(bytes: Buffer): void {
    const open = this.open as OpenString;
    if (!bytes.length) return;
    if (open.key) {
      this.keep(bytes);
      if (open.size <= MAX_KEY_BYTES) open.pieces.push(Buffer.from(bytes));
      open.size += bytes.length;
      return;
    }
    open.size += bytes.length;
    if (open.sink) {
      open.sink.write(bytes);
      return;
    }
    if (open.bytes) {
      open.bytes.append(bytes);
      return;
    }
    open.pieces.push(Buffer.from(bytes));
    if (open.size < this.options.largeBytes) return;
    open.large = true;
    const { bodyBytes } = this.options;
    const most = bodyBytes === undefined ? undefined : Math.max(bodyBytes - open.start, open.size);
    const sink = this.options.bytesAt?.(open.path, most);
    if (sink) {
      for (const piece of open.pieces) sink.write(piece);
      open.sink = sink;
    } else {
      // With room for the quotes around it: the string is parsed as a JSON string of its own.
      open.bytes = new ByteBuffer((most ?? open.size * 2) + 2);
      open.bytes.append(QUOTE_BYTE);
      for (const piece of open.pieces) open.bytes.append(piece);
    }
    open.pieces = [];
  }

  private closeString(): void {
    const open = this.open as OpenString;
    this.open = undefined;
    if (open.key) {
      const top = this.stack[this.stack.length - 1] as Frame;
      top.key = open.size <= MAX_KEY_BYTES ? keyOf(Buffer.concat(open.pieces)) : undefined;
      this.keep(CLOSE);
      return;
    }
    if (!open.large) {
      for (const piece of open.pieces) this.keep(piece);
      this.keep(CLOSE);
      return;
    }
    const token = `${this.options.tokenPrefix}${this.large.length}`;
    let result: SinkResult;
    if (open.sink) result = open.sink.end();
    else {
      const bytes = open.bytes as ByteBuffer;
      bytes.append(QUOTE_BYTE);
      result = { json: bytes.bytes() };
    }
    this.large.push({ token, result });
    this.keep(Buffer.from(`${token}"`));
  }
}

const CLOSE = Buffer.from('"');
const QUOTE_BYTE = CLOSE;

/** A key's name: its raw bytes as JSON reads them (an escape in a key is rare, a parse settles it). */
function keyOf(raw: Buffer): string | undefined {
  if (!raw.includes(BACKSLASH)) return raw.toString('utf8');
  try {
    return JSON.parse(`"${raw.toString('utf8')}"`) as string;
  } catch {
    return undefined;
  }
}
