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

import { JsonTooDeepError } from '../json-depth.js';

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

  /**
   * What was appended, in a buffer of about its size: the same buffer when little of it is unused,
   * else a copy (the reservation is then left to the collector). A value kept, moved to a worker
   * thread or cloned to one then carries no more than an eighth of unused bytes.
   */
  fitted(): Buffer {
    if (this.buffer.length - this.size <= Math.max(1024, this.size / 8)) return this.bytes();
    const exact = Buffer.allocUnsafeSlow(this.size);
    this.buffer.copy(exact, 0, 0, this.size);
    return exact;
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

/** Paths deeper than this name no sink: no place a sink is asked for lies deeper. */
const MAX_PATH_DEPTH = 8;
/** What an open level is: an array, or an object (expecting a key, or its value). */
const ARRAY = 1;
const EXPECT_KEY = 2;

/**
 * A large value's buffer is sized ahead from the most it can be, but never over this many times
 * its size when it became large (16 MiB for a string of 64 KiB): a body that declares more than it
 * sends, or holds many large strings, cannot make each reserve the rest of the body. Past that the
 * buffer doubles, and at the string's end it is fitted (`ByteBuffer.fitted`).
 */
const AHEAD_FACTOR = 256;

export class JsonBodyScanner {
  /** The body without its large strings' bytes: keys and small values are read straight into it. */
  private readonly skeleton = new ByteBuffer(64 * 1024);
  /**
   * The open objects and arrays, one byte each (ARRAY, EXPECT_KEY), so that a body nested a
   * million deep costs a megabyte; keys and indexes only for the first MAX_PATH_DEPTH levels.
   */
  private kinds = new Uint8Array(256);
  private depth = 0;
  private readonly keys: (string | undefined)[] = [];
  private readonly indexes: number[] = [];
  /** Inside a string: whether it is a key. */
  private inKey = false;
  private inString = false;
  /** The open string: where its bytes start in the skeleton and in the body, and its raw size so far. */
  private stringAt = 0;
  private stringStart = 0;
  private stringSize = 0;
  /** A large value's raw bytes from its opening quote on, or its sink. */
  private largeBytes: ByteBuffer | undefined;
  private sink: BytesSink | undefined;
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
      /** Arrays and objects nested deeper than this fail `write` with a JsonTooDeepError (no limit when absent). */
      readonly maxDepth?: number;
    },
  ) {}

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
      if (this.inString) {
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
      this.skeleton.append(chunk.subarray(i, stop));
      if (quote < 0) return;
      this.openString(this.offset + stop);
      i = stop;
    }
  }

  /**
   * The skeleton: the body with every large string's bytes replaced by its token. (A string left
   * open stays open in it, so that parsing it fails as parsing the body would.)
   */
  end(): Buffer {
    return this.skeleton.bytes();
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
    const top = this.depth - 1;
    switch (byte) {
      case 0x7b: // {
        this.push(EXPECT_KEY);
        break;
      case 0x5b: // [
        this.push(ARRAY);
        break;
      case 0x7d: // }
      case 0x5d: // ]
        if (this.depth > 0) this.depth--;
        break;
      case 0x2c: // ,
        if (top < 0) break;
        if (this.kinds[top] === ARRAY) {
          if (top < MAX_PATH_DEPTH) this.indexes[top] = (this.indexes[top] ?? 0) + 1;
        } else this.kinds[top] = EXPECT_KEY;
        break;
      case 0x3a: // :
        if (top >= 0 && this.kinds[top] === EXPECT_KEY) this.kinds[top] = 0;
        break;
    }
  }

  private push(kind: number): void {
    if (this.options.maxDepth !== undefined && this.depth >= this.options.maxDepth) throw new JsonTooDeepError();
    if (this.depth === this.kinds.length) {
      const grown = new Uint8Array(this.kinds.length * 2);
      grown.set(this.kinds);
      this.kinds = grown;
    }
    if (this.depth < MAX_PATH_DEPTH) {
      this.keys[this.depth] = undefined;
      this.indexes[this.depth] = 0;
    }
    this.kinds[this.depth++] = kind;
  }

  private openString(start: number): void {
    this.inString = true;
    this.inKey = this.depth > 0 && this.kinds[this.depth - 1] === EXPECT_KEY;
    this.stringAt = this.skeleton.size;
    this.stringStart = start;
    this.stringSize = 0;
    this.backslashes = 0;
  }

  /** Where the open value sits, or undefined when deeper than any sink's place. */
  private path(): JsonPath | undefined {
    if (this.depth > MAX_PATH_DEPTH) return undefined;
    const path: (string | number)[] = [];
    for (let level = 0; level < this.depth; level++)
      path.push(this.kinds[level] === ARRAY ? (this.indexes[level] ?? 0) : (this.keys[level] ?? ''));
    return path;
  }

  private take(bytes: Buffer): void {
    if (!bytes.length) return;
    this.stringSize += bytes.length;
    if (this.sink) return this.sink.write(bytes);
    if (this.largeBytes) return this.largeBytes.append(bytes);
    this.skeleton.append(bytes);
    if (this.inKey || this.stringSize < this.options.largeBytes) return;
    // Large: its bytes so far move out of the skeleton.
    const { bodyBytes } = this.options;
    const most = bodyBytes === undefined ? undefined : Math.max(bodyBytes - this.stringStart, this.stringSize);
    const sofar = this.skeleton.bytes().subarray(this.stringAt);
    const path = this.path();
    const sink =
      path &&
      this.options.bytesAt?.(path, most === undefined ? undefined : Math.min(most, this.stringSize * AHEAD_FACTOR));
    if (sink) {
      sink.write(sofar);
      this.sink = sink;
    } else {
      // With room for the quotes around it: the string is parsed as a JSON string of its own.
      this.largeBytes = new ByteBuffer(Math.min(most ?? this.stringSize * 2, this.stringSize * AHEAD_FACTOR) + 2);
      this.largeBytes.append(QUOTE_BYTE);
      this.largeBytes.append(sofar);
    }
    this.skeleton.size = this.stringAt;
  }

  private closeString(): void {
    this.inString = false;
    if (this.inKey) {
      if (this.depth <= MAX_PATH_DEPTH)
        this.keys[this.depth - 1] =
          this.stringSize <= MAX_KEY_BYTES ? keyOf(this.skeleton.bytes().subarray(this.stringAt)) : undefined;
      this.skeleton.append(QUOTE_BYTE);
      return;
    }
    if (!this.sink && !this.largeBytes) {
      this.skeleton.append(QUOTE_BYTE);
      return;
    }
    const token = `${this.options.tokenPrefix}${this.large.length}`;
    let result: SinkResult;
    if (this.sink) result = this.sink.end();
    else {
      const bytes = this.largeBytes as ByteBuffer;
      bytes.append(QUOTE_BYTE);
      result = { json: bytes.fitted() };
    }
    this.sink = undefined;
    this.largeBytes = undefined;
    this.large.push({ token, result });
    this.skeleton.append(Buffer.from(`${token}"`));
  }
}

const QUOTE_BYTE = Buffer.from('"');

/** A key's name: its raw bytes as JSON reads them (an escape in a key is rare, a parse settles it). */
function keyOf(raw: Buffer): string | undefined {
  if (!raw.includes(BACKSLASH)) return raw.toString('utf8');
  try {
    return JSON.parse(`"${raw.toString('utf8')}"`) as string;
  } catch {
    return undefined;
  }
}
