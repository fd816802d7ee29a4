import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { ipLiteral, isAllowedHostLiteral, publicOnlyLookup } from './egress.js';

/**
 * GET of a URL a user chose, under the egress policy (egress.ts): every hop, redirects included,
 * is judged before it is connected to, within one deadline for the whole exchange and a byte limit
 * checked before and while the body arrives. The body lands in one buffer that owns its memory
 * (so a caller may move it to a worker thread instead of cloning it), sized by Content-Length
 * when the server gives one.
 */

export type DownloadFailure =
  /** Not an absolute http(s) URL, or a redirect without a usable Location. */
  | 'invalid_url'
  /** A hop names a private, loopback, link-local or reserved address (or a name resolving to one). */
  | 'blocked'
  /** DNS, TCP or TLS failure, or the connection ended before the body did. */
  | 'unreachable'
  | 'timeout'
  /** Content-Length or the bytes received exceed the limit. */
  | 'too_large'
  /** The final answer is not 2xx. */
  | 'status'
  | 'too_many_redirects';

export class DownloadError extends Error {
  constructor(
    readonly failure: DownloadFailure,
    message: string,
    /** The HTTP status of a `status` failure. */
    readonly status?: number,
  ) {
    super(message);
    this.name = 'DownloadError';
  }
}

export interface DownloadOptions {
  /** Skip the egress policy (tests, local use). */
  readonly allowPrivate: boolean;
  /** Time for the whole exchange, every redirect included. */
  readonly timeoutMs: number;
  /** Largest body accepted, bytes. */
  readonly maxBytes: number;
  readonly maxRedirects: number;
  readonly userAgent: string;
}

