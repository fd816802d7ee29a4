import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import type { Message } from '../core/message.js';
import { ListMessagesResponse, messageListJson, toMessageItemResponse } from '../core/message.wire.js';
import { messageFixture } from '../../../test/support/message-fixture.js';

const base: Message = { ...messageFixture, text: 'body that lists leave out' };

/** Every optional field in turn, and strings that JSON must escape. */
const messages: Message[] = [
  base,
  { ...base, pk: 2, cc: ['c@y.test', '"Doe, J" <j@y.test>'], bcc: ['b@y.test'], subject: null, preview: null },
  {
    ...base,
    pk: 3,
    attachments: [
      {
        attachmentId: 'a1',
        filename: 'report.pdf',
        size: 10,
        contentType: 'application/pdf',
        contentDisposition: 'attachment',
        contentId: null,
      },
      {
        attachmentId: 'a2',
        filename: null,
        size: 0,
        contentType: null,
        contentDisposition: null,
        contentId: 'logo@x.test',
      },
      {
        attachmentId: 'a3',
        filename: 'ü "quoted" \\ back.png',
        size: 3,
        contentType: 'image/png',
        contentDisposition: 'inline',
        contentId: 'c3',
      },
    ],
  },
  {
    ...base,
    pk: 4,
    inReplyTo: '<0@x.test>',
    references: ['<a@x.test>', '<0@x.test>'],
    headers: { 'X-Tag': 'a', 'X-Other': 'line "two"' },
  },
  {
    ...base,
    pk: 5,
    headers: {},
    labels: [],
    subject: 'tab\there, quote " backslash \\ nul \u0000 del \u007f sep \u2028 emoji 😀 lone \ud800 end',
    preview: '</script><!--',
  },
  { ...base, pk: 6, subject: '', preview: '', from: 'Jürgen Müller <j@y.test>', size: 0 },
];

/** What the route's response schema makes of the same page (Fastify's compiled serializer). */
async function serialized(page: {
  items: readonly Message[];
  limit: number;
  nextPageToken: string | undefined;
}): Promise<string> {
  const app = Fastify();
  app.get('/', { schema: { response: { 200: ListMessagesResponse } } }, () => ({
    count: page.items.length,
    limit: page.limit,
    ...(page.nextPageToken ? { next_page_token: page.nextPageToken } : {}),
    messages: page.items.map(toMessageItemResponse),
  }));
  try {
    return (await app.inject({ url: '/' })).body;
  } finally {
    await app.close();
  }
}

describe('messageListJson', () => {
  it('writes the bytes the response schema would write, for every optional field and escape', async () => {
    for (const page of [
      { items: messages, limit: 50, nextPageToken: 'WyIyMDI2LTExLTIxVDEwOjAwOjAwLjAwMFoiLDYsImRlc2MiXQ' },
      { items: messages.slice(0, 1), limit: 1, nextPageToken: undefined },
      { items: [], limit: 10, nextPageToken: undefined },
    ]) {
      const fast = messageListJson(page);
      expect(fast).toBe(await serialized(page));
      expect(JSON.parse(fast)).toMatchObject({ count: page.items.length, limit: page.limit });
    }
  });

  it('leaves out what a list item does not carry (bodies, reply_to, internal keys)', () => {
    const [item] = (
      JSON.parse(messageListJson({ items: [base], limit: 1, nextPageToken: undefined })) as {
        messages: Record<string, unknown>[];
      }
    ).messages;
    expect(Object.keys(item ?? {}).sort()).toEqual([
      'created_at',
      'from',
      'inbox_id',
      'labels',
      'message_id',
      'preview',
      'size',
      'subject',
      'thread_id',
      'timestamp',
      'to',
      'updated_at',
    ]);
  });
});
