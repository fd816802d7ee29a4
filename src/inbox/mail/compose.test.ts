import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import { describe, expect, it } from 'vitest';
import { prng } from '../../../test/support/generated.js';
import { OFFLOAD_COMPOSE_BYTES } from '../offload.js';
import {
  composeMessage,
  composeSource,
  composePlainText,
  composeWithNodemailer,
  extractNewHtml,
  extractNewText,
  formatMailbox,
  isValidAddress,
  normalizeSubject,
  parseMailbox,
  htmlToPlainText,
  previewOf,
  replySubject,
  splitAddressList,
  type ComposeInput,
  type Mailbox,
} from './compose.js';

/**
 * nodemailer's own bytes for a message of the shape composePlainText takes (from, to, subject,
 * text: nothing else): MailComposer, compiled and built, nothing of ours in between.
 */
function nodemailerBytes(input: ComposeInput): Promise<Buffer> {
  return new MailComposer({
    messageId: input.messageId,
    date: input.date,
    from: input.from,
    to: [...input.to],
    subject: input.subject ?? '',
    ...(input.text !== null ? { text: input.text } : {}),
  })
    .compile()
    .build();
}

/** The random multipart boundaries are the only bytes two compositions of one message may differ in. */
const boundaries = (b: Buffer) => b.toString('latin1').replace(/_NmP-[0-9a-f]+-Part_\d+/g, 'BOUNDARY');

describe('composeMessage', () => {
  const base: ComposeInput = {
    messageId: '<big@x.test>',
    date: new Date(0),
    from: { name: 'Jürgen', address: 'j@x.test' },
    to: [{ name: '', address: 'b@x.test' }],
    cc: [],
    replyTo: [],
    subject: 'Grüße',
    text: null,
    html: null,
    inReplyTo: null,
    references: [],
    headers: {},
    attachments: [],
  };

  it('composes a large message (in a worker thread) to the bytes MailComposer builds', async () => {
    const content = Buffer.alloc(300 * 1024);
    for (let i = 0; i < content.length; i++) content[i] = (i * 7919) & 0xff;
    const big: ComposeInput = {
      ...base,
      text: `${'Zeile mit Umlauten äöü und einer langen Fortsetzung ohne Umbruch '.repeat(40)}\n`.repeat(100),
      html: `<p>${'Ünïcödé '.repeat(40)}</p>\n`.repeat(200),
      attachments: [
        {
          filename: 'a.bin',
          contentType: 'application/octet-stream',
          contentDisposition: 'attachment',
          contentId: null,
          content,
        },
      ],
    };
    const raw = await composeMessage(big);
    expect(raw).toBeInstanceOf(Buffer);
    expect(boundaries(raw)).toBe(boundaries(await composeWithNodemailer(big)));
    // The caller's attachment is still whole (copied to the thread, not moved).
    expect(big.attachments[0]?.content.length).toBe(300 * 1024);
  });

  it('composes a large message of every kind of attachment, in pieces, to the bytes MailComposer builds', async () => {
    const bytes = (n: number, seed: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * seed) & 0xff));
    const attachment = (
      contentType: string,
      content: Buffer,
      more: Partial<ComposeInput['attachments'][number]> = {},
    ) => ({ filename: 'f', contentType, contentDisposition: 'attachment' as const, contentId: null, content, ...more });
    const big: ComposeInput = {
      ...base,
      text: 'Grüße\n'.repeat(30_000),
      attachments: [
        // Sliced on the way (base64 whatever the content): sizes around the slices and base64's groups of 3.
        attachment('application/octet-stream', bytes(200_000, 7)),
        attachment('image/png', bytes(48 * 1024 + 1, 11), { contentDisposition: 'inline', contentId: 'logo@x.test' }),
        attachment('application/pdf', bytes(2, 13)),
        attachment('application/zip', Buffer.alloc(0)),
        // Whole: nodemailer reads these to choose their encoding, or writes them as they are.
        attachment('text/plain', Buffer.from('Привет, мир\r\n'.repeat(5_000))),
        attachment('message/rfc822', Buffer.from('From: a@x.test\r\nSubject: inner\r\n\r\nbody\r\n')),
      ],
    };
    const pieces = await composeSource(big, 1000);
    expect(Buffer.isBuffer(pieces)).toBe(false);
    const got: Buffer[] = [];
    for await (const piece of pieces as AsyncIterable<Buffer>) got.push(piece);
    expect(got.slice(0, -1).every((p) => p.length === 1000)).toBe(true);
    expect(boundaries(Buffer.concat(got))).toBe(boundaries(await composeWithNodemailer(big)));
  });

  it('moves to the thread the attachments it is told to, unless an attachment kept here shares their memory', async () => {
    const drain = async (source: Buffer | AsyncIterable<Buffer>) => {
      const got: Buffer[] = [];
      for await (const piece of source as AsyncIterable<Buffer>) got.push(piece);
      return Buffer.concat(got);
    };
    const own = (n: number) => Buffer.from(Buffer.allocUnsafeSlow(n).fill(5));
    const file = (content: Buffer) => ({
      filename: 'f.bin',
      contentType: 'application/octet-stream',
      contentDisposition: 'attachment' as const,
      contentId: null,
      content,
    });
    const large = (c: Buffer) => c.length >= 150_000;
    const text = 'ä'.repeat(OFFLOAD_COMPOSE_BYTES);
    // Moved: empty here once the pieces were asked for, and still in the message.
    const moved = { ...base, text, attachments: [file(own(200_000))] };
    const expected = boundaries(await composeWithNodemailer({ ...moved, attachments: [file(own(200_000))] }));
    expect(boundaries(await drain(await composeSource(moved, 1000, large)))).toBe(expected);
    expect(moved.attachments[0]?.content.length).toBe(0);
    // Sharing its memory with a small attachment that stays: copied, both whole.
    const whole = own(200_000);
    const shared = { ...base, text, attachments: [file(whole), file(whole.subarray(0, 10))] };
    await drain(await composeSource(shared, 1000, large));
    expect(shared.attachments.map((a) => a.content.length)).toEqual([200_000, 10]);
  });

  it('composes small messages of every shape through MailComposer', async () => {
    for (const other of [
      { text: 'Grüße', html: '<p>x</p>' },
      { html: '<b>only</b>' },
      {
        text: 'x',
        attachments: [
          {
            filename: null,
            contentType: 'text/plain',
            contentDisposition: 'inline' as const,
            contentId: 'c@x',
            content: Buffer.from('a\r\nb'),
          },
        ],
      },
    ]) {
      const mail = { ...base, ...other };
      expect(boundaries(await composeMessage(mail)), JSON.stringify(other)).toBe(
        boundaries(await composeWithNodemailer(mail)),
      );
    }
  });
});