export interface Downloaded {
  readonly bytes: Buffer;
  /** The answer's Content-Type, if it gave one. */
  readonly contentType?: string;
  /** The file name of the answer's Content-Disposition, else the last segment of the final URL's path. */
  readonly filename?: string;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** `filename*=UTF-8''…` (RFC 6266/8187) before `filename="…"`, as browsers prefer it. */
export function filenameOfDisposition(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const extended = /filename\*\s*=\s*([^']*)'[^']*'([^;]+)/i.exec(header);
  if (extended) {
    try {
      const value = decodeURIComponent((extended[2] as string).trim());
      if (value) return value;
    } catch {
      // fall back to the plain parameter
    }
  }
  const plain = /filename\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]+))/i.exec(header);
  const value = plain ? (plain[1]?.replace(/\\(.)/g, '$1') ?? plain[2]) : undefined;
  return value?.trim() || undefined;
}

/** The last non-empty segment of a URL's path, percent-decoded. */
export function filenameOfPath(url: URL): string | undefined {
  const last = url.pathname.split('/').filter(Boolean).pop();
  if (!last) return undefined;
  try {
    return decodeURIComponent(last);
  } catch {
    return last;
  }
}

function parseHop(raw: string, base?: URL): URL {
  let url: URL;
  try {
    url = base ? new URL(raw, base) : new URL(raw);
  } catch {
    throw new DownloadError('invalid_url', `${base ? 'a redirect names' : 'it is'} no valid URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new DownloadError('invalid_url', `only http and https URLs are fetched, not ${url.protocol}`);
  return url;
}

/** Fetches `rawUrl` with GET; throws a DownloadError for every way it can fail. */
export async function download(rawUrl: string, options: DownloadOptions): Promise<Downloaded> {
  const lookup = options.allowPrivate ? undefined : publicOnlyLookup();
  const deadline = Date.now() + options.timeoutMs;
  let url = parseHop(rawUrl);
  for (let hop = 0; ; hop++) {
    // Literal addresses never reach `lookup`, so they are judged here, at every hop.
    if (!options.allowPrivate && !isAllowedHostLiteral(url.hostname))
      throw new DownloadError('blocked', `${url.hostname} is a private, loopback, link-local or reserved address`);
    const answer = await get(url, lookup, deadline, options);
    if (answer.kind === 'redirect') {
      if (hop >= options.maxRedirects)
        throw new DownloadError('too_many_redirects', `more than ${options.maxRedirects} redirects`);
      url = parseHop(answer.location, url);
      continue;
    }
    return {
      bytes: answer.bytes,
      ...(answer.contentType ? { contentType: answer.contentType } : {}),
      ...((filenameOfDisposition(answer.disposition) ?? filenameOfPath(url))
        ? { filename: filenameOfDisposition(answer.disposition) ?? filenameOfPath(url) }
        : {}),
    };
  }
}

type Answer =
  { kind: 'redirect'; location: string } | { kind: 'body'; bytes: Buffer; contentType?: string; disposition?: string };

function get(
  url: URL,
  lookup: ReturnType<typeof publicOnlyLookup> | undefined,
  deadline: number,
  options: DownloadOptions,
): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    let req: ClientRequest | undefined;
    let settled = false;
    const finish = (err: DownloadError | undefined, answer?: Answer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // Nothing more is read: the connection is not reused.
      req?.destroy();
      if (err) reject(err);
      else resolve(answer as Answer);
    };
    const timer = setTimeout(
      () => finish(new DownloadError('timeout', `no complete answer within ${options.timeoutMs} ms`)),
      Math.max(0, deadline - Date.now()),
    );
    const failed = (err: Error & { code?: string }) =>
      finish(
        err.code === 'EGRESS_BLOCKED'
          ? new DownloadError('blocked', err.message)
          : new DownloadError('unreachable', err.message || err.code || 'the connection failed'),
      );
    const onResponse = (res: IncomingMessage) => {
      const status = res.statusCode ?? 0;
      if (REDIRECTS.has(status)) {
        const location = res.headers.location;
        if (!location) return finish(new DownloadError('invalid_url', `a ${status} redirect without a Location`));
        return finish(undefined, { kind: 'redirect', location });
      }
      if (status < 200 || status > 299)
        return finish(new DownloadError('status', `the server answered ${status}`, status));
      const declared = res.headers['content-length'] !== undefined ? Number(res.headers['content-length']) : NaN;
      if (declared > options.maxBytes)
        return finish(new DownloadError('too_large', `the file is ${declared} bytes; at most ${options.maxBytes}`));
      // Known length: one buffer, filled as the pieces come. Unknown: the pieces, joined once at the end.
      const whole = Number.isSafeInteger(declared) && declared >= 0 ? Buffer.allocUnsafeSlow(declared) : undefined;
      const pieces: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        if (size + chunk.length > (whole ? whole.length : options.maxBytes))
          return finish(
            new DownloadError(
              'too_large',
              whole ? 'the server sent more than its Content-Length' : `the file is over ${options.maxBytes} bytes`,
            ),
          );
        if (whole) chunk.copy(whole, size);
        else pieces.push(chunk);
        size += chunk.length;
      });
      res.on('end', () => {
        if (whole && size !== whole.length)
          return finish(new DownloadError('unreachable', 'the connection ended before the file did'));
        let bytes = whole;
        if (!bytes) {
          bytes = Buffer.allocUnsafeSlow(size);
          let at = 0;
          for (const p of pieces.splice(0)) at += p.copy(bytes, at);
        }
        const contentType = res.headers['content-type'];
        const disposition = res.headers['content-disposition'];
        finish(undefined, {
          kind: 'body',
          bytes,
          ...(contentType ? { contentType } : {}),
          ...(disposition ? { disposition } : {}),
        });
      });
      res.on('aborted', () => finish(new DownloadError('unreachable', 'the connection ended before the file did')));
      res.on('error', failed);
    };
    try {
      req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(
        {
          protocol: url.protocol,
          hostname: ipLiteral(url.hostname) ?? url.hostname,
          ...(url.port ? { port: Number(url.port) } : {}),
          path: `${url.pathname}${url.search}`,
          method: 'GET',
          agent: false,
          headers: { 'user-agent': options.userAgent, accept: '*/*', 'accept-encoding': 'identity' },
          ...(lookup ? { lookup } : {}),
        },
        onResponse,
      );
    } catch (err) {
      return failed(err as Error);
    }
    req.on('error', failed);
    req.end();
  });
}
