import { AppError } from './errors/app-error.js';

/**
 * How deep the arrays and objects of a JSON request body may nest, in both services. No field of
 * either API nests more than a few levels; a body of thousands of levels (a few kilobytes of `[`)
 * would otherwise reach every recursive walk that follows the parse (validators, serializers, the
 * structured clone of a worker thread's answer) and overflow its stack, so it is refused where
 * the body is read, before it is parsed (docs/decisions/0036-hostile-input-at-its-depth.md).
 */
export const MAX_JSON_DEPTH = 64;

/** A body nested deeper than MAX_JSON_DEPTH: 400 in the service's error format. */
export class JsonTooDeepError extends AppError {
  constructor() {
    super('validation', jsonTooDeepMessage, { code: 'JSON_TOO_DEEP', details: { code: 'JSON_TOO_DEEP' } });
    // Spelled out: a worker thread's error reaches the caller by its name, whatever a bundler renames.
    this.name = 'JsonTooDeepError';
  }
}

export const jsonTooDeepMessage = `The JSON body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep.`;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Whether the JSON text nests arrays and objects more than `max` levels deep (brackets inside
 * strings do not count). One pass over the text, no allocation; strings are skipped with
 * `indexOf`, not a character at a time (a body is mostly strings). Meant for text that has yet
 * to be parsed, whether or not it is valid JSON.
 */
export function jsonDeeperThan(text: string, max: number = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // To the closing quote: the next one that no odd run of backslashes escapes.
      for (;;) {
        i = text.indexOf('"', i + 1);
        if (i < 0) return false;
        let before = i - 1;
        while (text.charCodeAt(before) === BACKSLASH) before--;
        if ((i - 1 - before) % 2 === 0) break;
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if ((c === 0x5d || c === 0x7d) && depth > 0) depth--;
  }
  return false;
}
