import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import { describe, expect, it } from 'vitest';
import { prng } from '../../../test/support/generated.js';
import {
  composeMessage,
  composePlainText,
  composeWithNodemailer,
  extractNewHtml,
  extractNewText,
  formatMailbox,
  isValidAddress,
  normalizeSubject,
  parseMailbox,
  previewOf,
  replySubject,
  serializeMimeTree,
  splitAddressList,
  type ComposeInput,
  type Mailbox,
} from './compose.js';

const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');

/** Messages of every shape composeMessage builds (and some it does not, to see the fallback). */
const shapes: Record<string, ConstructorParameters<typeof MailComposer>[0]> = {
  'plain ASCII text': { from: 'a@x.test', to: 'b@x.test', subject: 'Hi', text: 'Hello', messageId: '<1@x.test>', date: new Date(0) },
  'unicode and long lines (quoted-printable)': {
    from: { name: 'Jürgen Müller', address: 'j@x.test' },
    to: [{ name: 'Doe, Jane', address: 'jane@x.test' }],
    cc: [{ name: '', address: 'c@x.test' }],
    replyTo: [{ name: 'Desk', address: 'desk@x.test' }],
    subject: 'Grüße – ein sehr langer Betreff '.repeat(4),
    text: `${'Zeile mit Umlauten äöü und einer sehr langen Fortsetzung ohne Umbruch '.repeat(6)}\nend  \n\ttab`,
    html: `<p>${'Ünïcödé '.repeat(40)}</p>`,
    headers: { 'X-Custom': 'wert mit ü', 'X-Plain': 'value' },
    inReplyTo: '<p@x.test>',
    references: ['<a@x.test>', '<p@x.test>'],
    messageId: '<2@x.test>',
    date: new Date(0),
  },
  'attachments, inline image, CRLF text attachment': {
    from: 'a@x.test',
    to: 'b@x.test',
    subject: 'files',
    text: 'see attached',
    html: '<p><img src="cid:logo@x.test"></p>',
    attachments: [
      { filename: 'logo.png', content: png, contentType: 'image/png', cid: 'logo@x.test', contentDisposition: 'inline' },
      { filename: 'notes.txt', content: Buffer.from('line one\r\nline two\r\n'), contentType: 'text/plain', contentDisposition: 'attachment' },
      { filename: 'Bericht für 2024.pdf', content: Buffer.alloc(5000, 7), contentType: 'application/pdf', contentDisposition: 'attachment' },
      { filename: false, content: Buffer.alloc(0), contentType: 'application/octet-stream', contentDisposition: 'attachment' },
    ],
    messageId: '<3@x.test>',
    date: new Date(0),
  },
  'attachment only, no body': {
    from: 'a@x.test',
    to: 'b@x.test',
    subject: '',
    attachments: [{ filename: 'a.bin', content: Buffer.from([0, 1, 2, 255]), contentType: 'application/octet-stream' }],
    messageId: '<4@x.test>',
    date: new Date(0),
  },
};

describe('serializeMimeTree', () => {
  for (const [name, mail] of Object.entries(shapes)) {
    it(`writes what MimeNode#build() writes: ${name}`, async () => {
      const node = new MailComposer(mail).compile();
      const fast = serializeMimeTree(node);
      expect(fast).toBeInstanceOf(Buffer);
      const built = await node.build();
      expect(fast?.toString('latin1')).toBe(built.toString('latin1'));
    });
  }

  it('declines what it does not handle, so that build() is used', () => {
    const node = new MailComposer({ from: 'a@x.test', to: 'b@x.test', text: 'x', attachments: [{ filename: 'f.txt', path: '/etc/hostname' }] }).compile();
    expect(serializeMimeTree(node)).toBeUndefined();
  });
});

