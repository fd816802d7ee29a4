import { describe, expect, it } from 'vitest';
import { crlf, emlCorpus as corpus, prng } from '../../../test/support/generated.js';
import {
  inboundContent,
  parseMessage,
  parseMessageWithMailparser,
  parseSimpleMessage,
  type ParsedFields,
} from './parse.js';

/**
 * The simple path of `parseMessage` (`parseSimpleMessage`) must give exactly what mailparser gives
 * for every message it takes: the same stored content (`inboundContent`) and the same fields. This
 * checks it over the fixture corpus (as received: CRLF, and as the files hold it) and over a few
 * thousand generated messages around the edges of what the simple path accepts.
 */

/** The fields `inboundContent` reads, in a comparable form. */
function fieldsOf(p: ParsedFields) {
  const addresses = (a: ParsedFields['to']) =>
    a === undefined ? undefined : (Array.isArray(a) ? a : [a]).flatMap((o) => o.value);
  return {
    subject: p.subject,
    text: p.text,
    html: p.html === false ? undefined : p.html,
    messageId: p.messageId,
    inReplyTo: p.inReplyTo,
    references: p.references === undefined ? undefined : [p.references].flat(),
    from: addresses(p.from),
    to: addresses(p.to),
    cc: addresses(p.cc),
    replyTo: addresses(p.replyTo),
    attachments: p.attachments.length,
  };
}

/** Undefined when the simple path does not take `source`; else asserts it agrees with mailparser. */
async function compare(source: Buffer): Promise<boolean> {
  const simple = parseSimpleMessage(source);
  const general = await parseMessageWithMailparser(source);
  if (simple === undefined) {
    // The general path is what parseMessage then runs.
    expect(inboundContent(await parseMessage(source))).toStrictEqual(inboundContent(general));
    return false;
  }
  expect(fieldsOf(simple)).toStrictEqual(fieldsOf(general));
  expect(inboundContent(simple)).toStrictEqual(inboundContent(general));
  expect(inboundContent(await parseMessage(source))).toStrictEqual(inboundContent(general));
  return true;
}

// ---------------------------------------------------------------------------------------------
// Generated messages: deterministic, each header and body drawn from variants that cover what
// the simple path accepts and what it must leave to mailparser.

const ADDRESSES = [
  'Anna Becker <anna.becker@acme-logistics.example>',
  'anna@acme.example',
  '<anna@acme.example>',
  '"Becker, Anna" <anna@acme.example>',
  '"Anna \\"the boss\\" Becker" <anna@acme.example>',
  '  Anna   Becker   <anna@acme.example>  ',
  'anna@acme.example (Anna Becker)',
  '(comment) Anna <anna@acme.example>',
  'Support Agent <agent-01@inbox.localhost>, "Ops" <ops@inbox.localhost>',
  'a@x.example, b@y.example,c@z.example',
  'undisclosed-recipients:;',
  'Team: one@x.example, Two <two@x.example>;',
  'Team: one@x.example, Two <two@x.example>;, three@x.example',
  'Nested: Inner: deep@x.example;;',
  '',
  ' ',
  'not an address',
  'broken <anna@acme.example',
  'anna@',
  '@acme.example',
  '<>',
  'Anna <anna@acme.example>,,, ,Ben <ben@acme.example>',
  'x@[192.0.2.1]',
  '"quoted only"',
  'Anna Becker\r\n <anna.becker@acme-logistics.example>',
  'a@x.example,\r\n\tb@y.example',
  'Caf\u00e9 <cafe@x.example>',
  '=?utf-8?Q?Caf=C3=A9?= <cafe@x.example>',
  'Punycode <agent@xn--bcher-kva.example>',
];
const SUBJECTS = [
  'Order 100001: delivery update and invoice',
  'Re: Order 100001: delivery update and invoice',
  '',
  '   spaced out   ',
  'tab\there',
  'folded over\r\n two lines',
  'folded over\r\n\t\ttabs',
  'with (parens) and "quotes" and ; semicolons : colons',
  'AW: Fwd: re: chained',
  '=?utf-8?B?R3LDvMOfZQ==?=',
  '=? not really encoded',
  'Gr\u00fc\u00dfe',
  'trailing\r\n ',
];
const IDS = [
  '<abc.000000001@acme-logistics.example>',
  'abc.000000001@acme-logistics.example',
  '<abc@x.example',
  'abc@x.example>',
  '',
  '<a b@x.example>',
  '<one@x.example> <two@x.example>',
  `<${'l'.repeat(260)}@x.example>`,
  '<>',
  '  <spaced@x.example>  ',
  '<folded@x.example>\r\n (comment)',
];
const REFERENCES = [
  '<a@x.example> <b@x.example>',
  '<a@x.example>\r\n <b@x.example>\r\n\t<c@x.example>',
  'a@x.example b@x.example',
  '<a@x.example>,<b@x.example>',
  '',
  ' <only@x.example> ',
  'junk',
  Array.from({ length: 120 }, (_, i) => `<r${i}@x.example>`).join(' '),
];
const CONTENT_TYPES = [
  'text/plain; charset=utf-8',
  'text/plain; charset="utf-8"',
  'text/plain;charset=UTF-8',
  'text/plain; charset=us-ascii',
  'TEXT/PLAIN; CHARSET=US-ASCII',
  'text/plain',
  'text/plain; charset=utf8',
  'text/plain; charset=ascii',
  'text/plain ; charset=utf-8',
  'text/plain; charset=iso-8859-1',
  'text/plain; format=flowed',
  'text/plain; charset=utf-8; format=flowed; delsp=yes',
  'text/plain; charset=utf-8;',
  'text/plain; charset=utf-8 (comment)',
  'text/html; charset=utf-8',
  'text/plain; name="file.txt"',
  'application/octet-stream',
  'multipart/mixed; boundary="b1"',
];
const ENCODINGS = ['7bit', '8bit', '8BIT', 'binary', 'quoted-printable', 'base64', '7bit (comment)', 'x-unknown'];
const BODIES = [
  '',
  '\r\n',
  'One line.\r\n',
  'One line without a line end.',
  'Hello agent,\r\n\r\nthe order shipped.\r\n\r\n-- \r\nAnna\r\n',
  'Bare LF\nand bare CR\rand CRLF\r\n',
  'Umlauts \u00e4\u00f6\u00fc \u00df and \u20ac and \ud83d\ude00\r\n',
  'NUL \u0000 in the middle\r\n',
  '.a line that starts with a dot\r\n..two dots\r\n',
  'trailing spaces   \r\n\t\r\n   \r\n',
  '\r\n\r\nleading empty lines\r\n',
  '=?utf-8?Q?not_decoded_in_a_body?=\r\n',
  'Content-Type: text/html\r\n\r\nlooks like a header\r\n',
  '--b1\r\nlooks like a boundary\r\n--b1--\r\n',
  `${'long line '.repeat(2000)}\r\n`,
];

