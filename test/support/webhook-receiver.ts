import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { listenOnFreePort } from './ports.js';

/**
 * A webhook receiver over a real socket for the black-box suites. It records every request,
 * verifies its signature with the official `svix` library (svix-* headers only) and the
 * `standardwebhooks` library (webhook-* headers only), and answers from a script.
 */

export interface Answer {
  readonly status?: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Buffer;
  /** Never answer (until the client gives up or the receiver closes). */
  readonly hang?: boolean;
  /** Send the status and the body, then keep the response open without ending it. */
  readonly endless?: boolean;
}

export interface Received {
  readonly path: string;
  readonly method: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** The status this request was answered with (undefined if it was left hanging). */
  readonly status: number | undefined;
  /** Verification results; undefined when no secret is registered for the path. */
  readonly svix: true | string | undefined;
  readonly standard: true | string | undefined;
}

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port><path>` */
  url(path?: string): string;
  readonly port: number;
  readonly received: Received[];
  /** The signing secret to verify requests to `path` with. */
  trust(path: string, secret: string): void;
  /** Answers for the next requests to `path`, in order; afterwards 200 `ok`. */
  script(path: string, ...answers: (number | Answer)[]): void;
  /** Resolves when at least `n` requests have arrived (fails after `timeoutMs`). */
  waitFor(n: number, timeoutMs?: number): Promise<void>;
  /** Closes the socket (connections are refused); `start()` opens it again on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
}

function verify(check: () => unknown): true | string {
  try {
    check();
    return true;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** Runs `fn` with Date.now() reading `ms`: the verifiers judge timestamps against the service's clock. */
function atTime<T>(ms: number, fn: () => T): T {
  const realNow = Date.now;
  Date.now = () => ms;
  try {
    return fn();
  } finally {
    Date.now = realNow;
  }
}

export async function startWebhookReceiver(
  options: { now?: () => number; host?: string } = {},
): Promise<WebhookReceiver> {
  const now = options.now ?? (() => Date.now());
  const host = options.host ?? '127.0.0.1';
  const secrets = new Map<string, string>();
  const scripts = new Map<string, Answer[]>();
  const received: Received[] = [];
  const hanging = new Set<() => void>();
  let port = 0;
  let server: Server | undefined;

  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const path = (req.url ?? '/').split('?')[0] as string;
      const secret = secrets.get(path);
      const pick = (prefix: string) =>
        Object.fromEntries(
          Object.entries(req.headers)
            .filter(([k]) => k.startsWith(prefix))
            .map(([k, v]) => [k, String(v)]),
        );
      const at = now();
      const svix =
        secret === undefined
          ? undefined
          : verify(() => atTime(at, () => new SvixWebhook(secret).verify(body, pick('svix-'))));
      const standard =
        secret === undefined
          ? undefined
          : verify(() => atTime(at, () => new StandardWebhook(secret).verify(body, pick('webhook-'))));
      const next = scripts.get(path)?.shift();
      const answer: Answer = typeof next === 'number' ? { status: next } : (next ?? {});
      const record = {
        path,
        method: req.method ?? '',
        headers: req.headers,
        body,
        status: answer.hang ? undefined : (answer.status ?? 200),
        svix,
        standard,
      };
      received.push(record);
      if (answer.hang) {
        hanging.add(() => res.destroy());
        return;
      }
      res.writeHead(record.status as number, { 'content-type': 'text/plain', ...answer.headers });
      if (answer.endless) {
        res.write(answer.body ?? 'ok');
        hanging.add(() => res.destroy());
        return;
      }
      res.end(answer.body ?? 'ok');
    });
  };

  async function bind(at: number): Promise<void> {
    const s = createServer(handler);
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.listen(at, host, () => resolve());
    });
    server = s;
  }
  // The first start picks a port that no other test's listen(0) can take while this receiver is down.
  async function start(): Promise<void> {
    if (port) await bind(port);
    else port = await listenOnFreePort(bind);
  }

  await start();
  return {
    url: (path = '/') => `http://127.0.0.1:${port}${path}`,
    get port() {
      return port;
    },
    received,
    trust: (path, secret) => void secrets.set(path, secret),
    script: (path, ...answers) =>
      void scripts.set(path, [
        ...(scripts.get(path) ?? []),
        ...answers.map((a) => (typeof a === 'number' ? { status: a } : a)),
      ]),
    async waitFor(n, timeoutMs = 5_000) {
      const until = Date.now() + timeoutMs;
      while (received.length < n) {
        if (Date.now() > until) throw new Error(`expected ${n} webhook requests, got ${received.length}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    async stop() {
      for (const destroy of hanging) destroy();
      hanging.clear();
      const s = server;
      server = undefined;
      if (!s) return;
      s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    },
    start,
  };
}
