import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MimeScanner, lineCount, parseEntity, type MimeEntity } from './mime-structure.js';

/**
 * MimeScanner (BODYSTRUCTURE of a source read in pieces) against parseEntity (the whole source):
 * the same entities, offsets and fields, and each body's line count as lineCount gives it, for
 * every fixture of the inbound corpus and the edge cases of real mail, whatever the pieces.
 */

const corpus = new URL('../../../test/fixtures/eml/', import.meta.url);

const edgeCases: Record<string, string> = {
  empty: '',
  'no header end': 'Subject: x\r\nFrom: a@b',
  'empty first line': '\r\nbody only\r\n',
  'lf only':
    'Content-Type: multipart/mixed; boundary=zz\n\n--zz\nContent-Type: text/plain\n\none\ntwo\n--zz\n\nbare\n--zz--\nepilogue\n',
  'no closing delimiter':
    'Content-Type: multipart/alternative; boundary="b"\r\n\r\npreamble\r\n--b\r\n\r\nfirst\r\n--b\r\nContent-Type: text/html\r\n\r\n<p>x</p>',
  'delimiter on the last line': 'Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n\r\nx\r\n--b\r\n',
  'empty parts and trailing blank lines':
    'Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n--b\r\n\r\n\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nend\r\n\r\n--b--\r\n',
  'nested with outer delimiter inside inner part':
    'Content-Type: multipart/mixed; boundary=outer\r\n\r\n--outer\r\nContent-Type: multipart/alternative; boundary=inner\r\n\r\n--inner\r\n\r\na\r\n--outer\r\n\r\nb\r\n--outer--\r\n',
  'message/rfc822 in a part':
    'Content-Type: multipart/mixed; boundary=m\r\n\r\n--m\r\nContent-Type: message/rfc822\r\n\r\nSubject: inner\r\nContent-Type: multipart/alternative; boundary=i\r\n\r\n--i\r\n\r\ninner text\r\n--i--\r\n\r\n--m--\r\n',
  digest: 'Content-Type: multipart/digest; boundary=d\r\n\r\n--d\r\n\r\nSubject: one\r\n\r\nbody one\r\n--d--\r\n',
  'delimiter with trailing space and junk':
    'Content-Type: multipart/mixed; boundary=b\r\n\r\n--b   \r\n\r\none\r\n--bx\r\nstill one\r\n--b-- \r\n',
  'cr at a piece end': 'Subject: cr\r\n\r\nline\r\r\nnext\r\n',
};

function sources(): [string, Buffer][] {
  const files = readdirSync(corpus).filter((f) => f.endsWith('.eml'));
  return [
    ...files.map((f) => [f, readFileSync(new URL(f, corpus))] as [string, Buffer]),
    ...Object.entries(edgeCases).map(([name, text]) => [name, Buffer.from(text, 'latin1')] as [string, Buffer]),
  ];
}

function scan(source: Buffer, size: number): MimeEntity {
  const scanner = new MimeScanner();
  for (let i = 0; i < source.length; i += size) scanner.push(source.subarray(i, i + size));
  return scanner.end();
}

/** parseEntity's tree with every body's line count, as the scanner gives it. */
function withLines(source: Buffer, e: MimeEntity): MimeEntity {
  return {
    ...e,
    children: e.children.map((c) => withLines(source, c)),
    ...(e.message ? { message: withLines(source, e.message) } : {}),
    lines: lineCount(source, e.bodyStart, e.bodyEnd),
  };
}

describe('MimeScanner', () => {
  for (const [name, source] of sources())
    it(`gives parseEntity's structure for ${name}, in pieces of any size`, () => {
      const expected = withLines(source, parseEntity(source));
      for (const size of [1, 2, 3, 7, 64, 1000, Math.max(1, source.length)])
        expect(scan(source, size), `${name} in pieces of ${size}`).toEqual(expected);
    });
});
