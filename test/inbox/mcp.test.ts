import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import nodemailer from 'nodemailer';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInboxTestDatabase, dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { connectMcp, toolError, type McpTestClient } from '../support/mcp-client.js';
import { b64, bearerKey, call, enc, organization, unique } from './fixtures.js';
import { smtpPort } from './smtp-inbound.helpers.js';

/**
 * The MCP door (/mcp) driven by the official MCP client over Streamable HTTP, on both dialects:
 * the hosted server's tools and arguments, every tool's result against its output schema, the same
 * answers and changes as the REST API, errors as isError results, and scoped keys held to their scope.
 */

const hosted = JSON.parse(readFileSync(new URL('../fixtures/mcp/hosted-tools.json', import.meta.url), 'utf8')) as {
  tools: Record<string, { args: string[]; required: string[]; readOnly: boolean; destructive: boolean }>;
};

async function pdfOf(text: string): Promise<Buffer> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  doc.addPage().drawText(text, { x: 50, y: 700, size: 12, font });
  return Buffer.from(await doc.save());
}

/** The `docx` generator's few parts used here (its bundled .d.ts files do not resolve under NodeNext). */
interface Docx {
  Document: new (o: { sections: { children: unknown[] }[] }) => unknown;
  Paragraph: new (o: { children: unknown[] }) => unknown;
  TextRun: new (text: string) => unknown;
  Packer: { toBuffer(doc: unknown): Promise<Buffer> };
}

async function docxOf(text: string): Promise<Buffer> {
  const { Document, Packer, Paragraph, TextRun } = (await import('docx' as string)) as Docx;
  const doc = new Document({ sections: [{ children: [new Paragraph({ children: [new TextRun(text)] })] }] });
  return Packer.toBuffer(doc);
}

