import { describe, expect, it } from 'vitest';
import { compiler } from 'imapflow/lib/handler/imap-handler.js';
import {
  type Node,
  bodyStructure,
  compileResponse,
  envelope,
  flagList,
  internalDate,
  parseEntity,
  parseSection,
  sectionBytes,
  str,
} from './imap-fetch.js';

/** compileResponse writes what imapflow's compiler writes, byte for byte, for every node kind of our answers. */

const atom = (value: string) => ({ type: 'ATOM', value });
const reference = (tag: string, command: string, attributes: Node[]) =>
  compiler({ tag, command, attributes } as never) as Buffer;

const SOURCES = [
  'From: "Ann Example" <ann@example.com>\r\nTo: bob@example.com, "Carl, Jr." <carl@example.com>\r\nSubject: Hello "world" \\ back\r\nDate: Sat, 28 Nov 2026 10:00:00 +0000\r\nMessage-ID: <a@b>\r\n\r\nBody\r\n',
  'From: =?UTF-8?Q?J=C3=BCrgen?= <j@example.com>\r\nSubject: Grüße aus Köln\r\nContent-Type: multipart/alternative; boundary="b"\r\n\r\n--b\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHallo\r\n--b\r\nContent-Type: text/html\r\nContent-Disposition: inline; filename="a b.html"\r\n\r\n<p>Hallo</p>\r\n--b--\r\n',
  'Subject: \r\nContent-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\nContent-Type: message/rfc822\r\n\r\nSubject: inner\r\nFrom: in@example.com\r\n\r\ninner body\r\n--x--\r\n',
  'No header at all',
];

describe('compileResponse', () => {
  it.each(SOURCES.map((s, i) => [i, s] as const))('writes FETCH items of source %i as imapflow does', (_, text) => {
    const source = Buffer.from(text);
    const root = parseEntity(source);
    const header = parseSection([{ type: 'ATOM', value: 'HEADER.FIELDS' }, [atom('SUBJECT'), atom('FROM')]]);
    const whole = parseSection([]);
    const attributes: Node[] = [
      [
        atom('UID'),
        42,
        atom('FLAGS'),
        flagList({ labels: ['starred', 'Work', '$Forwarded'] }, true),
        atom('INTERNALDATE'),
        str(internalDate('2026-11-28T10:00:00.000Z')),
        atom('RFC822.SIZE'),
        source.length,
        atom('ENVELOPE'),
        envelope(root),
        atom('BODYSTRUCTURE'),
        bodyStructure(source, root, true),
        atom('BODY'),
        bodyStructure(source, root, false),
        { type: 'ATOM', value: 'BODY', section: header?.name ?? [] },
        { type: 'LITERAL', value: header ? sectionBytes(source, root, header) : Buffer.alloc(0) },
        { type: 'ATOM', value: 'BODY', section: whole?.name ?? [], partial: [5] },
        { type: 'LITERAL', value: source.subarray(5, 20) },
        atom('X'),
        ['TEXT', 'PLAIN', null, 0, '', [str('a'), null]],
      ],
    ];
    expect(compileResponse('*', '7 FETCH', attributes).toString('latin1')).toBe(
      reference('*', '7 FETCH', attributes).toString('latin1'),
    );
  });

  it('writes STATUS, ID, empty lists, odd atoms and empty literals as imapflow does', () => {
    const cases: [string, string, Node[]][] = [
      ['*', 'STATUS', [atom('INBOX'), [atom('MESSAGES'), 3, atom('UIDNEXT'), 4]]],
      ['*', 'ID', [[str('name'), str('agent-services')]]],
      ['*', '1 FETCH', [[]]],
      ['*', '1 FETCH', [[atom('FLAGS'), []]]],
      [
        '*',
        '1 FETCH',
        [[atom('a b'), atom(''), atom('\\Seen'), atom('x]y'), { type: 'LITERAL', value: Buffer.alloc(0) }]],
      ],
      ['*', '1 FETCH', [[[[1], [2]], [3], 4, [5]]]],
      ['*', '1 FETCH', [[{ type: 'LITERAL', value: Buffer.from('é') }, null, [str('x')]]]],
    ];
    for (const [tag, command, attributes] of cases)
      expect(compileResponse(tag, command, attributes).toString('latin1')).toBe(
        reference(tag, command, attributes).toString('latin1'),
      );
  });

  it('refuses a quoted string with a line break, as imapflow does', () => {
    expect(() => compileResponse('*', '1 FETCH', [[{ type: 'STRING', value: 'a\r\nb' }]])).toThrow();
    expect(() => reference('*', '1 FETCH', [[{ type: 'STRING', value: 'a\r\nb' }]])).toThrow();
  });
});
