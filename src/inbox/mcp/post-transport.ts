import type { IncomingHttpHeaders } from 'node:http';
import { PassThrough } from 'node:stream';
import { MAX_BATCH_SIZE, requestBodyTooLargeMessage } from '@modelcontextprotocol/sdk/server/requestBody.js';
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  isInitializeRequest,
  JSONRPCMessageSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCErrorResponse,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type JSONRPCResultResponse,
  type MessageExtraInfo,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';

/**
 * One stateless Streamable HTTP POST as an SDK `Transport` (docs/decisions/0051-our-own-mcp-transport.md):
 * the SDK's `Server` still parses, validates and dispatches every JSON-RPC message; this only moves
 * them between Node's request and answer, without the web `Request`/`Response`/`Headers` objects of
 * the SDK's web-standard transport. It keeps that transport's rules for the stateless case (the
 * same statuses, JSON-RPC error bodies and messages): Accept must name JSON and event streams
 * (406), the body must be JSON (415) and JSON-RPC (400, -32700), a batch holds at most
 * `MAX_BATCH_SIZE` messages and one initialize (400, -32600), an unknown `mcp-protocol-version`
 * is refused (400), a POST of notifications and responses only is a 202 with no body. A body the
 * route could not read (`Unread`) is answered as the SDK's transport answers one it cannot read
 * (400 -32700, 413, 415), after the same header checks. Requests are
 * answered as JSON, or as an event stream when the caller asks for one (a tools/call that reports
 * progress). One transport serves one POST and is never reused.
 */

/** What the route writes back: a status and either a body (JSON or empty) or an event stream. */
export type PostAnswer =
  { readonly status: number; readonly json?: string } | { readonly status: 200; readonly stream: PassThrough };

/** The SDK's own keep-alive for event streams (a comment every 15 s), so proxies keep a long wait open. */
const KEEP_ALIVE_MS = 15_000;

const errorAnswer = (status: number, code: number, message: string, data?: string): PostAnswer => ({
  status,
  json: JSON.stringify({ jsonrpc: '2.0', error: { code, message, ...(data === undefined ? {} : { data }) }, id: null }),
});

/** `application/json`, with or without parameters, as the SDK's `isJsonContentType` reads it. */
const isJson = (contentType: string | undefined) =>
  contentType?.split(';')[0]?.trim().toLowerCase() === 'application/json';

/**
 * Why a POST's body never reached the transport (the API's body parser refused it): not JSON at all
 * (nor empty, nor cut short), over the route's size limit, of a media type the API does not read, or
 * refused for another reason (nested too deep), with that reason.
 */
export type Unread =
  | { readonly reason: 'json' }
  | { readonly reason: 'large'; readonly limit: number }
  | { readonly reason: 'media' }
  | { readonly reason: 'refused'; readonly detail: string };

