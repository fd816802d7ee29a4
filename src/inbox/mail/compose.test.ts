import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import { describe, expect, it } from 'vitest';
import { extractNewHtml, extractNewText, formatMailbox, isValidAddress, normalizeSubject, parseMailbox, previewOf, replySubject, serializeMimeTree, splitAddressList } from './compose.js';

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

describe('addresses', () => {
  it.each([
    ['a@example.org', { name: '', address: 'a@example.org' }],
    ['<a@example.org>', { name: '', address: 'a@example.org' }],
    ['Jane Doe <jane@example.org>', { name: 'Jane Doe', address: 'jane@example.org' }],
    ['"Doe, Jane" <jane@example.org>', { name: 'Doe, Jane', address: 'jane@example.org' }],
    ['"Say \\"hi\\"" <x@example.org>', { name: 'Say "hi"', address: 'x@example.org' }],
    ["o'brien+tag@sub.example.co.uk", { name: '', address: "o'brien+tag@sub.example.co.uk" }],
  ])('parses %s', (input, expected) => {
    expect(parseMailbox(input)).toEqual(expected);
  });

  it.each(['', 'plain', 'a@', '@b.org', 'a@b', 'a..b@c.org', '.a@c.org', 'a@-b.org', 'a@b..org', 'a@b.123', 'a b@c.org', 'Jane <a@b.org', 'Jane a@b.org>', 'x@y.org\r\nBcc: z@w.org', `${'a'.repeat(65)}@b.org`, 'Ja"ne <a@b.org>'])(
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
