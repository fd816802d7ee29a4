import { describe, expect, it } from 'vitest';
import { receivedBytes, restoreLarge } from '../../src/platform/http/json-body.js';
import { JsonBodyScanner, type BytesAt, type JsonPath } from '../../src/platform/http/json-scanner.js';
import { createBase64Sink, decodeBase64 } from '../../src/inbox/mail/base64.js';

// The scanner against JSON.parse itself: every body below, cut into pieces of many sizes (so that
// quotes, backslash runs, escapes, multi-byte characters and base64 groups fall on every edge),
// must come back as JSON.parse reads it whole; decoded attachments must be decodeBase64's bytes.

const PREFIX = '\u{f8ff}test-token:';
const LARGE = 24;

const attachmentAt: BytesAt = (path: JsonPath, most) =>
  path.length === 3 && path[0] === 'attachments' && typeof path[1] === 'number' && path[2] === 'content'
    ? createBase64Sink(most)
    : undefined;

function scan(body: Buffer, pieceSize: number, bytesAt = attachmentAt, declared = true): unknown {
  const scanner = new JsonBodyScanner({
    largeBytes: LARGE,
    tokenPrefix: PREFIX,
    bytesAt,
    ...(declared ? { bodyBytes: body.length } : {}),
  });
  for (let i = 0; i < body.length; i += pieceSize) scanner.write(body.subarray(i, i + pieceSize));
  const skeleton = scanner.end();
  const parsed: unknown = JSON.parse(skeleton.toString('utf8'));
  const values = scanner.large.map((v) =>
    'bytes' in v.result ? v.result.bytes : (JSON.parse(v.result.json.toString('utf8')) as string),
  );
  return restoreLarge(parsed, PREFIX, scanner.large, values);
}

/** What the body is to a reader of attachments: decoded bytes where the scanner decoded, else the string decoded. */
function attachmentsOf(value: unknown): (string | null)[] {
  const list = (value as { attachments?: { content: string }[] }).attachments ?? [];
  return list.map((a) => {
    const bytes = receivedBytes(a) ?? decodeBase64(a.content);
    return bytes === null ? null : bytes.toString('hex');
  });
}

/** The value without attachment contents (compared apart, as bytes). */
function withoutContents(value: unknown): unknown {
  const copy = structuredClone(value) as { attachments?: { content?: string }[] };
  for (const a of copy.attachments ?? []) delete a.content;
  return copy;
}

const bytesOf = (n: number, seed: number) =>
  Buffer.from(Array.from({ length: n }, (_, i) => (i * 2654435761 + seed) >>> 24));
const PIECES = [1, 2, 3, 4, 5, 7, 13, 64, 1000, 1 << 20];