describe('composePlainText', () => {
  // Each field comes from its common values most of the time and from the awkward ones otherwise,
  // so that many inputs take the fast path and many just miss it.
  const pick = <T>(r: () => number, common: readonly T[], awkward: readonly T[]): T => {
    const items = r() < 0.8 ? common : awkward;
    return items[Math.floor(r() * items.length)] as T;
  };
  const names = [['', 'Agent', 'Agent Smith', 'support_bot 2', 'A'], ['Doe, Jane', 'Jürgen', ' padded ', 'two  spaces', 'quote"d', 'x'.repeat(60)]] as const;
  const addresses = [['a@x.test', 'agent.smith@mail.example.org', "o'brien+tag@sub.example.co.uk", 'b@x.test'], ['UPPER@Example.ORG', `${'l'.repeat(60)}@x.test`]] as const;
  const subjects = [
    [null, '', 'Hi', 'Hello there', 'Re: hello', 'Status: 3/4 done (75%), next #5!'],
    [' leading space', 'trailing ', 'Grüße', '=?utf-8?q?x?=', 'tab\there', 'x'.repeat(66), 'x'.repeat(67), 'x'.repeat(68), 'x'.repeat(120), 'semi; colon: "quotes" <angle> (paren)'],
  ] as const;
  const lines = [
    ['Hi,', '', 'this is a test.', 'x'.repeat(76), '  indented', 'tab\tin', 'trailing  ', '> quoted', '.', 'From here', '=3D not qp'],
    ['x'.repeat(77), 'ünïcode', 'ctrl\u0001char', 'del\u007f'],
  ] as const;
  const breaks = [['\n', '\r\n'], ['\r']] as const;

  function input(r: () => number): ComposeInput {
    const mailbox = (): Mailbox => ({ name: pick(r, ...names), address: pick(r, ...addresses) });
    const count = r() < 0.7 ? 1 : 2 + Math.floor(r() * 3);
    const body = Array.from({ length: 1 + Math.floor(r() * 5) }, () => pick(r, ...lines)).join(pick(r, ...breaks)) + (r() < 0.5 ? pick(r, ...breaks) : '');
    return {
      messageId: r() < 0.9 ? `<${Math.floor(r() * 1e9)}.${Math.floor(r() * 1e9)}@x.test>` : `<${'m'.repeat(70)}@x.test>`,
      date: new Date(Math.floor(r() * 4e12)),
      from: mailbox(),
      to: Array.from({ length: count }, mailbox),
      cc: r() < 0.1 ? [mailbox()] : [],
      replyTo: r() < 0.1 ? [mailbox()] : [],
      subject: pick(r, ...subjects),
      text: r() < 0.05 ? null : body,
      html: r() < 0.05 ? '<p>x</p>' : null,
      inReplyTo: r() < 0.05 ? '<p@x.test>' : null,
      references: r() < 0.05 ? ['<p@x.test>'] : [],
      headers: r() < 0.05 ? { 'X-Custom': 'v' } : {},
      attachments: [],
    };
  }

  it('writes the bytes MailComposer writes, for every input it takes (3,000 generated inputs)', async () => {
    const r = prng(20261121);
    let taken = 0;
    for (let i = 0; i < 3000; i++) {
      const mail = input(r);
      const fast = composePlainText(mail);
      if (!fast) continue;
      taken++;
      const slow = await composeWithNodemailer(mail);
      expect(fast.toString('latin1'), `case ${i}: ${JSON.stringify(mail)}`).toBe(slow.toString('latin1'));
    }
    // The generator is tuned so that a good share takes the fast path; if this drops, the
    // comparison above stopped covering it.
    expect(taken).toBeGreaterThan(200);
  });

  it('takes the common agent send, and leaves everything else to MailComposer', async () => {
    const base: ComposeInput = {
      messageId: '<1@x.test>',
      date: new Date(0),
      from: { name: 'Agent', address: 'agent@x.test' },
      to: [{ name: '', address: 'b@y.test' }],
      cc: [],
      replyTo: [],
      subject: 'Status report',
      text: 'All green.\n',
      html: null,
      inReplyTo: null,
      references: [],
      headers: {},
      attachments: [],
    };
    expect(composePlainText(base)?.toString()).toBe(
      'From: Agent <agent@x.test>\r\nTo: b@y.test\r\nSubject: Status report\r\nMessage-ID: <1@x.test>\r\nDate: Thu, 01 Jan 1970 00:00:00 +0000\r\n' +
        'Content-Transfer-Encoding: 7bit\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nAll green.\n',
    );
    expect((await composeMessage(base)).equals(await composeWithNodemailer(base))).toBe(true);
    // A bare Message-ID: nodemailer brackets it, so the long way.
    expect(composePlainText({ ...base, messageId: '1@x.test' })).toBeUndefined();
    for (const other of [
      { html: '<p>x</p>' },
      { text: 'Grüße' },
      { subject: 'Grüße' },
      { cc: [{ name: '', address: 'c@y.test' }] },
      { inReplyTo: '<0@x.test>' },
      { headers: { 'X-Tag': 'a' } },
      { attachments: [{ filename: 'a.txt', contentType: 'text/plain', contentDisposition: 'attachment' as const, contentId: null, content: Buffer.from('a') }] },
      { from: { name: 'Doe, Jane', address: 'agent@x.test' } },
    ]) {
      const mail = { ...base, ...other };
      expect(composePlainText(mail), JSON.stringify(other)).toBeUndefined();
      // The long way: the same bytes as nodemailer's, but for the random multipart boundaries.
      const boundaries = (b: Buffer) => b.toString('latin1').replace(/_NmP-[0-9a-f]+-Part_\d+/g, 'BOUNDARY');
      expect(boundaries(await composeMessage(mail))).toBe(boundaries(await composeWithNodemailer(mail)));
    }
  });
});

