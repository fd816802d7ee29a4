import { describe, expect, it } from 'vitest';
import { prng } from '../../../test/support/generated.js';
import { DOCUMENT_BUDGET, distinctBodyWords, documentOf, MAX_WORD, messageDocument, words } from './search-text.js';

/** The words of a text computed on the whole of it at once: what the index held before pieces. */
function wholeWords(text: string): string[] {
  const found =
    text
      .toLowerCase()
      .normalize('NFKD')
      .replace(/\p{M}+/gu, '')
      .match(/[\p{L}\p{N}]+/gu) ?? [];
  return found.map((w) => Array.from(w).slice(0, MAX_WORD).join(''));
}

// Letters and digits of several scripts, Greek capitals (final sigma), combining marks, compatibility
// forms (ligatures, full-width), astral letters (surrogate pairs), every kind of space, U+FEFF, punctuation.
const ALPHABET = [
  'a',
  'Z',
  '7',
  'ß',
  'İ',
  'Σ',
  'Α',
  'ς',
  '\u0301',
  '\u0308',
  'ﬁ',
  'Ａ',
  '①',
  '𝐀',
  '𠀀',
  '😀',
  'é',
  'e\u0301',
  ' ',
  '\n',
  '\t',
  '\u00a0',
  '\u2003',
  '\u3000',
  '\u2028',
  '\ufeff',
  "'",
  '-',
  '.',
  '<',
  '&',
];

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
    const message = {
      subject: 'Rechnung',
      from: 'a@b.example',
      to: [],
      cc: [],
      bcc: [],
      replyTo: [],
      text,
      html: null,
      attachments: [{ filename: 'März.pdf' }],
    };
    const doc = messageDocument(message);
    expect(doc.body).toEqual(
      documentOf({
        subject: ['rechnung'],
        addresses: ['a', 'b', 'example'],
        body: [...wholeWords(text), 'marz', 'pdf'],
      }).body,
    );
    expect(doc.body).toEqual([
      'die',
      'rechnung',
      'fur',
      'marz',
      'liegt',
      'bei',
      'gruße',
      'aus',
      'koln',
      'und',
      'οδος',
      'pdf',
    ]);
  });

  it('makes the same document from the distinct body words computed beforehand as from every word, past the budget too', async () => {
    const r = prng(20261125);
    const base = { from: 'Ann <ann@a.example>', to: ['bob@b.example'], cc: [], bcc: [], replyTo: [], html: null };
    // Bodies over the budget: many distinct words, some of them also in the subject or addresses.
    const many = Array.from({ length: 80_000 }, (_, i) => `w${i.toString(36)}`);
    const cases = [
      { subject: 'Hello', text: generated(r, 5000), attachments: [{ filename: 'a b.txt' }] },
      { subject: many.slice(40_000, 40_500).join(' '), text: many.join(' '), attachments: [] },
      {
        subject: 'ann bob',
        text: `${many.slice(0, 45_000).join(' ')} ann bob example ${many.slice(45_000).join(' ')}`,
        attachments: [{ filename: 'late.pdf' }],
      },
    ];
    for (let i = 0; i < 30; i++)
      cases.push({
        subject: generated(r, 40),
        text: generated(r, Math.floor(r() * 3000)),
        attachments: [{ filename: generated(r, 12) }],
      });
    for (const c of cases) {
      const m = { ...base, ...c };
      expect(messageDocument(m, await distinctBodyWords(m))).toEqual(messageDocument(m));
    }
    // The budget is reached in the long cases: the test covers where the two could part.
    const full = messageDocument({ ...base, ...(cases[1] as (typeof cases)[number]) });
    expect(full.body.length).toBeLessThan(many.length);
    expect(full.body.reduce((n, w) => n + Buffer.byteLength(w) + 8, 0)).toBeLessThanOrEqual(DOCUMENT_BUDGET);
  });
});
