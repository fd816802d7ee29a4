import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AgentMailError } from 'agentmail';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { call, enc, expectError, organization, unique } from './fixtures.js';

const MiB = 1024 * 1024;
const pdf = Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.alloc(300 * 1024, 0x5a)]);

/**
 * A file server on loopback: what attachment URLs point at. `/big/<n>` sends n bytes with a
 * Content-Length, `/chunked/<n>` the same without one; `/hang` never answers.
 */
async function startFileServer(): Promise<{ url: string; hits: string[]; close(): Promise<void> }> {
  const hits: string[] = [];
  const open = new Set<ServerResponse>();
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const path = req.url ?? '/';
    hits.push(path);
    const size = /^\/(big|chunked)\/(\d+)/.exec(path);
    if (path === '/files/report.pdf') {
      res.writeHead(200, { 'content-type': 'application/pdf', 'content-length': pdf.length });
      res.end(pdf);
    } else if (path === '/download?id=7') {
      res.writeHead(200, {
        'content-type': 'text/csv; charset=utf-8',
        'content-disposition': `attachment; filename="fallback.csv"; filename*=UTF-8''Zahlen%20%C3%BC.csv`,
      });
      res.end('a,b\n1,2\n');
    } else if (path.startsWith('/redirect/')) {
      // /redirect/<n>/<target>: n more redirects, then the target (an absolute URL when it has a scheme).
      const [, , n, ...rest] = path.split('/');
      const target = decodeURIComponent(rest.join('/'));
      const next = Number(n) > 1 ? `/redirect/${Number(n) - 1}/${rest.join('/')}` : target;
      res.writeHead(302, { location: next });
      res.end();
    } else if (size) {
      const n = Number(size[2]);
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        ...(size[1] === 'big' ? { 'content-length': n } : {}),
      });
      const piece = Buffer.alloc(MiB, 0x61);
      let left = n;
      const write = () => {
        while (left > 0) {
          const chunk = piece.subarray(0, Math.min(left, piece.length));
          left -= chunk.length;
          if (!res.write(chunk)) return void res.once('drain', write);
        }
        res.end();
      };
      write();
      res.on('error', () => undefined);
    } else if (path === '/hang') {
      open.add(res);
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not here');
    }
  };
  const server: Server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    async close() {
      for (const res of open) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe.each(dialects)('%s: attachments by url', (dialect) => {
  let files: Awaited<ReturnType<typeof startFileServer>>;
  let server: InboxTestServer;
  let org: Awaited<ReturnType<typeof organization>>;
  let sender: string;
  let rcpt: string;
  const sendPath = () => `/v0/inboxes/${enc(sender)}/messages/send`;

  beforeAll(async () => {
    files = await startFileServer();
    // The test harness allows private addresses (INBOX_WEBHOOK_ALLOW_PRIVATE=true): the file server is on loopback.
    // Short enough that `/hang` times out quickly, long enough for 30 MiB over loopback on a busy
    // machine (500 ms was not: the 30 MiB case failed under load).
    server = await startInboxServer({ dialect, env: { INBOX_ATTACHMENT_URL_TIMEOUT_MS: '5000' } });
    org = await organization(server, [unique('url'), unique('rcpt')]);
    [sender, rcpt] = org.inboxes as [string, string];
  });
  afterAll(async () => {
    await server?.close();
    await files?.close();
  });

  /** The recipient's copy of a sent message: its attachments, and the bytes of each. */
  async function received(messageId: string) {
    const message = await org.client.inboxes.messages.get(rcpt, messageId);
    const out = [];
    for (const a of message.attachments ?? []) {
      const link = await call(
        server.url,
        org.key,
        'GET',
        `/v0/inboxes/${enc(rcpt)}/messages/${enc(messageId)}/attachments/${a.attachmentId}`,
      );
      const bytes = Buffer.from(await (await fetch(link.body.download_url)).arrayBuffer());
      out.push({ filename: a.filename, contentType: a.contentType, size: a.size, bytes });
    }
    return out;
  }

  it('sends the file a url names (SDK): its bytes, its content type, its name from the path', async () => {
    const sent = await org.client.inboxes.messages.send(sender, {
      to: rcpt,
      subject: 'by url',
      text: 'see attached',
      attachments: [{ url: `${files.url}/files/report.pdf` }],
    });
    const [got] = await received(sent.messageId);
    expect(got).toMatchObject({ filename: 'report.pdf', contentType: 'application/pdf', size: pdf.length });
    expect(got?.bytes.equals(pdf)).toBe(true);
  });

  it('follows redirects, names the file after Content-Disposition, and keeps what the caller gave', async () => {
    const sent = await org.client.inboxes.messages.send(sender, {
      to: rcpt,
      text: 'two files',
      attachments: [
        { url: `${files.url}/redirect/2/${enc('/download?id=7')}` },
        { url: `${files.url}/files/report.pdf`, filename: 'mine.pdf', contentType: 'application/x-mine' },
        { filename: 'inline.txt', content: Buffer.from('inline').toString('base64') },
      ],
    });
    const got = await received(sent.messageId);
    expect(got.map(({ bytes: _b, ...meta }) => meta)).toEqual([
      { filename: 'Zahlen ü.csv', contentType: 'text/csv; charset=utf-8', size: 8 },
      { filename: 'mine.pdf', contentType: 'application/x-mine', size: pdf.length },
      { filename: 'inline.txt', contentType: 'text/plain', size: 6 },
    ]);
    expect(got[0]?.bytes.toString()).toBe('a,b\n1,2\n');
  });

  it('fetches for replies, forwards and drafts (create, update, send) alike', async () => {
    const first = await org.client.inboxes.messages.send(sender, { to: rcpt, subject: 'hello', text: 'hi' });
    const copy = (await org.client.inboxes.messages.list(rcpt)).messages.find((m) => m.subject === 'hello');
    const reply = await org.client.inboxes.messages.reply(rcpt, copy?.messageId as string, {
      text: 'answer',
      attachments: [{ url: `${files.url}/files/report.pdf` }],
    });
    expect((await org.client.inboxes.messages.get(rcpt, reply.messageId)).attachments?.[0]?.size).toBe(pdf.length);
    const forward = await org.client.inboxes.messages.forward(sender, first.messageId, {
      to: rcpt,
      attachments: [{ url: `${files.url}/files/report.pdf`, filename: 'fw.pdf' }],
    });
    expect((await received(forward.messageId)).map((a) => a.filename)).toEqual(['fw.pdf']);

    const draft = await org.client.inboxes.drafts.create(sender, {
      to: [rcpt],
      text: 'draft',
      attachments: [{ url: `${files.url}/files/report.pdf` }],
    });
    expect(draft.attachments?.map((a) => [a.filename, a.size])).toEqual([['report.pdf', pdf.length]]);
    const updated = await call(server.url, org.key, 'PATCH', `/v0/inboxes/${enc(sender)}/drafts/${draft.draftId}`, {
      add_attachments: [{ url: `${files.url}/download?id=7` }],
    });
    expect(updated.status).toBe(200);
    const sentDraft = await org.client.inboxes.drafts.send(sender, draft.draftId, {});
    const got = await received(sentDraft.messageId);
    expect(got.map((a) => [a.filename, a.size])).toEqual([
      ['report.pdf', pdf.length],
      ['Zahlen ü.csv', 8],
    ]);
    expect(got[0]?.bytes.equals(pdf)).toBe(true);
  });

  it('takes 30 MiB by url (INBOX_ATTACHMENT_URL_MAX_BYTES), and refuses a byte more, with or without Content-Length', async () => {
    const limit = 30 * MiB;
    const sent = await org.client.inboxes.messages.send(sender, {
      to: sender,
      subject: 'thirty',
      attachments: [{ url: `${files.url}/big/${limit}`, filename: 'big.bin' }],
    });
    const copy = await org.client.inboxes.messages.get(sender, sent.messageId);
    expect(copy.attachments?.map((a) => a.size)).toEqual([limit]);
    for (const kind of ['big', 'chunked']) {
      expectError(
        await call(server.url, org.key, 'POST', sendPath(), {
          to: rcpt,
          attachments: [{ url: `${files.url}/${kind}/${limit + 1}` }],
        }),
        400,
        'validation_error',
        'ATTACHMENT_URL_TOO_LARGE',
        'attachments',
      );
    }
    // The budget is the request's: two files of 16 MiB are over it together.
    const twice = await call(server.url, org.key, 'POST', sendPath(), {
      to: rcpt,
      attachments: [{ url: `${files.url}/big/${16 * MiB}` }, { url: `${files.url}/chunked/${16 * MiB}` }],
    });
    expectError(twice, 400, 'validation_error', 'ATTACHMENT_URL_TOO_LARGE', 'attachments');
    expect(twice.body.error.details.index).toBe(1);
  });

  it('answers each failure with a 400 of its own, and stores nothing', async () => {
    const cases: [string, string, number?][] = [
      [`${files.url}/missing.pdf`, 'ATTACHMENT_URL_STATUS', 404],
      [`${files.url}/hang`, 'ATTACHMENT_URL_TIMEOUT'],
      [`http://127.0.0.1:9/closed`, 'ATTACHMENT_URL_UNREACHABLE'],
      [`${files.url}/redirect/6/${enc('/files/report.pdf')}`, 'ATTACHMENT_URL_TOO_MANY_REDIRECTS'],
      [`${files.url}/redirect/1/${enc('ftp://127.0.0.1/x')}`, 'ATTACHMENT_URL_INVALID'],
      ['not a url', 'ATTACHMENT_URL_INVALID'],
      ['file:///etc/passwd', 'ATTACHMENT_URL_INVALID'],
    ];
    for (const [url, code, status] of cases) {
      const res = await call(server.url, org.key, 'POST', sendPath(), {
        to: rcpt,
        subject: 'failing',
        attachments: [{ filename: 'ok.txt', content: 'b2s=' }, { url }],
      });
      expectError(res, 400, 'validation_error', code, 'attachments');
      expect(res.body.error.details).toMatchObject({ index: 1, ...(status ? { status } : {}) });
    }
    // Through the SDK: its error carries the same body.
    const err = await org.client.inboxes.messages
      .send(sender, { to: rcpt, attachments: [{ url: `${files.url}/missing.pdf` }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentMailError);
    expect((err as AgentMailError).statusCode).toBe(400);
    expect((err as AgentMailError).body).toMatchObject({ error: { details: { code: 'ATTACHMENT_URL_STATUS' } } });
    expect((await org.client.inboxes.messages.list(rcpt)).messages.some((m) => m.subject === 'failing')).toBe(false);
  });

  it('checks the rest of the request before it fetches anything, and the key before that', async () => {
    const before = files.hits.length;
    expectError(
      await call(server.url, org.key, 'POST', sendPath(), {
        to: 'not an address',
        attachments: [{ url: `${files.url}/files/report.pdf` }],
      }),
      400,
      'validation_error',
      'INVALID_EMAIL',
      'to',
    );
    expectError(
      await call(server.url, org.key, 'POST', sendPath(), {
        to: rcpt,
        attachments: [{ url: `${files.url}/files/report.pdf`, content: 'eA==' }],
      }),
      400,
      'validation_error',
      'INVALID_ATTACHMENT',
      'attachments',
    );
    const other = await organization(server, [unique('other')]);
    expectError(
      await call(server.url, other.key, 'POST', sendPath(), {
        to: rcpt,
        attachments: [{ url: `${files.url}/files/report.pdf` }],
      }),
      404,
      'not_found',
      'INBOX_NOT_FOUND',
    );
    expectError(
      await call(server.url, org.key, 'PATCH', `/v0/inboxes/${enc(sender)}/drafts/no-such-draft`, {
        add_attachments: [{ url: `${files.url}/files/report.pdf` }],
      }),
      404,
      'not_found',
      'DRAFT_NOT_FOUND',
    );
    expect(files.hits.length).toBe(before);
  });
});

describe.each(dialects)('%s: attachment urls under the egress policy', (dialect) => {
  let files: Awaited<ReturnType<typeof startFileServer>>;
  let server: InboxTestServer;
  let org: Awaited<ReturnType<typeof organization>>;

  beforeAll(async () => {
    files = await startFileServer();
    server = await startInboxServer({ dialect, env: { INBOX_WEBHOOK_ALLOW_PRIVATE: 'false' } });
    org = await organization(server, [unique('pub'), unique('rcpt')]);
  });
  afterAll(async () => {
    await server?.close();
    await files?.close();
  });

  it('refuses private, loopback and link-local targets, and redirects to them, without connecting', async () => {
    const [sender, rcpt] = org.inboxes as [string, string];
    const port = new URL(files.url).port;
    for (const url of [
      `${files.url}/files/report.pdf`,
      `${files.url}/redirect/1/${enc('http://169.254.169.254/latest/meta-data')}`,
      `http://localhost:${port}/files/report.pdf`,
      `http://[::1]:${port}/files/report.pdf`,
      `http://[::ffff:127.0.0.1]:${port}/files/report.pdf`,
      'http://10.0.0.1/x',
    ]) {
      const res = await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(sender)}/messages/send`, {
        to: rcpt,
        attachments: [{ url }],
      });
      expectError(res, 400, 'validation_error', 'ATTACHMENT_URL_NOT_ALLOWED', 'attachments');
    }
    const err = await org.client.inboxes.drafts
      .create(sender, { to: [rcpt], attachments: [{ url: `${files.url}/files/report.pdf` }] })
      .catch((e: unknown) => e);
    expect((err as AgentMailError).body).toMatchObject({ error: { details: { code: 'ATTACHMENT_URL_NOT_ALLOWED' } } });
    expect(files.hits).toEqual([]);
  });
});
