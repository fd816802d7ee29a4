import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { organization, unique } from './fixtures.js';

/**
 * What /mcp answers a POST whose body the API's parser cannot read, sent as raw HTTP (no SDK
 * client): the SDK's Streamable HTTP server transport's answers, word for word (its
 * `handlePostRequest`: Accept, then Content-Type, then the body), never the REST error envelope.
 * The REST routes keep theirs.
 */

const ACCEPT = 'application/json, text/event-stream';

/** The SDK transport's error body, as it writes it (`JSON.stringify` in this key order). */
const rpcError = (code: number, message: string, data?: string) =>
  JSON.stringify({ jsonrpc: '2.0', error: { code, message, ...(data === undefined ? {} : { data }) }, id: null });

const PARSE_ERROR = rpcError(-32700, 'Parse error: Invalid JSON');
const NOT_ACCEPTABLE = rpcError(
  -32000,
  'Not Acceptable: Client must accept both application/json and text/event-stream',
);
const UNSUPPORTED = rpcError(-32000, 'Unsupported Media Type: Content-Type must be application/json');

interface Answer {
  status: number;
  /** The media type, without parameters (Fastify adds `charset=utf-8` to every JSON answer of ours, the SDK none). */
  type: string | undefined;
  text: string;
}

const mediaType = (header: string | undefined) => header?.split(';')[0];

async function post(url: string, headers: Record<string, string>, body?: string | Uint8Array): Promise<Answer> {
  const res = await fetch(url, { method: 'POST', headers, ...(body === undefined ? {} : { body }) });
  return { status: res.status, type: mediaType(res.headers.get('content-type') ?? undefined), text: await res.text() };
}

/**
 * A POST by node:http: `declared` sends that Content-Length and a few bytes of it; otherwise `bytes`
 * go out chunked, piece by piece, until the server answers (it may answer before the end).
 */
function upload(url: string, key: string, options: { declared?: number; bytes?: number }): Promise<Answer> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: target.hostname,
        port: target.port,
        method: 'POST',
        path: target.pathname,
        headers: {
          'x-api-key': key,
          accept: ACCEPT,
          'content-type': 'application/json',
          ...(options.declared === undefined ? {} : { 'content-length': String(options.declared) }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            type: mediaType(res.headers['content-type']),
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    let answered = false;
    req.on('response', () => (answered = true));
    // The server may close the connection on a body it refused while the rest is still going out.
    req.on('error', (err) => (answered ? undefined : reject(err)));
    if (options.declared !== undefined) {
      req.write('{"jsonrpc":"2.0",');
      return;
    }
    const piece = Buffer.from(`[${'"xxxxxxxxxxxxxx",'.repeat(4096)}`);
    let sent = 0;
    const next = () => {
      if (answered || sent >= (options.bytes ?? 0)) return void req.end();
      sent += piece.length;
      req.write(piece, () => setTimeout(next, 1));
    };
    next();
  });
}