/** The SDK transport's first checks, on the headers alone: Accept (406), then Content-Type (415). */
function headerRefusal(headers: IncomingHttpHeaders): PostAnswer | undefined {
  const accept = headers.accept;
  if (!accept?.includes('application/json') || !accept.includes('text/event-stream'))
    return errorAnswer(406, -32000, 'Not Acceptable: Client must accept both application/json and text/event-stream');
  if (!isJson(headers['content-type']))
    return errorAnswer(415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
  return undefined;
}

/**
 * What the SDK's transport answers a POST whose body it cannot read: its header checks come first,
 * as there (it reads the body after them); then JSON that does not parse (an empty body included) is
 * `-32700 Parse error: Invalid JSON`, a body over the limit a 413 naming the limit, and any other
 * failure `-32700 Parse error` with the reason as its data (its answer to an unexpected error).
 */
export function unreadAnswer(headers: IncomingHttpHeaders, unread: Unread): PostAnswer {
  const refused = headerRefusal(headers);
  if (refused) return refused;
  switch (unread.reason) {
    case 'json':
      return errorAnswer(400, -32700, 'Parse error: Invalid JSON');
    case 'large':
      return errorAnswer(413, -32000, requestBodyTooLargeMessage(unread.limit));
    case 'media':
      // A type the transport would read as JSON but the API's parser did not take: it has no body to parse either.
      return errorAnswer(415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
    case 'refused':
      return errorAnswer(400, -32700, 'Parse error', unread.detail);
  }
}

/*
 * The SDK's `is…` guards are zod parses (a failed one builds its issues): over a few calls of every
 * POST, about 15 µs. Messages here have already passed `JSONRPCMessageSchema` (or come from the
 * SDK's own server), so which kind each is shows in its keys; only an `initialize` is parsed again,
 * as the SDK's transport does, to tell a valid one.
 */

/** A request, of the messages `JSONRPCMessageSchema` passed: a method and an id (a notification has no id). */
const isRequest = (message: JSONRPCMessage): message is JSONRPCRequest => 'method' in message && 'id' in message;

/** An answer, of the messages the server sends: a result or an error, never a method. */
const isResponse = (message: JSONRPCMessage): message is JSONRPCResultResponse | JSONRPCErrorResponse =>
  !('method' in message) && ('result' in message || 'error' in message);

const initialize = (message: JSONRPCMessage) =>
  'method' in message && message.method === 'initialize' && isInitializeRequest(message);

/**
 * How one answer message is written: `JSON.stringify` unless the route knows a cheaper way (a tool
 * result whose JSON it has already written, decision 0051).
 */
export type Serialize = (message: JSONRPCMessage) => string;

export class PostTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;

  /** The requests of this POST still waiting for their answer, in order; then their answers. */
  private readonly waiting = new Map<RequestId, string | undefined>();
  private finish?: (answer: PostAnswer) => void;
  private stream?: PassThrough;
  private keepAlive?: NodeJS.Timeout;
  private closed = false;

  /** `asStream`: answer the requests as an event stream rather than JSON. */
  constructor(
    private readonly asStream: boolean,
    private readonly serialize: Serialize = JSON.stringify,
  ) {}

  start(): Promise<void> {
    return Promise.resolve();
  }

  /**
   * Hands a POST's messages (the body Fastify parsed) to the server; resolves with what to answer:
   * an error or a 202 at once, an event stream at once, or the JSON answer when every request has one.
   */
  handle(body: unknown, headers: IncomingHttpHeaders): Promise<PostAnswer> {
    const refused = headerRefusal(headers);
    if (refused) return Promise.resolve(refused);
    if (Array.isArray(body) && body.length > MAX_BATCH_SIZE)
      return Promise.resolve(
        errorAnswer(400, -32600, `Invalid Request: Batch must not exceed ${MAX_BATCH_SIZE} messages`),
      );
    let messages: JSONRPCMessage[];
    try {
      messages = Array.isArray(body)
        ? body.map((m) => JSONRPCMessageSchema.parse(m))
        : [JSONRPCMessageSchema.parse(body)];
    } catch {
      return Promise.resolve(errorAnswer(400, -32700, 'Parse error: Invalid JSON-RPC message'));
    }
    const initializing = messages.some(initialize);
    if (initializing && messages.length > 1)
      return Promise.resolve(errorAnswer(400, -32600, 'Invalid Request: Only one initialization request is allowed'));
    const version = headers['mcp-protocol-version'];
    if (!initializing && version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(String(version))) {
      const message = `Bad Request: Unsupported protocol version: ${String(version)} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`;
      return Promise.resolve(errorAnswer(400, -32000, message));
    }
    const extra: MessageExtraInfo = { requestInfo: { headers } };
    try {
      if (!messages.some(isRequest)) {
        for (const message of messages) this.onmessage?.(message, extra);
        return Promise.resolve({ status: 202 });
      }
      for (const message of messages) if (isRequest(message)) this.waiting.set(message.id, undefined);
      if (this.asStream) {
        const stream = new PassThrough();
        this.stream = stream;
        this.keepAlive = setInterval(() => stream.write(': keepalive\n\n'), KEEP_ALIVE_MS);
        for (const message of messages) this.onmessage?.(message, extra);
        return Promise.resolve({ status: 200, stream });
      }
      const answer = new Promise<PostAnswer>((resolve) => (this.finish = resolve));
      for (const message of messages) this.onmessage?.(message, extra);
      return answer;
    } catch (err) {
      this.onerror?.(err as Error);
      return Promise.resolve(errorAnswer(400, -32700, 'Parse error', String(err)));
    }
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const isAnswer = isResponse(message);
    const id = isAnswer ? message.id : options?.relatedRequestId;
    // Without a request it would go on a GET stream, which a stateless server has none of (as the SDK's transport).
    if (id === undefined || this.closed) return Promise.resolve();
    if (!this.waiting.has(id))
      return Promise.reject(new Error(`No connection established for request ID: ${String(id)}`));
    if (this.stream) {
      this.stream.write(`event: message\ndata: ${this.serialize(message)}\n\n`);
      if (isAnswer) this.waiting.set(id, '');
    } else if (isAnswer) this.waiting.set(id, this.serialize(message));
    else return Promise.resolve(); // progress in a JSON answer has nowhere to go
    for (const answer of this.waiting.values()) if (answer === undefined) return Promise.resolve();
    if (this.stream) this.end();
    else {
      const answers = [...this.waiting.values()];
      // One answer stands alone even for a batch of one, as the SDK's transport answers.
      this.finish?.({ status: 200, json: answers.length === 1 ? answers[0] : `[${answers.join(',')}]` });
    }
    return Promise.resolve();
  }

  /** The client went away or every answer is out: ends the stream and tells the server. */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.end();
    // A JSON answer nobody will read: the handler stops waiting for it.
    this.finish?.({ status: 499 });
    this.onclose?.();
    return Promise.resolve();
  }

  private end(): void {
    this.closed = true;
    clearInterval(this.keepAlive);
    this.stream?.end();
  }
}