describe('composePlainText', () => {
  // Each field comes from its common values most of the time and from the awkward ones otherwise,
  // so that many inputs take the fast path and many just miss it.
  const pick = <T>(r: () => number, common: readonly T[], awkward: readonly T[]): T => {
    const items = r() < 0.8 ? common : awkward;
    return items[Math.floor(r() * items.length)] as T;
  };
  const names = [
    ['', 'Agent', 'Agent Smith', 'support_bot 2', 'A'],
    ['Doe, Jane', 'Jürgen', ' padded ', 'two  spaces', 'quote"d', 'x'.repeat(60)],
  ] as const;
  const addresses = [
    ['a@x.test', 'agent.smith@mail.example.org', "o'brien+tag@sub.example.co.uk", 'b@x.test'],
    ['UPPER@Example.ORG', `${'l'.repeat(60)}@x.test`],
  ] as const;
  const subjects = [
    [null, '', 'Hi', 'Hello there', 'Re: hello', 'Status: 3/4 done (75%), next #5!'],
    [
      ' leading space',
      'trailing ',
      'Grüße',
      '=?utf-8?q?x?=',
      'tab\there',
      'x'.repeat(66),
      'x'.repeat(67),
      'x'.repeat(68),
      'x'.repeat(120),
      'semi; colon: "quotes" <angle> (paren)',
    ],
  ] as const;
  const lines = [
    [
      'Hi,',
      '',
      'this is a test.',
      'x'.repeat(76),
      '  indented',
      'tab\tin',
      'trailing  ',
      '> quoted',
      '.',
      'From here',
      '=3D not qp',
    ],
    ['x'.repeat(77), 'ünïcode', 'ctrl\u0001char', 'del\u007f'],
  ] as const;
  const breaks = [['\n', '\r\n'], ['\r']] as const;

  function input(r: () => number): ComposeInput {
    const mailbox = (): Mailbox => ({ name: pick(r, ...names), address: pick(r, ...addresses) });
    const count = r() < 0.7 ? 1 : 2 + Math.floor(r() * 3);
    const body =
      Array.from({ length: 1 + Math.floor(r() * 5) }, () => pick(r, ...lines)).join(pick(r, ...breaks)) +
      (r() < 0.5 ? pick(r, ...breaks) : '');
    return {
      messageId:
        r() < 0.9 ? `<${Math.floor(r() * 1e9)}.${Math.floor(r() * 1e9)}@x.test>` : `<${'m'.repeat(70)}@x.test>`,
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
      const slow = await nodemailerBytes(mail);
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
    expect((await composeMessage(base)).equals(await nodemailerBytes(base))).toBe(true);
    // A bare Message-ID: nodemailer brackets it, so the long way.
    expect(composePlainText({ ...base, messageId: '1@x.test' })).toBeUndefined();
    for (const other of [
      { html: '<p>x</p>' },
      { text: 'Grüße' },
      { subject: 'Grüße' },
      { cc: [{ name: '', address: 'c@y.test' }] },
      { inReplyTo: '<0@x.test>' },
      { headers: { 'X-Tag': 'a' } },
      {
        attachments: [
          {
            filename: 'a.txt',
            contentType: 'text/plain',
            contentDisposition: 'attachment' as const,
            contentId: null,
            content: Buffer.from('a'),
          },
        ],
      },
      { from: { name: 'Doe, Jane', address: 'agent@x.test' } },
    ]) {
      const mail = { ...base, ...other };
      expect(composePlainText(mail), JSON.stringify(other)).toBeUndefined();
      // The long way: the same bytes as nodemailer's, but for the random multipart boundaries.
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

  it.each([
    '',
    'plain',
    'a@',
    '@b.org',
    'a@b',
    'a..b@c.org',
    '.a@c.org',
    'a@-b.org',
    'a@b..org',
    'a@b.123',
    'a b@c.org',
    'Jane <a@b.org',
    'Jane a@b.org>',
    'x@y.org\r\nBcc: z@w.org',
    `${'a'.repeat(65)}@b.org`,
    'Ja"ne <a@b.org>',
    'a@bü cher.test',
    'a@-bücher.test',
    'a@x。-bücher.test',
    'a@bücher-.test',
    'a@bücher.123',
  ])('refuses %j', (input) => {
    expect(parseMailbox(input)).toBeUndefined();
  });

  it('accepts a one-label domain only when it is local', () => {
    expect(isValidAddress('a@localhost')).toBe(false);
    expect(isValidAddress('a@localhost', ['localhost'])).toBe(true);
  });

  it('splits lists at commas outside quotes and brackets', () => {
    expect(splitAddressList('a@x.org, "Doe, J" <j@x.org>; b@x.org,')).toEqual([
      'a@x.org',
      '"Doe, J" <j@x.org>',
      'b@x.org',
    ]);
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

  it('previews what collapsing the whole text would give, reading only a prefix of long HTML (generated inputs)', () => {
    const reference = (text: string | null, html: string | null) => {
      const source = text?.trim() ? text : html ? htmlToPlainText(html) : '';
      return Array.from(source.replace(/\s+/g, ' ').trim()).slice(0, 200).join('') || null;
    };
    const r = prng(20261123);
    const pieces = [
      '<p>',
      '</p>',
      '<br>',
      ' ',
      '\n\t ',
      '&amp;',
      '&#x41;',
      '&#128512;',
      '&nosuch;',
      'Grüße',
      '😀',
      'word',
      'x'.repeat(300),
      '<b class="a">',
      '<script>var a = "<p>hidden</p>";</script>',
      '<style>p { color: red }</style>',
      '<head><title>t</title></head>',
      '<header>shown</header>',
      '\u00a0',
      '\u2028',
    ];
    const fill = (length: number) => {
      let out = '';
      while (out.length < length) out += pieces[Math.floor(r() * pieces.length)] as string;
      return out;
    };
    for (let i = 0; i < 300; i++) {
      // Something that straddles the first prefix's end (16 KiB), or the second's (64 KiB).
      const at = (r() < 0.5 ? 16 * 1024 : 64 * 1024) - Math.floor(r() * (r() < 0.5 ? 12 : 400));
      const straddling = [
        '<script>' + 'secret '.repeat(200) + '</script>',
        '<span title="x">',
        '&#x1F600;',
        '&amp;',
        ' '.repeat(500),
        '<style>',
        '<SCRIPT type="x">a</script >',
      ][Math.floor(r() * 7)] as string;
      const sparse = r() < 0.5;
      const head = sparse ? ' '.repeat(at - 50) + fill(50) : fill(at);
      const html = head.slice(0, at) + straddling + fill(Math.floor(r() * 70_000));
      expect(previewOf(null, html), `case ${i}`).toBe(reference(null, html));
      const text = r() < 0.5 ? html : ' \n'.repeat(Math.floor(r() * 1000)) + fill(Math.floor(r() * 2000));
      expect(previewOf(text, null), `text case ${i}`).toBe(reference(text, null));
    }
    // An entity and a tag cut by the first prefix (16 KiB), right after 198 visible characters.
    for (const cut of ['&#x00000041;', '<span title="a long attribute">']) {
      const html = `${' '.repeat(16 * 1024 - 198 - 6)}${'a'.repeat(198)}${cut}${'b'.repeat(300)}`;
      expect(previewOf(null, html), cut).toBe(reference(null, html));
    }
    expect(previewOf('  ', null)).toBeNull();
    expect(previewOf(null, '<script>only</script>')).toBeNull();
  });

  it('cuts quoted history from replies', () => {
    expect(extractNewText('Thanks!\n\nOn Mon, 1 Jan 2024 at 10:00, Bob <b@x.org> wrote:\n> hi\n> there')).toBe(
      'Thanks!',
    );
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
