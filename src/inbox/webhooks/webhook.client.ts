import { createHmac } from 'node:crypto';
import { request as httpRequest, type ClientRequest, type IncomingHttpHeaders, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { performance } from 'node:perf_hooks';
import { ipLiteral, isAllowedHostLiteral, publicOnlyLookup } from '../../platform/net/egress.js';

/** Prefix of signing secrets, as the Svix and Standard Webhooks libraries expect it. */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';

export const WEBHOOK_USER_AGENT = 'inbox-service-webhooks/1.0';

/**
 * The Svix v1 signature of one attempt: base64 HMAC-SHA256, keyed with the secret's bytes, over
 * `<id>.<timestamp>.<body>`. Sent under the svix- names (what AgentMail's receivers check) and the
 * Standard Webhooks names; the verifiers of both accept either set.
 */
export function signatureHeaders(
  secret: string,
  messageId: string,
  timestampSeconds: number,
  body: string,
): Record<string, string> {
  const key = Buffer.from(
    secret.startsWith(WEBHOOK_SECRET_PREFIX) ? secret.slice(WEBHOOK_SECRET_PREFIX.length) : secret,
    'base64',
  );
  const signature = `v1,${createHmac('sha256', key).update(`${messageId}.${timestampSeconds}.`).update(body, 'utf8').digest('base64')}`;
  const timestamp = String(timestampSeconds);
  return {
    'svix-id': messageId,
    'svix-timestamp': timestamp,
    'svix-signature': signature,
    'webhook-id': messageId,
    'webhook-timestamp': timestamp,
    'webhook-signature': signature,
  };
}

/** What one POST to a receiver came to. */
export type WebhookAttempt =
  | {
      readonly kind: 'response';
      readonly status: number;
      readonly headers: IncomingHttpHeaders;
      /** At most `maxResponseBytes` of the body. */
      readonly body: Buffer;
      readonly durationMs: number;
    }
  | {
      /** timeout: no complete answer in time; network: DNS, TCP or TLS failure; blocked: the egress policy refused the target. */
      readonly kind: 'timeout' | 'network' | 'blocked';
      readonly message: string;
      readonly durationMs: number;
    };

export interface WebhookClient {
  post(url: string, body: string, headers: Readonly<Record<string, string>>): Promise<WebhookAttempt>;
}

export interface WebhookClientOptions {
  /** Time for the whole exchange: connect, send, and read the answer. */
  readonly timeoutMs: number;
  /** INBOX_WEBHOOK_ALLOW_PRIVATE: skip the egress policy. */
  readonly allowPrivate: boolean;
  /** How much of a response body is read; the rest is never received. */
  readonly maxResponseBytes?: number;
}

/**
 * POSTs JSON to receivers over node:http(s): a fresh connection per attempt, redirects never
 * followed, one deadline for the whole exchange, a capped read of the answer, and (unless
 * private targets are allowed) a connection only to addresses the egress policy vetted.
 */
export function createWebhookClient({
  timeoutMs,
  allowPrivate,
  maxResponseBytes = 4096,
}: WebhookClientOptions): WebhookClient {
  const lookup = allowPrivate ? undefined : publicOnlyLookup();

  return {
    post(rawUrl, body, headers) {
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      let url: URL;
      try {
        url = new URL(rawUrl);
      } catch {
        return Promise.resolve({ kind: 'network', message: 'the URL cannot be parsed', durationMs: 0 });
      }
      // Literal addresses never reach `lookup`, so they are judged here.
      if (!allowPrivate && !isAllowedHostLiteral(url.hostname)) {
        return Promise.resolve({
          kind: 'blocked',
          message: `${url.hostname} is a private, loopback, link-local or reserved address`,
          durationMs: 0,
        });
      }
      const payload = Buffer.from(body, 'utf8');
      const options: RequestOptions = {
        protocol: url.protocol,
        hostname: ipLiteral(url.hostname) ?? url.hostname,
        ...(url.port ? { port: Number(url.port) } : {}),
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        agent: false,
        headers: {
          ...headers,
          'content-type': 'application/json',
          'content-length': String(payload.length),
          'user-agent': WEBHOOK_USER_AGENT,
        },
        ...(lookup ? { lookup } : {}),
      };

      return new Promise<WebhookAttempt>((resolve) => {
        let settled = false;
        const timer = setTimeout(
          () =>
            finish({ kind: 'timeout', message: `no complete answer within ${timeoutMs} ms`, durationMs: elapsed() }),
          timeoutMs,
        );
        const finish = (attempt: WebhookAttempt) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          // Nothing more is read or sent: the connection is not reused.
          req?.destroy();
          resolve(attempt);
        };
        const failed = (err: Error & { code?: string }) =>
          finish({
            kind: err.code === 'EGRESS_BLOCKED' ? 'blocked' : 'network',
            message: err.message || err.code || 'connection failed',
            durationMs: elapsed(),
          });

        let req: ClientRequest | undefined;
        try {
          req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(options, (res) => {
            const chunks: Buffer[] = [];
            let size = 0;
            const done = () =>
              finish({
                kind: 'response',
                status: res.statusCode ?? 0,
                headers: res.headers,
                body: Buffer.concat(chunks),
                durationMs: elapsed(),
              });
            res.on('data', (chunk: Buffer) => {
              const room = maxResponseBytes - size;
              if (room > 0) {
                chunks.push(chunk.subarray(0, room));
                size += Math.min(room, chunk.length);
              }
              if (size >= maxResponseBytes) done();
            });
            res.on('end', done);
            res.on('error', failed);
          });
        } catch (err) {
          return failed(err as Error);
        }
        req.on('error', failed);
        req.end(payload);
      });
    },
  };
}