describe.each(dialects)('MCP wire errors (%s)', (dialect) => {
  let server: InboxTestServer;
  let key: string;
  let url: string;
  let limit: number;

  beforeAll(async () => {
    // Small limits, so that a body over the route's limit is about a megabyte.
    server = await startInboxServer({
      dialect,
      env: { INBOX_MAX_ATTACHMENT_BYTES: '0', INBOX_MAX_BODY_BYTES: '1024' },
    });
    key = (await organization(server, [unique('wire')])).key;
    url = `${server.url}/mcp`;
    limit = server.service.app!.initialConfig.bodyLimit as number;
  });
  afterAll(async () => {
    await server?.close();
  });

  const headers = (more: Record<string, string> = {}) => ({
    'x-api-key': key,
    accept: ACCEPT,
    'content-type': 'application/json',
    ...more,
  });

  it('a body that is not JSON, or empty, is 400 -32700 "Parse error: Invalid JSON"', async () => {
    for (const body of ['{bad', '{"jsonrpc":"2.0","id":1,"method":', '', ' ', '[1,]']) {
      const res = await post(url, headers(), body);
      expect(res, JSON.stringify(body)).toEqual({ status: 400, type: 'application/json', text: PARSE_ERROR });
    }
    // With parameters on the media type too.
    expect(await post(url, headers({ 'content-type': 'application/json; charset=utf-8' }), '{bad')).toEqual({
      status: 400,
      type: 'application/json',
      text: PARSE_ERROR,
    });
  });

  it('a body the API refuses for its depth is 400 -32700 "Parse error" with the reason as data', async () => {
    const res = await post(url, headers(), `${'['.repeat(100)}${']'.repeat(100)}`);
    expect(res.status).toBe(400);
    expect(res.type).toBe('application/json');
    const answer = JSON.parse(res.text) as { error: { data: string } };
    expect(answer.error.data).toMatch(/nests arrays and objects more than \d+ levels deep/);
    expect(res.text).toBe(rpcError(-32700, 'Parse error', answer.error.data));
  });

  it('another media type, or none, is 415, whether or not the body is JSON', async () => {
    const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    for (const [type, body] of [
      ['text/plain', ping],
      ['text/plain', '{bad'],
      ['application/x-www-form-urlencoded', 'a=b'],
      ['text/plain; a=application/json', ping],
    ] as const) {
      const res = await post(url, headers({ 'content-type': type }), body);
      expect(res, type).toEqual({ status: 415, type: 'application/json', text: UNSUPPORTED });
    }
    // A body without any Content-Type (bytes, which fetch sends without one).
    const bare = { 'x-api-key': key, accept: ACCEPT };
    expect(await post(url, bare, new TextEncoder().encode(ping))).toEqual({
      status: 415,
      type: 'application/json',
      text: UNSUPPORTED,
    });
    expect(await post(url, bare)).toEqual({ status: 415, type: 'application/json', text: UNSUPPORTED });
  });

  it('an Accept without JSON or event streams is 406, before the media type and the body are looked at', async () => {
    for (const accept of ['application/json', 'text/event-stream', '*/*'])
      for (const [type, body] of [
        ['application/json', '{bad'],
        ['text/plain', '{bad'],
        ['application/json', ''],
      ] as const) {
        const res = await post(url, headers({ accept, 'content-type': type }), body);
        expect(res, `${accept} ${type} ${body}`).toEqual({
          status: 406,
          type: 'application/json',
          text: NOT_ACCEPTABLE,
        });
      }
  });

  it('a body over the limit is 413 naming the limit, declared or not, without the body being read to its end', async () => {
    const tooLarge = rpcError(-32000, `Payload Too Large: Request body must not exceed ${limit} bytes`);
    expect(limit).toBeLessThan(2 * 1024 * 1024);
    // A declared length over the limit is refused from the headers alone: only 17 bytes of it ever go out.
    expect(await upload(url, key, { declared: 1024 * 1024 * 1024 })).toEqual({
      status: 413,
      type: 'application/json',
      text: tooLarge,
    });
    // Chunked, with no length: refused once the limit is passed, the rest never sent.
    expect(await upload(url, key, { bytes: 64 * 1024 * 1024 })).toEqual({
      status: 413,
      type: 'application/json',
      text: tooLarge,
    });
  });

  it('the key comes first, as for every POST: without one, a bad body is a 401; a refused body still costs one request', async () => {
    const res = await post(url, { accept: ACCEPT, 'content-type': 'application/json' }, '{bad');
    expect(res.status).toBe(401);
    expect(JSON.parse(res.text).error.type).toBe('authentication_error');
    const limited = await fetch(url, { method: 'POST', headers: headers(), body: '{bad' });
    expect(limited.status).toBe(400);
    expect(limited.headers.get('ratelimit-remaining')).toMatch(/^\d+$/);
  });

  it('REST routes keep the REST envelope for the same bodies', async () => {
    const rest = await post(
      `${server.url}/v0/inboxes`,
      { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      '{bad',
    );
    expect(rest.status).toBe(400);
    expect(JSON.parse(rest.text)).toMatchObject({
      error: { type: 'validation_error', details: { code: 'INVALID_JSON' } },
    });
    const text = await post(
      `${server.url}/v0/inboxes`,
      { authorization: `Bearer ${key}`, 'content-type': 'text/plain' },
      '{}',
    );
    expect(text.status).toBe(415);
    expect(JSON.parse(text.text).error.type).toBe('unsupported_media_type');
  });
});