function generated(count: number): Buffer[] {
  const random = prng(20261121);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
  const chance = (p: number) => random() < p;
  const out: Buffer[] = [];
  for (let n = 0; n < count; n++) {
    const fields: string[] = [];
    if (chance(0.6))
      fields.push(
        `Received: from relay-2.acme-logistics.example (relay-2.acme-logistics.example [192.0.2.25])\r\n\tby mail-out-3.sender.example (Postfix) with ESMTPS id 4Xk2f7${n}\r\n\tfor <agent-01@inbox.localhost>; Sat, 21 Nov 2026 11:25:31 +0000`,
      );
    if (chance(0.4))
      fields.push(
        'DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=acme-logistics.example; s=mail2026;\r\n\tt=1795000000; h=from:to:subject:date:message-id:mime-version:content-type;\r\n\tbh=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=;\r\n\tb=dGhpcyBpcyBub3QgYSByZWFsIHNpZ25hdHVyZQ==',
      );
    if (chance(0.2)) fields.push('Return-Path: <bounces@acme.example>');
    if (chance(0.9)) fields.push(`From: ${pick(ADDRESSES)}`);
    if (chance(0.85)) fields.push(`To: ${pick(ADDRESSES)}`);
    if (chance(0.3)) fields.push(`Cc: ${pick(ADDRESSES)}`);
    if (chance(0.2)) fields.push(`Reply-To: ${pick(ADDRESSES)}`);
    if (chance(0.85)) fields.push(`Subject: ${pick(SUBJECTS)}`);
    if (chance(0.7)) fields.push('Date: Sat, 21 Nov 2026 11:25:31 +0000');
    if (chance(0.8)) fields.push(`Message-ID: ${pick(IDS)}`);
    if (chance(0.3)) fields.push(`In-Reply-To: ${pick(IDS)}`);
    if (chance(0.3)) fields.push(`References: ${pick(REFERENCES)}`);
    if (chance(0.6)) fields.push('MIME-Version: 1.0');
    if (chance(0.8)) fields.push(`Content-Type: ${pick(CONTENT_TYPES)}`);
    if (chance(0.4)) fields.push(`Content-Transfer-Encoding: ${pick(ENCODINGS)}`);
    if (chance(0.05)) fields.push(`Content-Disposition: ${pick(['inline', 'attachment; filename="a.txt"'])}`);
    if (chance(0.3)) fields.push(`X-Mailer: ${pick(['Acme Notifier 4.2', 'x: y: z', '  padded  ', ''])}`);
    if (chance(0.1)) fields.push(`List-Unsubscribe: <mailto:unsubscribe@acme.example>, <https://acme.example/u>`);
    if (chance(0.05)) fields.push(`Subject: ${pick(SUBJECTS)}`);
    if (chance(0.05)) fields.push(`To: ${pick(ADDRESSES)}`);
    if (chance(0.03)) fields.push(`Message-ID: ${pick(IDS)}`);
    // Shuffle a little: field order must not matter.
    if (chance(0.3)) fields.sort(() => random() - 0.5);
    let head = fields.join('\r\n');
    if (chance(0.03)) head = head.replace(/\r\n/g, '\n');
    if (chance(0.02)) head = `From sender@acme.example Sat Nov 21 11:25:31 2026\r\n${head}`;
    if (chance(0.02)) head = `${head}\r\nnot a field`;
    if (chance(0.02)) head = ` ${head}`;
    const body = pick(BODIES);
    const separator = chance(0.97) ? '\r\n\r\n' : '\r\n';
    out.push(
      Buffer.concat([
        Buffer.from(head, 'utf8'),
        Buffer.from(separator),
        chance(0.05) ? Buffer.from([0xff, 0xfe, 0x41, 0xc3, 0x0d, 0x0a]) : Buffer.from(body, 'utf8'),
      ]),
    );
  }
  return out;
}