describe('addresses', () => {
  it.each([
    ['a@example.org', { name: '', address: 'a@example.org' }],
    ['<a@example.org>', { name: '', address: 'a@example.org' }],
    ['Jane Doe <jane@example.org>', { name: 'Jane Doe', address: 'jane@example.org' }],
    ['"Doe, Jane" <jane@example.org>', { name: 'Doe, Jane', address: 'jane@example.org' }],
    ['"Say \\"hi\\"" <x@example.org>', { name: 'Say "hi"', address: 'x@example.org' }],
    ["o'brien+tag@sub.example.co.uk", { name: '', address: "o'brien+tag@sub.example.co.uk" }],
    // An internationalized domain, checked in its xn-- form and kept as written.
    ['Agent <agent@bücher.test>', { name: 'Agent', address: 'agent@bücher.test' }],
    // …in its one Unicode spelling: lower case, fullwidth letters mapped (UTS 46).
    ['agent@BÜCHER.test', { name: '', address: 'agent@bücher.test' }],
    ['agent@ｉｎｂｏｘ.test', { name: '', address: 'agent@inbox.test' }],
  ])('parses %s', (input, expected) => {
    expect(parseMailbox(input)).toEqual(expected);
  });

  it.each(['', 'plain', 'a@', '@b.org', 'a@b', 'a..b@c.org', '.a@c.org', 'a@-b.org', 'a@b..org', 'a@b.123', 'a b@c.org', 'Jane <a@b.org', 'Jane a@b.org>', 'x@y.org\r\nBcc: z@w.org', `${'a'.repeat(65)}@b.org`, 'Ja"ne <a@b.org>', 'a@bü cher.test', 'a@-bücher.test', 'a@x。-bücher.test', 'a@bücher-.test', 'a@bücher.123'])(
    'refuses %j',
    (input) => {
      expect(parseMailbox(input)).toBeUndefined();
    },
  );

  it('accepts a one-label domain only when it is local', () => {
    expect(isValidAddress('a@localhost')).toBe(false);
    expect(isValidAddress('a@localhost', ['localhost'])).toBe(true);
  });

  it('splits lists at commas outside quotes and brackets', () => {
    expect(splitAddressList('a@x.org, "Doe, J" <j@x.org>; b@x.org,')).toEqual(['a@x.org', '"Doe, J" <j@x.org>', 'b@x.org']);
  });

  it('quotes display names with specials', () => {
    expect(formatMailbox({ name: 'Jane Doe', address: 'j@x.org' })).toBe('Jane Doe <j@x.org>');
    expect(formatMailbox({ name: 'Doe, Jane', address: 'j@x.org' })).toBe('"Doe, Jane" <j@x.org>');
    expect(formatMailbox({ name: '', address: 'j@x.org' })).toBe('j@x.org');
  });
});

describe('derived texts', () => {
  it('previews the text, else the visible HTML, in 200 characters', () => {
    expect(previewOf('  Hello\n\n  world  ', null)).toBe('Hello world');
    expect(previewOf(null, '<style>p{}</style><p>Hi &amp; bye</p><script>x()</script>')).toBe('Hi & bye');
    expect(previewOf('x'.repeat(300), null)).toHaveLength(200);
    expect(previewOf(null, null)).toBeNull();
  });

  it('cuts quoted history from replies', () => {
    expect(extractNewText('Thanks!\n\nOn Mon, 1 Jan 2024 at 10:00, Bob <b@x.org> wrote:\n> hi\n> there')).toBe('Thanks!');
    expect(extractNewText('Sure.\n> earlier\n> lines\n')).toBe('Sure.');
    expect(extractNewText('No quotes here')).toBe('No quotes here');
    expect(extractNewHtml('<p>Yes</p><div class="gmail_quote">old</div>')).toBe('<p>Yes</p>');
    expect(extractNewHtml('<p>Plain</p>')).toBe('<p>Plain</p>');
  });

  it('prefixes Re: once and normalizes subjects', () => {
    expect(replySubject('Hello')).toBe('Re: Hello');
    expect(replySubject('RE: Hello')).toBe('RE: Hello');
    expect(normalizeSubject('Re: Fwd: AW: Hello World')).toBe('hello world');
  });
});
