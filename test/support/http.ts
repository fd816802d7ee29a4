import { request as httpRequest } from 'node:http';
import { connect as netConnect } from 'node:net';

/**
 * Small HTTP helpers for the black-box suites: every request goes over a real socket.
 * `api` uses the global fetch; `rawRequest` uses node:http for what fetch cannot express
 * (no Accept header at all, a chosen Host header, bytes sent exactly as given).
 */

export interface ApiResponse {
  readonly status: number;
  readonly headers: Headers;
  /** Parsed JSON when the response says it is JSON, the text otherwise ('' when empty). */
  readonly body: unknown;
  /** The body exactly as received. */
  readonly text: string;
}

export interface ApiOptions {
  readonly method?: string;
  /** Sent as X-API-KEY. */
  readonly key?: string;
  /** Sent as Accept (fetch itself sends `*\/*` when this is left out). */
  readonly accept?: string;
  /**
   * Content-Type of the body. Left out: `application/merge-patch+json` for PATCH and
   * `application/ld+json` otherwise; null: no Content-Type header at all.
   */
  readonly contentType?: string | null;
  /** An object is sent as JSON; a string is sent as it is. */
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
}

function isJson(contentType: string | null): boolean {
  return contentType !== null && /[/+]json\b/i.test(contentType);
}

function parseBody(text: string, contentType: string | null): unknown {
  if (text === '' || !isJson(contentType)) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export async function api(baseUrl: string, path: string, options: ApiOptions = {}): Promise<ApiResponse> {
  const method = options.method ?? 'GET';
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers['x-api-key'] = options.key;
  if (options.accept !== undefined) headers.accept = options.accept;
  let body: Uint8Array | undefined;
  if (options.body !== undefined) {
    const text = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    // Bytes rather than a string, so that fetch adds no text/plain Content-Type of its own.
    body = new TextEncoder().encode(text);
    const contentType =
      options.contentType === undefined
        ? method === 'PATCH'
          ? 'application/merge-patch+json'
          : 'application/ld+json'
        : options.contentType;
    if (contentType !== null) headers['content-type'] = contentType;
  } else if (typeof options.contentType === 'string') {
    headers['content-type'] = options.contentType;
  }
  const response = await fetch(new URL(path, baseUrl), { method, headers, body, redirect: 'manual' });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: parseBody(text, response.headers.get('content-type')),
    text,
  };
}

export interface RawResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: unknown;
  readonly text: string;
}

export interface RawOptions {
  readonly method?: string;
  /** Sent exactly as given: no Accept, Host or Content-Type is added. */
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Buffer;
}

/** A request through node:http with exactly the headers given (plus Content-Length for a body). */
export function rawRequest(baseUrl: string, path: string, options: RawOptions = {}): Promise<RawResponse> {
  const base = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: base.hostname,
        port: base.port,
        method: options.method ?? 'GET',
        path,
        headers: { ...options.headers },
        setHost:
          options.headers !== undefined && Object.keys(options.headers).some((h) => h.toLowerCase() === 'host')
            ? false
            : true,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const contentType = typeof res.headers['content-type'] === 'string' ? res.headers['content-type'] : null;
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parseBody(text, contentType), text });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (options.body !== undefined) req.end(options.body);
    else req.end();
  });
}

export interface SocketExchange {
  /** The status of the answer, 0 when the server closed without one. */
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** The answer's body parsed as JSON (it must be JSON when there is an answer). */
  readonly body: unknown;
  /** Milliseconds from the first byte sent to the server closing the connection. */
  readonly closedAfterMs: number;
}

/**
 * Bytes over a plain TCP socket, for what no HTTP client would send: raw non-ASCII in the
 * request line, a 17 KB URL, a body trickled a byte at a time (`trickle`: after `bytes`, one
 * more byte every `everyMs` until the server answers or closes, or `trickle.bytes` of them went).
 * Gives up after `timeoutMs`.
 */
export function socketExchange(
  baseUrl: string,
  bytes: Buffer,
  options: { trickle?: { everyMs: number; bytes?: number }; timeoutMs?: number } = {},
): Promise<SocketExchange> {
  const base = new URL(baseUrl);
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const socket = netConnect(Number(base.port), base.hostname, () => socket.write(bytes));
    const chunks: Buffer[] = [];
    socket.on('data', (d: Buffer) => chunks.push(d));
    // At most `trickle.bytes` of them when given: a byte past a complete request would be the start of another.
    let trickled = 0;
    const trickle = options.trickle
      ? setInterval(
          () => socket.writable && trickled++ < (options.trickle?.bytes ?? Infinity) && socket.write(' '),
          options.trickle.everyMs,
        )
      : undefined;
    const giveUp = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server neither answered nor closed within ${options.timeoutMs ?? 10_000} ms`));
    }, options.timeoutMs ?? 10_000);
    const finish = () => {
      clearInterval(trickle);
      clearTimeout(giveUp);
      const text = Buffer.concat(chunks).toString('latin1');
      const [head = '', ...rest] = text.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(
        lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
      );
      const body = rest.join('\r\n\r\n');
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1] ?? 0),
        headers,
        body: body ? (JSON.parse(Buffer.from(body, 'latin1').toString('utf8')) as unknown) : undefined,
        closedAfterMs: Date.now() - started,
      });
    };
    socket.on('close', finish);
    socket.on('error', () => undefined);
  });
}
