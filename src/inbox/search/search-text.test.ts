import { describe, expect, it } from 'vitest';
import { prng } from '../../../test/support/generated.js';
import { documentOf, MAX_WORD, messageDocument, words } from './search-text.js';

/** The words of a text computed on the whole of it at once: what the index held before pieces. */
function wholeWords(text: string): string[] {
  const found = text.toLowerCase().normalize('NFKD').replace(/\p{M}+/gu, '').match(/[\p{L}\p{N}]+/gu) ?? [];
  return found.map((w) => Array.from(w).slice(0, MAX_WORD).join(''));
}

// Letters and digits of several scripts, Greek capitals (final sigma), combining marks, compatibility
// forms (ligatures, full-width), astral letters (surrogate pairs), every kind of space, U+FEFF, punctuation.
const ALPHABET = ['a', 'Z', '7', 'ß', 'İ', 'Σ', 'Α', 'ς', '\u0301', '\u0308', 'ﬁ', 'Ａ', '①', '𝐀', '𠀀', '😀', 'é', 'e\u0301', ' ', '\n', '\t', '\u00a0', '\u2003', '\u3000', '\u2028', '\ufeff', "'", '-', '.', '<', '&'];

function generated(r: () => number, length: number): string {
  let text = '';
  while (text.length < length) {
    // Words of 1-40 characters between separators, so that some exceed MAX_WORD.
    const n = 1 + Math.floor(r() * 40);
    for (let i = 0; i < n; i++) text += ALPHABET[Math.floor(r() * ALPHABET.length)];
  }
  return text;
}

describe('search words', () => {
  it('reads a long text piece by piece to exactly the words of the whole text (2,000 generated texts, pieces of 1-64 units)', () => {
    const r = prng(20261124);
    for (let i = 0; i < 2000; i++) {
      const text = generated(r, Math.floor(r() * 600));
      const piece = 1 + Math.floor(r() * 64);
      expect([...words(text, piece)], JSON.stringify({ text, piece })).toEqual(wholeWords(text));
    }
  });

  it('keeps Greek final sigma, combining marks and surrogate pairs intact at piece ends', () => {
    const text = 'ΟΔΟΣ ΟΔΟΣ\u00a0Σ\u0301Σ 𝐀𝐁𝐂 e\u0301e\u0301 ΑΣ\ufeffΒ';
    for (let piece = 1; piece <= text.length; piece++) expect([...words(text, piece)]).toEqual(wholeWords(text));
    // Final sigma (ς) at a word's end only: before U+FEFF and a capital it stays σ, as U+FEFF is
    // case-ignorable; a piece cut at U+FEFF would have made it ς. (Mathematical capitals have no
    // lower case and decompose to Latin capitals after lower-casing: 'ABC', as in queries.)
    expect(wholeWords(text)).toEqual(['οδο\u03c2', 'οδο\u03c2', '\u03c3\u03c2', 'ABC', 'ee', 'α\u03c3', 'β']);
  });

  it('gives a 2 MiB body the document of the whole text', () => {
    const sentence = 'Die Rechnung für März liegt bei, Grüße aus Köln und ΟΔΟΣ ';
    const text = sentence.repeat(Math.ceil((2 * 1024 * 1024) / sentence.length));
    const message = { subject: 'Rechnung', from: 'a@b.example', to: [], cc: [], bcc: [], replyTo: [], text, html: null, attachments: [{ filename: 'März.pdf' }] };
    const doc = messageDocument(message);
    expect(doc.body).toEqual(documentOf({ subject: ['rechnung'], addresses: ['a', 'b', 'example'], body: [...wholeWords(text), 'marz', 'pdf'] }).body);
    expect(doc.body).toEqual(['die', 'rechnung', 'fur', 'marz', 'liegt', 'bei', 'gruße', 'aus', 'koln', 'und', 'οδος', 'pdf']);
  });
});