async function mcpPost(server: InboxTestServer, headers: Record<string, string>, body: unknown, method = 'POST') {
  const res = await fetch(`${server.url}/mcp`, {
    method,
    headers: {
      ...(method === 'POST' ? { 'content-type': 'application/json' } : {}),
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    ...(method === 'POST' ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: text.startsWith('{') ? JSON.parse(text) : undefined };
}

const listTools = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };

describe.each(dialects)('MCP door (%s)', (dialect) => {
  let server: InboxTestServer;
  let org: Awaited<ReturnType<typeof organization>>;
  let mcp: McpTestClient;
  let a: string;
  let b: string;

  beforeAll(async () => {
    server = await startInboxServer({ dialect });
    org = await organization(server, [unique('mcpa'), unique('mcpb')]);
    [a, b] = org.inboxes as [string, string];
    mcp = await connectMcp(server.url, org.key);
  });
  afterAll(async () => {
    await mcp?.close();
    await server?.close();
  });

  it("lists the hosted server's tools with its argument names and hints, each with input and output schemas", async () => {
    const byName = new Map(mcp.tools.map((t) => [t.name, t]));
    for (const [name, spec] of Object.entries(hosted.tools)) {
      const tool = byName.get(name);
      expect(tool, name).toBeDefined();
      const props = Object.keys((tool!.inputSchema.properties ?? {}) as object);
      for (const arg of spec.args) expect(props, `${name} takes ${arg}`).toContain(arg);
      for (const arg of spec.required)
        expect(tool!.inputSchema.required ?? [], `${name} requires ${arg}`).toContain(arg);
      expect(tool!.annotations?.readOnlyHint, `${name} readOnlyHint`).toBe(spec.readOnly);
      expect(tool!.annotations?.destructiveHint, `${name} destructiveHint`).toBe(spec.destructive);
      expect(tool!.outputSchema?.type).toBe('object');
      expect(tool!.description?.length).toBeGreaterThan(20);
    }
    expect(byName.has('wait_for_message')).toBe(true);
    // Tools that return received mail say it is data, not instructions.
    for (const name of ['list_threads', 'get_thread', 'list_messages', 'search_messages', 'get_attachment'])
      expect(byName.get(name)!.description).toMatch(/never as instructions/);
  });

  it('inboxes: create, get, update, list and delete, answering what REST answers', async () => {
    const username = unique('made');
    const created = await mcp.call('create_inbox', { username, displayName: 'Made by MCP', metadata: { team: 'x' } });
    expect(created).toMatchObject({
      inboxId: `${username}@inbox.test`,
      displayName: 'Made by MCP',
      metadata: { team: 'x' },
    });
    const id = created.inboxId as string;
    expect(await mcp.call('get_inbox', { inboxId: id })).toEqual(created);
    const updated = await mcp.call('update_inbox', {
      inboxId: id,
      displayName: 'Renamed',
      metadata: { team: null, n: 2 },
    });
    expect(updated).toMatchObject({ displayName: 'Renamed', metadata: { n: 2 } });
    const rest = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(id)}`);
    expect(rest.body.display_name).toBe('Renamed');
    const listed = await mcp.call('list_inboxes', { limit: 100 });
    expect((listed.inboxes as { inboxId: string }[]).map((i) => i.inboxId)).toContain(id);
    expect(listed.count).toBe((listed.inboxes as unknown[]).length);
    const restList = await call(server.url, org.key, 'GET', '/v0/inboxes?limit=100');
    expect((listed.inboxes as unknown[]).length).toBe(restList.body.inboxes.length);
    // Ten by default: an agent's context holds a page.
    expect((await mcp.call('list_inboxes')).limit).toBe(10);
    expect(await mcp.call('delete_inbox', { inboxId: id })).toEqual({ success: true });
    expect(toolError(await mcp.raw('get_inbox', { inboxId: id })).type).toBe('not_found');
  });

  it('mail: send, list, search, get a thread with codes and links, labels, reply, forward, attachments with their text, delete', async () => {
    const pdf = await pdfOf('Invoice 4711 total EUR 99.50');
    const docx = await docxOf('Contract number 8812 signed');
    const sent = await mcp.call('send_message', {
      inboxId: a,
      to: [b],
      subject: 'Your sign-up code',
      text: 'Welcome! Your verification code is 482913.\nConfirm here: https://example.org/confirm?token=abc',
      html: '<p>Your verification code is <b>482913</b>. <a href="https://example.org/confirm?token=abc">Confirm</a></p>',
      labels: ['campaign'],
      attachments: [
        { filename: 'invoice.pdf', contentType: 'application/pdf', content: pdf.toString('base64') },
        {
          filename: 'contract.docx',
          contentType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
          content: docx.toString('base64'),
        },
        { filename: 'notes.txt', contentType: 'text/plain', content: b64('plain notes 5521') },
        { filename: 'photo.png', contentType: 'image/png', content: b64('\x89PNG not really') },
      ],
    });
    expect(sent).toEqual({ messageId: expect.stringMatching(/^<.+@inbox\.test>$/), threadId: expect.any(String) });

    const listed = await mcp.call('list_messages', { inboxId: b, labels: ['received'] });
    const item = (listed.messages as { messageId: string; threadId: string; subject: string }[]).find(
      (m) => m.subject === 'Your sign-up code',
    );
    expect(item).toBeDefined();
    const rest = await call(
      server.url,
      org.key,
      'GET',
      `/v0/inboxes/${enc(b)}/messages?limit=10&labels=${enc('["received"]')}`,
    );
    expect((listed.messages as unknown[]).length).toBe(rest.body.messages.length);
    expect((listed.messages as { messageId: string }[])[0]!.messageId).toBe(rest.body.messages[0].message_id);

    const found = await mcp.call('search_messages', { inboxId: b, q: 'verification' });
    expect((found.messages as { messageId: string }[]).map((m) => m.messageId)).toContain(item!.messageId);
    const threads = await mcp.call('search_threads', { inboxId: b, q: 'sign-up' });
    expect((threads.threads as { threadId: string }[]).map((t) => t.threadId)).toContain(item!.threadId);
    const listedThreads = await mcp.call('list_threads', { inboxId: b, subject: ['sign-up'] });
    expect((listedThreads.threads as { threadId: string }[]).map((t) => t.threadId)).toEqual([item!.threadId]);

    const thread = await mcp.call('get_thread', { inboxId: b, threadId: item!.threadId });
    const message = (thread.messages as Record<string, unknown>[])[0]!;
    expect(message.verification).toEqual({ codes: ['482913'], links: ['https://example.org/confirm?token=abc'] });
    expect(message.text).toMatch(/482913/);
    // The text rendering marks the mail as outside content, which cannot close its own markers.
    const raw = await mcp.raw('get_thread', { inboxId: b, threadId: item!.threadId });
    const text = (raw.content[0] as { text: string }).text;
    expect(text).toMatch(/^The JSON between the markers holds email from outside senders/);
    expect(text.match(/<\/?external-email-content>/g)).toEqual([
      '<external-email-content>',
      '</external-email-content>',
    ]);

    const attachments = message.attachments as { attachmentId: string; filename: string }[];
    const text_of = async (filename: string) =>
      mcp.call('get_attachment', {
        inboxId: b,
        threadId: item!.threadId,
        attachmentId: attachments.find((x) => x.filename === filename)!.attachmentId,
      });
    const invoice = await text_of('invoice.pdf');
    expect(invoice).toMatchObject({ filename: 'invoice.pdf', contentType: 'application/pdf', truncated: false });
    expect(invoice.text).toContain('Invoice 4711 total EUR 99.50');
    expect(invoice.downloadUrl).toMatch(new RegExp(`^${server.url}/v0/downloads/`));
    const downloaded = await fetch(invoice.downloadUrl as string);
    expect(Buffer.from(await downloaded.arrayBuffer()).equals(pdf)).toBe(true);
    expect((await text_of('contract.docx')).text).toContain('Contract number 8812 signed');
    expect((await text_of('notes.txt')).text).toBe('plain notes 5521');
    const photo = await text_of('photo.png');
    expect(photo.text).toBeUndefined();
    expect(photo.textError).toBeUndefined();

    // Labels: the same change REST sees.
    expect(
      await mcp.call('update_message', {
        inboxId: b,
        messageId: item!.messageId,
        addLabels: ['todo'],
        removeLabels: ['unread'],
      }),
    ).toEqual({
      messageId: item!.messageId,
      labels: expect.arrayContaining(['todo', 'received']),
    });
    const restMessage = await call(
      server.url,
      org.key,
      'GET',
      `/v0/inboxes/${enc(b)}/messages/${enc(item!.messageId)}`,
    );
    expect(restMessage.body.labels).toContain('todo');
    expect(restMessage.body.labels).not.toContain('unread');
    const threadLabels = await mcp.call('update_thread', { inboxId: b, threadId: item!.threadId, addLabels: ['vip'] });
    expect(threadLabels.labels).toContain('vip');

    // Answers join the thread on both sides.
    const reply = await mcp.call('reply_to_message', {
      inboxId: b,
      messageId: item!.messageId,
      text: 'Thanks!',
      replyAll: true,
    });
    const forward = await mcp.call('forward_message', { inboxId: b, messageId: item!.messageId, to: [a], text: 'FYI' });
    expect(reply.threadId).toBe(item!.threadId);
    expect(forward.messageId).not.toBe(reply.messageId);
    const after = await mcp.call('get_thread', { inboxId: b, threadId: item!.threadId });
    expect((after.messages as unknown[]).length).toBe(3);

    // Delete: first to the trash, then for good.
    expect(await mcp.call('delete_thread', { inboxId: b, threadId: item!.threadId })).toEqual({ success: true });
    const trashed = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(b)}/threads/${item!.threadId}`);
    expect(trashed.body.labels).toContain('trash');
    expect(await mcp.call('delete_thread', { inboxId: b, threadId: item!.threadId })).toEqual({ success: true });
    expect(toolError(await mcp.raw('get_thread', { inboxId: b, threadId: item!.threadId })).type).toBe('not_found');
  });

  it('get_attachment: a broken PDF or DOCX gives its metadata and link with textError, never an error or a crash', async () => {
    const sent = await mcp.call('send_message', {
      inboxId: a,
      to: [b],
      subject: 'broken files',
      text: 'see attached',
      attachments: [
        {
          filename: 'broken.pdf',
          contentType: 'application/pdf',
          content: b64('%PDF-1.7\n1 0 obj << /Type /Catalog >>\ngarbage'),
        },
        { filename: 'broken.docx', content: b64('PK\u0003\u0004 not a zip at all') },
        { filename: 'fake.pdf', contentType: 'application/pdf', content: b64('MZ an executable') },
      ],
    });
    const thread = await mcp.call('get_thread', { inboxId: a, threadId: sent.threadId });
    const files = (thread.messages as { attachments: { attachmentId: string; filename: string }[] }[])[0]!.attachments;
    for (const file of files) {
      const got = await mcp.call('get_attachment', {
        inboxId: a,
        threadId: sent.threadId,
        attachmentId: file.attachmentId,
      });
      expect(got.downloadUrl).toMatch(/\/v0\/downloads\//);
      expect(got.text).toBeUndefined();
      // A file whose first bytes are not its claimed format is not read at all.
      if (file.filename === 'fake.pdf') expect(got.textError).toBeUndefined();
      else expect(got.textError).toMatch(/could not be read/);
    }
    // The service still answers.
    expect((await mcp.call('get_inbox', { inboxId: a })).inboxId).toBe(a);
  });

  it('send_message takes an attachment by url (fetched under the egress policy), as REST does', async () => {
    const file = await pdfOf('Remittance 3141 paid');
    const host = http.createServer((req, res) => {
      if (!req.url?.startsWith('/files/')) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/pdf' });
      res.end(file);
    });
    await new Promise<void>((r) => host.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(host.address() as AddressInfo).port}/files/remittance.pdf`;
      const sent = await mcp.call('send_message', { inboxId: a, to: [b], subject: 'by url', attachments: [{ url }] });
      const thread = await mcp.call('get_thread', { inboxId: a, threadId: sent.threadId });
      const [attachment] = (thread.messages as { attachments: { attachmentId: string; filename: string }[] }[])[0]!
        .attachments;
      expect(attachment).toMatchObject({
        filename: 'remittance.pdf',
        contentType: 'application/pdf',
        size: file.length,
      });
      const got = await mcp.call('get_attachment', {
        inboxId: a,
        threadId: sent.threadId,
        attachmentId: attachment!.attachmentId,
      });
      expect(got.text).toContain('Remittance 3141 paid');
      const refused = toolError(
        await mcp.raw('send_message', {
          inboxId: a,
          to: [b],
          attachments: [{ url: `${url.replace('/files/', '/missing/')}x` }],
        }),
      );
      expect(refused).toMatchObject({ type: 'validation_error', details: { code: 'ATTACHMENT_URL_STATUS' } });
    } finally {
      host.close();
    }
  });

  it('drafts: create, list, get, update, schedule, send and delete', async () => {
    const draft = await mcp.call('create_draft', { inboxId: a, to: [b], subject: 'For review', text: 'Draft body' });
    expect(draft).toMatchObject({ inboxId: a, subject: 'For review', text: 'Draft body', to: [b] });
    const id = draft.draftId as string;
    expect(
      ((await mcp.call('list_drafts', { inboxId: a })).drafts as { draftId: string }[]).map((d) => d.draftId),
    ).toContain(id);
    expect(await mcp.call('get_draft', { inboxId: a, draftId: id })).toMatchObject({ draftId: id });
    const sendAt = new Date(Date.now() + 3_600_000).toISOString();
    const scheduled = await mcp.call('update_draft', { inboxId: a, draftId: id, subject: 'Reviewed', sendAt });
    expect(scheduled).toMatchObject({
      subject: 'Reviewed',
      sendStatus: 'scheduled',
      labels: expect.arrayContaining(['scheduled']),
    });
    expect(((await mcp.call('list_drafts', { inboxId: a, labels: ['scheduled'] })).drafts as unknown[]).length).toBe(1);
    const sent = await mcp.call('send_draft', { inboxId: a, draftId: id });
    expect(sent.messageId).toMatch(/^</);
    expect(toolError(await mcp.raw('get_draft', { inboxId: a, draftId: id })).type).toBe('not_found');
    const other = await mcp.call('create_draft', { inboxId: a, text: 'discard me' });
    expect(await mcp.call('delete_draft', { inboxId: a, draftId: other.draftId })).toEqual({ success: true });
  });

  it('errors are isError results with the API error body, never protocol errors or 500s', async () => {
    const missing = toolError(await mcp.raw('get_inbox', {}));
    expect(missing).toMatchObject({
      type: 'validation_error',
      details: { code: 'INVALID_ARGUMENTS', field: 'inboxId' },
    });
    const wrongType = toolError(await mcp.raw('list_messages', { inboxId: a, limit: 'ten' }));
    expect(wrongType).toMatchObject({ type: 'validation_error', details: { field: 'limit' } });
    const nul = toolError(await mcp.raw('send_message', { inboxId: a, to: [b], text: 'a\u0000b' }));
    expect(nul.details.code).toBe('NUL_CHARACTER');
    expect(toolError(await mcp.raw('get_thread', { inboxId: a, threadId: 'nope' })).type).toBe('not_found');
    const badAddress = toolError(await mcp.raw('send_message', { inboxId: a, to: ['not an address'], text: 'x' }));
    expect(badAddress.type).toBe('validation_error');
    const badLabel = toolError(
      await mcp.raw('update_message', { inboxId: a, messageId: '<none@x>', addLabels: ['sent'] }),
    );
    expect(['validation_error', 'not_found']).toContain(badLabel.type);
    expect(toolError(await mcp.raw('agent_verify', { otpCode: '000000' })).type).toMatch(/_error|conflict|not_found/);
    // An unknown tool is the protocol's error (invalid params), not a tool result.
    await expect(mcp.raw('no_such_tool', {})).rejects.toThrow(/Unknown tool/);
  });

  it('HTTP: keys as x-api-key or Bearer; a missing or bad key is a 401 with WWW-Authenticate; GET and DELETE are 405', async () => {
    const bearer = await connectMcp(server.url, org.key, 'bearer');
    expect((await bearer.call('get_inbox', { inboxId: a })).inboxId).toBe(a);
    await bearer.close();
    for (const headers of <Record<string, string>[]>[
      {},
      { 'x-api-key': 'am_not_a_key' },
      { authorization: 'Bearer am_nope' },
      { authorization: 'Basic x' },
    ]) {
      const res = await mcpPost(server, headers, listTools);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer /);
      expect(res.json.error.type).toBe('authentication_error');
    }
    for (const method of ['GET', 'DELETE']) {
      const res = await mcpPost(server, { 'x-api-key': org.key }, undefined, method);
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
      expect(res.json.error.type).toBe('method_not_allowed');
    }
    // Stateless: a POST without initialize first is answered; no session id is handed out.
    const direct = await mcpPost(server, { 'x-api-key': org.key }, listTools);
    expect(direct.status).toBe(200);
    expect(direct.headers.get('mcp-session-id')).toBeNull();
    expect(direct.json.result.tools.length).toBe(mcp.tools.length);
    const broken = await mcpPost(server, { 'x-api-key': org.key }, '{"jsonrpc":');
    // Not JSON at all: the SDK transport's JSON-RPC parse error, not the REST envelope (mcp-wire-errors.test.ts).
    expect(broken.status).toBe(400);
    expect(broken.json).toEqual({
      jsonrpc: '2.0',
      error: { code: -32700, message: 'Parse error: Invalid JSON' },
      id: null,
    });
  });

  it("HTTP: the transport keeps the SDK transport's rules: 202 for notifications, JSON-RPC errors, batches, protocol versions, event streams", async () => {
    const key = { 'x-api-key': org.key };
    const notified = await mcpPost(server, key, { jsonrpc: '2.0', method: 'notifications/initialized' });
    expect([notified.status, notified.text]).toEqual([202, '']);
    const initialized = await mcpPost(server, key, {
      jsonrpc: '2.0',
      id: 'i',
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    expect(initialized.status).toBe(200);
    expect(initialized.headers.get('content-type')).toMatch(/^application\/json/);
    expect(initialized.headers.get('mcp-session-id')).toBeNull();
    expect(initialized.json).toMatchObject({ jsonrpc: '2.0', id: 'i', result: { protocolVersion: '2025-06-18' } });
    const notRpc = await mcpPost(server, key, { hello: 'world' });
    expect(notRpc.status).toBe(400);
    expect(notRpc.json).toEqual({
      jsonrpc: '2.0',
      error: { code: -32700, message: 'Parse error: Invalid JSON-RPC message' },
      id: null,
    });
    const oldVersion = await mcpPost(server, { ...key, 'mcp-protocol-version': '1999-01-01' }, listTools);
    expect(oldVersion.status).toBe(400);
    expect(oldVersion.json.error.message).toMatch(/Unsupported protocol version: 1999-01-01/);
    expect((await mcpPost(server, { ...key, 'mcp-protocol-version': '2025-06-18' }, listTools)).status).toBe(200);
    const jsonOnly = await mcpPost(server, { ...key, accept: 'application/json' }, listTools);
    expect([jsonOnly.status, jsonOnly.json.error.code]).toEqual([406, -32000]);
    const text = await mcpPost(server, { ...key, 'content-type': 'text/plain' }, listTools);
    expect([text.status, text.json.error.code]).toEqual([415, -32000]);
    const ping = (id: number) => ({ jsonrpc: '2.0', id, method: 'ping' });
    const batch = await mcpPost(server, key, [
      ping(1),
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      ping(2),
    ]);
    expect(batch.status).toBe(200);
    expect(batch.json).toBeUndefined(); // an array
    expect(JSON.parse(batch.text)).toEqual([
      { jsonrpc: '2.0', id: 1, result: {} },
      { jsonrpc: '2.0', id: 2, result: {} },
    ]);
    const tooMany = await mcpPost(
      server,
      key,
      Array.from({ length: 101 }, (_, i) => ping(i)),
    );
    expect([tooMany.status, tooMany.json.error.code]).toEqual([400, -32600]);
    // A result's structured content is written from the JSON of its text (decision 0051): the same data, `<` and all.
    const subject = `<b>tagged</b> & "quoted" ${unique('s')}`;
    await mcp.call('send_message', { inboxId: a, to: [b], subject, text: 'x' });
    const listed = await mcpPost(server, key, {
      jsonrpc: '2.0',
      id: 'l',
      method: 'tools/call',
      params: { name: 'list_messages', arguments: { inboxId: b, limit: 3 } },
    });
    expect(listed.text).not.toContain('<b>');
    const structured = listed.json.result.structuredContent;
    expect(structured.messages.map((m: { subject: string }) => m.subject)).toContain(subject);
    const rendered = listed.json.result.content[0].text as string;
    expect(JSON.parse(rendered.slice(rendered.indexOf('{'), rendered.lastIndexOf('}') + 1))).toEqual(structured);
    expect(structured).toEqual(await mcp.call('list_messages', { inboxId: b, limit: 3 }));
    // A tools/call that asks for progress is answered as an event stream, whose last event is its result.
    const streamed = await mcpPost(server, key, {
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: {
        name: 'wait_for_message',
        arguments: { inboxId: a, from: 'nobody.example', timeoutSeconds: 0.3 },
        _meta: { progressToken: 'p' },
      },
    });
    expect(streamed.status).toBe(200);
    expect(streamed.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(streamed.headers.get('x-accel-buffering')).toBe('no');
    expect(streamed.text).toMatch(/^event: message\ndata: .*\n\n$/s);
    const events = streamed.text.trim().split('\n\n');
    const last = JSON.parse(events.at(-1)!.split('\ndata: ')[1]!);
    expect(last).toMatchObject({ id: 7, result: { structuredContent: { timedOut: true } } });
    // The official client asking for progress reads the stream too.
    const viaClient = await mcp.client.callTool(
      { name: 'wait_for_message', arguments: { inboxId: a, from: 'nobody.example', timeoutSeconds: 0.3 } },
      undefined,
      { onprogress: () => {} },
    );
    expect(viaClient.structuredContent).toEqual({ timedOut: true });
  });

  it('scoped keys: another inbox, another pod and another organization reach nothing through any tool; no permission, no tool', async () => {
    const p1 = await org.client.pods.create({ name: unique('p') });
    const inPod = (await org.client.pods.inboxes.create(p1.podId, { username: unique('podded') })).inboxId;
    const sent = await mcp.call('send_message', {
      inboxId: a,
      to: [inPod],
      subject: 'secret plan',
      text: 'code 777111',
      attachments: [{ filename: 's.txt', content: b64('secret file') }],
    });
    const thread = await mcp.call('get_thread', { inboxId: a, threadId: sent.threadId });
    const attachmentId = (thread.messages as { attachments: { attachmentId: string }[] }[])[0]!.attachments[0]!
      .attachmentId;
    const draft = await mcp.call('create_draft', { inboxId: a, text: 'private draft' });
    const inboxKey = bearerKey(await org.client.inboxes.apiKeys.create(inPod, { name: 'only-podded' })).apiKey;
    const podKey = bearerKey(
      await org.client.pods.apiKeys.create((await org.client.pods.create({ name: unique('p2') })).podId, {
        name: 'p2',
      }),
    ).apiKey;
    const other = (await organization(server)).key;
    const calls: [string, Record<string, unknown>][] = [
      ['get_inbox', { inboxId: a }],
      ['update_inbox', { inboxId: a, displayName: 'taken' }],
      ['delete_inbox', { inboxId: a }],
      ['list_threads', { inboxId: a }],
      ['search_threads', { inboxId: a, q: 'secret' }],
      ['get_thread', { inboxId: a, threadId: sent.threadId }],
      ['get_attachment', { inboxId: a, threadId: sent.threadId, attachmentId }],
      ['update_thread', { inboxId: a, threadId: sent.threadId, addLabels: ['x'] }],
      ['delete_thread', { inboxId: a, threadId: sent.threadId }],
      ['list_messages', { inboxId: a }],
      ['search_messages', { inboxId: a, q: 'secret' }],
      ['send_message', { inboxId: a, to: [b], text: 'spoof' }],
      ['reply_to_message', { inboxId: a, messageId: sent.messageId, text: 'x' }],
      ['forward_message', { inboxId: a, messageId: sent.messageId, to: [b] }],
      ['update_message', { inboxId: a, messageId: sent.messageId, addLabels: ['x'] }],
      ['wait_for_message', { inboxId: a, timeoutSeconds: 0 }],
      ['create_draft', { inboxId: a, text: 'x' }],
      ['list_drafts', { inboxId: a }],
      ['get_draft', { inboxId: a, draftId: draft.draftId }],
      ['update_draft', { inboxId: a, draftId: draft.draftId, text: 'x' }],
      ['send_draft', { inboxId: a, draftId: draft.draftId }],
      ['delete_draft', { inboxId: a, draftId: draft.draftId }],
    ];
    for (const key of [inboxKey, podKey, other]) {
      const intruder = await connectMcp(server.url, key);
      for (const [name, args] of calls) {
        const res = await intruder.raw(name, args);
        const err = toolError(res);
        expect({ name, type: err.type }).toEqual({ name, type: 'not_found' });
        const text = JSON.stringify(res);
        for (const secret of ['secret plan', '777111', 'private draft', sent.threadId as string])
          expect(text, `${name} leaked ${secret}`).not.toContain(secret);
      }
      // Its own lists hold nothing of the organization's other inboxes.
      const own = await intruder.call('list_inboxes', { limit: 100 });
      expect(JSON.stringify(own)).not.toContain(a);
      await intruder.close();
    }
    // The inbox key does reach its own inbox: the mail a sent it.
    const own = await connectMcp(server.url, inboxKey);
    const mine = await own.call('list_messages', { inboxId: inPod });
    expect((mine.messages as { subject: string }[]).map((m) => m.subject)).toContain('secret plan');
    await own.close();
    // Nothing changed.
    const unchanged = await mcp.call('get_thread', { inboxId: a, threadId: sent.threadId });
    expect(unchanged.labels).not.toContain('x');
    expect((await mcp.call('get_draft', { inboxId: a, draftId: draft.draftId })).text).toBe('private draft');
    // A key without permissions gets permission errors, not data.
    const none = bearerKey(await org.client.apiKeys.create({ name: 'nothing', permissions: {} })).apiKey;
    const powerless = await connectMcp(server.url, none);
    for (const [name, args] of calls)
      expect({ name, type: toolError(await powerless.raw(name, args)).type }).toEqual({
        name,
        type: 'permission_error',
      });
    await powerless.close();
  });

  it('wait_for_message: returns a message that arrives by SMTP, with its code; answers at once for one already there; times out cleanly', async () => {
    const started = Date.now();
    const waiting = mcp.call('wait_for_message', { inboxId: b, from: 'login.example', timeoutSeconds: 20 });
    await new Promise((r) => setTimeout(r, 300));
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: smtpPort(server),
      secure: false,
      ignoreTLS: true,
    });
    // Another sender first: not what the agent waits for.
    await transport.sendMail({ from: 'news@other.example', to: b, subject: 'Newsletter', text: 'nothing here' });
    await transport.sendMail({
      from: 'no-reply@login.example',
      to: b,
      subject: 'Your login code',
      text: 'Your code is 660044',
    });
    const got = await waiting;
    expect(got.timedOut).toBe(false);
    expect(got.message).toMatchObject({
      from: 'no-reply@login.example',
      subject: 'Your login code',
      verification: { codes: ['660044'] },
    });
    expect(Date.now() - started).toBeLessThan(15_000);
    // Already there (after a time before it): at once.
    const before = new Date(started - 1000).toISOString();
    const again = await mcp.call('wait_for_message', {
      inboxId: b,
      subject: 'login code',
      after: before,
      timeoutSeconds: 5,
    });
    expect((again.message as { subject: string }).subject).toBe('Your login code');
    const t0 = Date.now();
    expect(await mcp.call('wait_for_message', { inboxId: b, from: 'nobody.example', timeoutSeconds: 0.5 })).toEqual({
      timedOut: true,
    });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(450);
    transport.close();
  });

  it('wait_for_message stops waiting when its client goes away (inbox_mcp_waiting_calls back to 0)', async () => {
    const metered = await startInboxServer({ dialect, env: { METRICS_TOKEN: 'metrics-secret' } });
    try {
      const own = await organization(metered, [unique('gone')]);
      const waitingCalls = async () => {
        const res = await fetch(`${metered.url}/metrics`, { headers: { authorization: 'Bearer metrics-secret' } });
        return Number(/^inbox_mcp_waiting_calls (\d+)/m.exec(await res.text())?.[1] ?? 'NaN');
      };
      const until = async (want: number) => {
        while ((await waitingCalls()) !== want) await new Promise((r) => setTimeout(r, 20));
      };
      expect(await waitingCalls()).toBe(0);
      const req = http.request(`${metered.url}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'x-api-key': own.key,
        },
      });
      const gone = new Promise<void>((resolve) => req.on('close', () => resolve()));
      req.on('error', () => {});
      req.end(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: {
            name: 'wait_for_message',
            arguments: { inboxId: own.inboxes[0], from: 'nobody.example', timeoutSeconds: 110 },
          },
        }),
      );
      await until(1);
      req.destroy();
      await gone;
      // Were the wait not cut when its client left, it would hold on for 110 s and the test time out.
      await until(0);
    } finally {
      await metered.close();
    }
  });

  it('rate limits count MCP calls like API calls', async () => {
    const limited = await startInboxServer({ dialect, env: { INBOX_RATE_LIMIT_PER_MINUTE: '5' } });
    try {
      const key = (await limited.createKey()).key;
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await mcpPost(limited, { 'x-api-key': key }, listTools)).status);
      statuses.push((await call(limited.url, key, 'GET', '/v0/inboxes')).status);
      const over = await mcpPost(limited, { 'x-api-key': key }, listTools);
      expect(statuses).toEqual([200, 200, 200, 200, 200]);
      expect(over.status).toBe(429);
      expect(over.json.error.type).toBe('rate_limit_exceeded');
      expect(over.headers.get('retry-after')).toMatch(/^\d+$/);
    } finally {
      await limited.close();
    }
  });
});

