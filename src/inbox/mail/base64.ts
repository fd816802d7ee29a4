import type { TaskResult } from '../../platform/workers/tasks.js';
import { ownBuffer } from '../../platform/workers/tasks.js';
import { ByteBuffer, type BytesSink } from '../../platform/http/json-scanner.js';

const BASE64 = /^(?:[A-Za-z0-9+/]*|[A-Za-z0-9_-]*)={0,2}$/;

/**
 * The bytes of an attachment's base64 `content` (standard or URL-safe alphabet, padding optional,
 * whitespace ignored), or null when it is not valid base64.
 */
export function decodeBase64(content: string): Buffer | null {
  const b64 = content.replace(/\s+/g, '');
  const padded = b64.includes('=');
  if (!BASE64.test(b64) || b64.length % 4 === 1 || (padded && b64.length % 4 !== 0)) return null;
  return Buffer.from(b64, 'base64');
}

/** `decodeBase64` as a worker-thread task (inbox.tasks.ts): the bytes are moved back, not copied. */
export function decodeBase64Task(content: string): TaskResult {
  const bytes = decodeBase64(content);
  if (!bytes) return { value: null };
  // Buffer.from(…, 'base64') may hand out a slice of a shared pool: a whole buffer of its own moves.
  const own = ownBuffer(bytes) ? bytes : Buffer.from(bytes);
  return { value: own, transfer: [ownBuffer(own) as ArrayBuffer] };
}

/**
 * `decodeBase64` for a JSON string read in pieces (platform/http/json-scanner.ts): the same rules,
 * decoding whole groups of four as they arrive, into one buffer sized from `maxRawBytes`. At
 * anything it cannot decode on the way (a JSON escape such as a line break written `\n`, a
 * character outside the alphabet, the two alphabets mixed, more than two `=` or anything after
 * them, or a wrong length at the end) it gives up and hands the string back as JSON: what it
 * decoded so far encoded again (the same characters without their spaces), then the rest as sent.
 * That string is then parsed and checked as any other, so every answer stays `decodeBase64`'s.
 */
export function createBase64Sink(maxRawBytes: number | undefined): BytesSink {
  const decoded = new ByteBuffer(maxRawBytes === undefined ? 64 * 1024 : Math.ceil((maxRawBytes * 3) / 4) + 3);
  /** Characters of an unfinished group, then any padding (nothing is decoded after a `=`). */
  let carry = '';
  let urlSafe: boolean | undefined;
  /** Once it gave up: the string as JSON, from its opening quote. */
  let json: ByteBuffer | undefined;

  function giveUp(piece?: Buffer): void {
    const again = decoded.bytes().toString(urlSafe ? 'base64url' : 'base64') + carry;
    json = new ByteBuffer(Math.max(maxRawBytes ?? 0, again.length * 2) + 2);
    json.append(QUOTE);
    json.append(Buffer.from(again, 'latin1'));
    if (piece) json.append(piece);
  }

  return {
    write(piece) {
      if (json) {
        json.append(piece);
        return;
      }
      let chars = piece.toString('latin1');
      // Single characters are looked for with indexOf, which is many times faster than a
      // character class over 64 KiB; a character outside both alphabets is found by the decoder,
      // which skips it and so writes fewer bytes than the groups hold (below, and `end`).
      const standard = chars.includes('+') || chars.includes('/');
      const url = chars.includes('-') || chars.includes('_');
      if ((standard && (url || urlSafe === true)) || (url && urlSafe === false)) return giveUp(piece);
      if (chars.includes(' ')) chars = chars.replace(/ +/g, '');
      // The carried characters stay apart from the piece: `carry + chars` would be flattened, the
      // piece copied once more on the heap, by the first search in it (a third of the garbage this
      // sink made, decision 0050). Positions below count from the carried characters on.
      const length = carry.length + chars.length;
      const inPiece = chars.indexOf('=');
      const pad = carry.includes('=') ? carry.indexOf('=') : inPiece >= 0 ? carry.length + inPiece : -1;
      // Padding ends the content: at most two, and nothing after them (what follows the first `=`
      // is short here, so joining it copies little).
      if (
        pad >= 0 &&
        (length - pad > 2 || NOT_PAD.test(pad >= carry.length ? chars.slice(inPiece) : carry.slice(pad) + chars))
      )
        return giveUp(piece);
      const limit = pad >= 0 ? pad : length;
      const whole = limit - (limit % 4);
      if (whole) {
        const bytes = (whole / 4) * 3;
        const into = decoded.reserve(bytes);
        // The group the carried characters begin, then the piece's whole groups after it.
        const first = carry.length ? 4 - carry.length : 0;
        let written = first ? into.write(carry + chars.slice(0, first), decoded.size, 'base64') : 0;
        written += into.write(chars.slice(first, whole - carry.length), decoded.size + written, 'base64');
        if (written !== bytes) return giveUp(piece);
        decoded.size += bytes;
      }
      if (standard || url) urlSafe = url;
      carry = whole ? chars.slice(whole - carry.length) : carry + chars;
    },
    end() {
      if (!json) {
        const length = (decoded.size / 3) * 4 + carry.length;
        if (length % 4 === 1 || (carry.includes('=') && length % 4 !== 0) || !CARRY.test(carry)) giveUp();
      }
      if (json) {
        json.append(QUOTE);
        return { json: json.fitted() };
      }
      if (carry) decoded.size += decoded.reserve(3).write(carry, decoded.size, 'base64');
      return { bytes: decoded.fitted() };
    },
  };
}

const QUOTE = Buffer.from('"');
/** What may be left undecoded at the end: under a group of the alphabet, then up to two `=`. */
const CARRY = /^[A-Za-z0-9+/_-]{0,3}={0,2}$/;
const NOT_PAD = /[^=]/;