describe('parseSimpleMessage: the simple path gives what mailparser gives', () => {
  it('over the fixture corpus, as received (CRLF) and as stored in the files', async () => {
    const taken: string[] = [];
    for (const { name, bytes } of corpus) {
      for (const [form, source] of [
        ['crlf', crlf(bytes)],
        ['file', bytes],
      ] as const) {
        if (await compare(source)) taken.push(`${name} ${form}`);
      }
    }
    // The plain single-part messages of the corpus take the simple path once they have CRLF line ends.
    expect(taken).toEqual(
      expect.arrayContaining([
        'eml/01-plain-ascii.eml crlf',
        'eml/09-long-folded-headers.eml crlf',
        'eml/10-missing-message-id.eml crlf',
      ]),
    );
  });

  it('over generated messages, on both sides of every condition', async () => {
    let simple = 0;
    const messages = generated(4000);
    for (const source of messages) if (await compare(source)) simple += 1;
    // Both paths are exercised in earnest.
    expect(simple).toBeGreaterThan(300);
    expect(messages.length - simple).toBeGreaterThan(300);
  });

  it('takes the benchmark message and agrees on every field', async () => {
    const head = [
      'Received: from relay-2.acme-logistics.example (relay-2.acme-logistics.example [192.0.2.25])\r\n\tby mail-out-3.sender.example (Postfix) with ESMTPS id 4Xk2f7000000001\r\n\tfor <agent-01@inbox.localhost>; Sat, 21 Nov 2026 11:25:31 +0000',
      'From: Anna Becker <anna.becker@acme-logistics.example>',
      'To: Support Agent <agent-01@inbox.localhost>',
      'Subject: Re: Order 100001: delivery update and invoice',
      'Date: Sat, 21 Nov 2026 11:25:31 +0000',
      'Message-ID: <3f2a.000000002@acme-logistics.example>',
      'In-Reply-To: <3f2a.000000001@acme-logistics.example>',
      'References: <3f2a.000000001@acme-logistics.example>',
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      'X-Mailer: Acme Logistics Notifier 4.2',
    ].join('\r\n');
    const source = Buffer.from(`${head}\r\n\r\nHello agent,\r\nthe order shipped.\r\n`);
    expect(await compare(source)).toBe(true);
    expect(inboundContent(parseSimpleMessage(source) as ParsedFields)).toMatchObject({
      messageId: '<3f2a.000000002@acme-logistics.example>',
      inReplyTo: '<3f2a.000000001@acme-logistics.example>',
      references: ['<3f2a.000000001@acme-logistics.example>'],
      from: 'Anna Becker <anna.becker@acme-logistics.example>',
      to: ['Support Agent <agent-01@inbox.localhost>'],
      subject: 'Re: Order 100001: delivery update and invoice',
      text: 'Hello agent,\nthe order shipped.\n',
      html: null,
      attachments: [],
      multipart: false,
    });
  });

  it('leaves encoded words, punycode, other charsets and encodings, and duplicates to mailparser', () => {
    const base = (fields: string) => Buffer.from(`From: a@x.example\r\n${fields}\r\n\r\nbody\r\n`);
    expect(parseSimpleMessage(base('Subject: plain'))).toBeDefined();
    for (const fields of [
      'Subject: =?utf-8?Q?Caf=C3=A9?=',
      'To: agent@xn--bcher-kva.example',
      'Subject: Caf\u00e9',
      'Content-Type: text/plain; charset=iso-8859-1',
      'Content-Type: text/plain; format=flowed',
      'Content-Type: text/html',
      'Content-Transfer-Encoding: quoted-printable',
      'Content-Transfer-Encoding: base64',
      'Content-Disposition: inline',
      'Subject: one\r\nSubject: two',
      'To: a@x.example\r\nTo: b@x.example',
    ]) {
      expect(parseSimpleMessage(base(fields)), fields).toBeUndefined();
    }
    expect(parseSimpleMessage(Buffer.from('From: a@x.example\nSubject: lf\n\nbody\n'))).toBeUndefined();
    expect(parseSimpleMessage(Buffer.from('From: a@x.example\r\nSubject: no body separator\r\n'))).toBeUndefined();
  });
});