const bodies: [string, string][] = [
  [
    'small fields only',
    JSON.stringify({ to: 'a@example.com', subject: 'Hi', labels: ['x', 'y'], n: 1.5e3, ok: true, none: null }),
  ],
  [
    'a large text with escapes, quotes and backslash runs',
    JSON.stringify({
      text: 'Zeile "eins"\\\n'.repeat(20) + '\\\\\\"' + 'ü€😀'.repeat(30),
      html: '<p>\t</p>'.repeat(10),
    }),
  ],
  [
    'escapes written by hand',
    String.raw`{"text":"\u00fc\u20ac\ud83d\ude00 \/ \" \\ \b\f\n\r\t and more words to be large enough","subject":"s\u0041"}`,
  ],
  [
    'a large attachment among small ones',
    JSON.stringify({
      to: ['x@example.com'],
      attachments: [
        { filename: 'a.bin', content: bytesOf(300, 1).toString('base64') },
        { filename: 'b', content: 'aGk=' },
        { content: bytesOf(100, 2).toString('base64url') },
      ],
    }),
  ],
  [
    'base64 with spaces and padding',
    `{"attachments":[{"content":"${bytesOf(61, 3)
      .toString('base64')
      .replace(/(.{7})/g, '$1 ')}"},{"content":"${bytesOf(62, 4).toString('base64')}  "}]}`,
  ],
  [
    'base64 with escapes (\\/ and \\n)',
    `{"attachments":[{"content":"${bytesOf(90, 5)
      .toString('base64')
      .replace(/\//g, '\\/')
      .replace(/(.{40})/g, '$1\\n')}"}]}`,
  ],
  [
    'invalid base64: mixed alphabets',
    `{"attachments":[{"content":"${'A'.repeat(40)}+${'B'.repeat(7)}-${'C'.repeat(3)}"}]}`,
  ],
  ['invalid base64: a character outside', `{"attachments":[{"content":"${'A'.repeat(40)}*${'A'.repeat(39)}"}]}`],
  ['invalid base64: data after padding', `{"attachments":[{"content":"${'A'.repeat(42)}==AAAA"}]}`],
  ['invalid base64: three pads', `{"attachments":[{"content":"${'A'.repeat(41)}==="}]}`],
  ['invalid base64: length', `{"attachments":[{"content":"${'A'.repeat(41)}"}]}`],
  ['invalid base64: padding on a wrong length', `{"attachments":[{"content":"${'A'.repeat(41)}="}]}`],
  ['unpadded base64', `{"attachments":[{"content":"${'QUJD'.repeat(10)}QQ"}]}`],
  [
    'a key given twice keeps its last value',
    `{"text":"${'x'.repeat(50)}","text":"short","html":"short","html":"${'y'.repeat(60)}"}`,
  ],
  [
    'large strings in other places stay strings',
    JSON.stringify({
      headers: { 'X-Long': 'v'.repeat(100) },
      content: 'A'.repeat(80),
      attachments: [{ filename: 'f'.repeat(90), content: 'QUJD'.repeat(20) }],
      deep: [[{ content: 'B'.repeat(64) }]],
    }),
  ],
  [
    'keys with escapes and long keys',
    `{"te\\u0078t":"${'z'.repeat(40)}","${'k'.repeat(300)}":"${'w'.repeat(40)}","attach\\u006dents":[{"content":"${'QUJD'.repeat(12)}"}]}`,
  ],
  ['a large string at the top', JSON.stringify('t'.repeat(100) + '"\\')],
  [
    'whitespace everywhere',
    `{ "to" : [ "a@example.com" , "b@example.com" ] ,\n\t"text" :\r\n "${'q'.repeat(60)}" , "attachments" : [ { "content" : "${'QUJD'.repeat(12)}" } ] }`,
  ],
];