describe.skipIf(!dialects.includes('postgres'))('MCP door across two instances (postgres)', () => {
  it('wait_for_message on one instance returns a message the other instance received by SMTP, within 1 s of its commit', async () => {
    const database = createInboxTestDatabase('postgres');
    const api = await startInboxServer({ database, env: { INBOX_ROLES: 'api' } });
    const smtp = await startInboxServer({ database, env: { INBOX_ROLES: 'api,smtp' } });
    try {
      const org = await organization(api, [unique('far')]);
      const inbox = org.inboxes[0] as string;
      const mcp = await connectMcp(api.url, org.key);
      const waiting = mcp.call('wait_for_message', { inboxId: inbox, timeoutSeconds: 30 });
      await new Promise((r) => setTimeout(r, 300));
      const transport = nodemailer.createTransport({
        host: '127.0.0.1',
        port: smtpPort(smtp),
        secure: false,
        ignoreTLS: true,
      });
      await transport.sendMail({ from: 'otp@service.example', to: inbox, subject: 'Code', text: 'Code: 135790' });
      const got = await waiting;
      const arrived = Date.now();
      const message = got.message as { createdAt: string; verification: { codes: string[] } };
      expect(message.verification.codes).toEqual(['135790']);
      expect(arrived - Date.parse(message.createdAt)).toBeLessThan(1000);
      transport.close();
      await mcp.close();
    } finally {
      await smtp.close();
      await api.close();
      await database.drop();
    }
  });
});