describe('JsonBodyScanner', () => {
  for (const [name, json] of bodies) {
    it(`reads ${name} as JSON.parse does, in pieces of any size`, () => {
      const expected: unknown = JSON.parse(json);
      const body = Buffer.from(json);
      for (const size of PIECES) {
        // With the body's length declared (buffers sized ahead) and without (buffers grown).
        for (const declared of [true, false]) {
          const value = scan(body, size, attachmentAt, declared);
          expect(withoutContents(value), `pieces of ${size}, length declared: ${declared}`).toEqual(
            withoutContents(expected),
          );
          expect(attachmentsOf(value), `pieces of ${size}, length declared: ${declared}`).toEqual(
            attachmentsOf(expected),
          );
        }
      }
    });
  }

  it('decodes a large attachment as it arrives and keeps it out of the skeleton', () => {
    const content = bytesOf(4000, 9);
    const body = Buffer.from(
      JSON.stringify({ to: 'a@example.com', attachments: [{ filename: 'x', content: content.toString('base64') }] }),
    );
    const scanner = new JsonBodyScanner({
      largeBytes: LARGE,
      tokenPrefix: PREFIX,
      bytesAt: attachmentAt,
      bodyBytes: body.length,
    });
    for (let i = 0; i < body.length; i += 101) scanner.write(body.subarray(i, i + 101));
    const skeleton = scanner.end();
    expect(skeleton.length).toBeLessThan(150);
    const [only] = scanner.large;
    expect(only && 'bytes' in only.result && only.result.bytes.equals(content)).toBe(true);
  });

  it('leaves every string whole without a sink, and keeps small strings in the skeleton', () => {
    const json = JSON.stringify({ attachments: [{ content: 'QUJD'.repeat(20) }], subject: 'short' });
    const value = scan(Buffer.from(json), 7, () => undefined) as { attachments: { content: string }[] };
    expect(value).toEqual(JSON.parse(json));
    expect(receivedBytes(value.attachments[0] as object)).toBeUndefined();
  });

  it('leaves a body that is not JSON for the parser to refuse', () => {
    for (const bad of [
      `{"text":"${'a'.repeat(40)}`,
      `{"text":"${'a'.repeat(40)}\u0001"}`,
      `{"text":"${'a'.repeat(40)}\\x"}`,
      `{"attachments":[{"content":"${'A'.repeat(40)}\u0001"}]}`,
      '{"a":1,}',
      '[1 2]',
    ]) {
      for (const size of [1, 5, 1000]) {
        expect(() => scan(Buffer.from(bad), size), `${bad.slice(0, 20)} in pieces of ${size}`).toThrow();
      }
    }
  });

  it('reads a body nested 500 deep (past the levels a path is kept for), with strings at every level, as JSON.parse does', () => {
    const depth = 500;
    const json = `${'[{"k":"v","x":['.repeat(depth)}"${'d'.repeat(40)}"${']}]'.repeat(depth)}`;
    for (const size of [7, 65_536]) expect(scan(Buffer.from(json), size)).toEqual(JSON.parse(json));
  });

  it('keeps large values in buffers of about their size, whatever the body declares', () => {
    const text = 'x'.repeat(100);
    const content = bytesOf(75, 3).toString('base64');
    const json = JSON.stringify({
      list: Array.from({ length: 20 }, () => text),
      attachments: Array.from({ length: 5 }, () => ({ content })),
    });
    const body = Buffer.from(json);
    // Declared as if megabytes were still to come after each value.
    const scanner = new JsonBodyScanner({
      largeBytes: LARGE,
      tokenPrefix: PREFIX,
      bytesAt: attachmentAt,
      bodyBytes: 16 * 1024 * 1024,
    });
    for (let i = 0; i < body.length; i += 50) scanner.write(body.subarray(i, i + 50));
    expect(scanner.large).toHaveLength(25);
    for (const { result } of scanner.large) {
      const held = 'bytes' in result ? result.bytes : result.json;
      expect(held.buffer.byteLength).toBeLessThanOrEqual(Math.max(held.length + 1024, held.length * 1.125));
    }
  });

  it('ignores a string that looks like a token of another body (each body has its own unguessable prefix)', () => {
    const json = JSON.stringify({ subject: '\u{f8ff}other-token:0', text: 'x'.repeat(40) });
    expect(scan(Buffer.from(json), 3)).toEqual(JSON.parse(json));
  });
});

describe('createBase64Sink', () => {
  it('agrees with decodeBase64 on valid and invalid content, whatever the pieces', () => {
    const cases = [
      '',
      'QQ',
      'QQ==',
      'QQ=',
      'QUI',
      'QUI=',
      'QUJD',
      'Q',
      'QQ===',
      '==',
      'QQ==QQ==',
      'QUJD QUJD',
      ' QUJD ',
      'QU JD Q Q',
      '-_-_',
      '+/+/',
      '+/-_',
      'QQ=\n=',
      bytesOf(1000, 7).toString('base64'),
      bytesOf(1001, 8).toString('base64url'),
      `${bytesOf(999, 9).toString('base64')} `,
      'QUJD\u00e9',
    ];
    for (const content of cases) {
      const expected = decodeBase64(content);
      const raw = Buffer.from(JSON.stringify(content).slice(1, -1));
      for (const size of [1, 2, 3, 5, 64, 5000]) {
        // Sized from the string's length, from nothing (grown as it goes) and from too little.
        for (const most of [raw.length, undefined, 1]) {
          const sink = createBase64Sink(most);
          for (let i = 0; i < raw.length; i += size) sink.write(raw.subarray(i, i + size));
          const result = sink.end();
          const bytes =
            'bytes' in result ? result.bytes : decodeBase64(JSON.parse(result.json.toString('utf8')) as string);
          expect(
            bytes === null ? null : bytes.toString('hex'),
            `${JSON.stringify(content.slice(0, 12))} in pieces of ${size}, sized for ${most}`,
          ).toEqual(expected === null ? null : expected.toString('hex'));
        }
      }
    }
  });
});
