/**
 * The HTTP surface of an agentmail SDK, read off the SDK itself: every client method is called
 * once with placeholder arguments through a `fetch` that records the verb and path and never
 * touches the network. So the Compatibility table (scripts/compat-table.ts) follows whatever
 * SDK version is installed, not a hand-kept list.
 */

export interface SdkMethod {
  /** Dotted client path, e.g. `inboxes.messages.send`. */
  readonly name: string;
  readonly verb: string;
  /** The request path with every argument segment written `{}` (e.g. `/v0/inboxes/{}/messages/send`). */
  readonly path: string;
}

/** Placeholder for path arguments: recorded paths replace it with `{}`. */
const ARG = 'zz-arg';
/** Enum path arguments of the list methods (direction, type). */
const ENUMS = ['send', 'allow'];

/** Values tried for required body fields whose type the SDK's validation names only as a mismatch. */
const SHAPES: readonly unknown[] = [ARG, [], {}, 1, true];

/** Methods that are not API operations of their own. */
const NOT_OPERATIONS = new Set(['fetch']);

interface Found {
  readonly name: string;
  readonly owner: Record<string, unknown>;
  readonly key: string;
}

function descriptorOf(object: object, key: string): PropertyDescriptor | undefined {
  for (
    let p: object | null = Object.getPrototypeOf(object);
    p && p !== Object.prototype;
    p = Object.getPrototypeOf(p)
  ) {
    const d = Object.getOwnPropertyDescriptor(p, key);
    if (d) return d;
  }
  return undefined;
}

function keysOf(object: object): string[] {
  const keys = new Set<string>();
  for (
    let p: object | null = Object.getPrototypeOf(object);
    p && p !== Object.prototype;
    p = Object.getPrototypeOf(p)
  ) {
    for (const k of Object.getOwnPropertyNames(p)) keys.add(k);
  }
  return [...keys].filter((k) => k !== 'constructor' && !k.startsWith('_'));
}

function collect(object: Record<string, unknown>, prefix: string, out: Found[], depth: number): void {
  for (const key of keysOf(object)) {
    const name = prefix ? `${prefix}.${key}` : key;
    const d = descriptorOf(object, key);
    if (d?.get) {
      const sub = object[key];
      if (sub && typeof sub === 'object' && depth < 5) collect(sub as Record<string, unknown>, name, out, depth + 1);
    } else if (typeof object[key] === 'function' && !NOT_OPERATIONS.has(name)) {
      out.push({ name, owner: object, key });
    }
  }
}

/** Argument vectors to try, in order, until one reaches `fetch` (the SDK validates bodies and enums first). */
function* argumentVectors(arity: number): Generator<unknown[]> {
  const strings = Array.from({ length: arity }, () => ARG);
  for (let objects = 0; objects <= Math.min(2, arity); objects++) {
    const base: unknown[] = strings.map((s, i) => (i >= arity - objects ? {} : s));
    yield base;
    for (let at = 0; at + 1 < arity; at++) {
      if (typeof base[at] !== 'string' || typeof base[at + 1] !== 'string') continue;
      const withEnums = [...base];
      withEnums[at] = ENUMS[0];
      withEnums[at + 1] = ENUMS[1];
      yield withEnums;
    }
  }
}

/** Every HTTP method of the SDK client class `Client` (constructed with `{ apiKey, baseUrl, fetch }`). */
export async function sdkSurface(
  Client: new (options: never) => object,
): Promise<{ methods: SdkMethod[]; unreached: string[] }> {
  // Set by `fetch` (TypeScript cannot see a closure's writes, hence the holder object).
  const probe: { seen?: { verb: string; path: string } } = {};
  const recorded = () => probe.seen;
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    probe.seen = { verb: (init?.method ?? 'GET').toUpperCase(), path: url.pathname };
    return new Response('{}', { status: 418, headers: { 'content-type': 'application/json' } });
  };
  const client = new Client({
    apiKey: 'sdk-surface',
    baseUrl: 'http://127.0.0.1:9',
    maxRetries: 0,
    fetch,
  } as never) as Record<string, unknown>;
  const found: Found[] = [];
  collect(client, '', found, 0);
  const methods: SdkMethod[] = [];
  const unreached: string[] = [];
  for (const f of found) {
    const fn = f.owner[f.key] as (...args: unknown[]) => unknown;
    delete probe.seen;
    const attempt = async (args: unknown[]): Promise<string> => {
      try {
        await fn.apply(f.owner, [...args, { maxRetries: 0 }]);
        return '';
      } catch (err) {
        // The SDK refused the placeholders, or turned the 418 into an error: `seen` says which.
        return err instanceof Error ? err.message : String(err);
      }
    };
    for (const args of argumentVectors(fn.length)) {
      const message = await attempt(args);
      if (probe.seen) break;
      const bodyAt = args.findIndex((a) => typeof a === 'object');
      if (bodyAt < 0 || !/Missing required key/.test(message)) continue;
      // A request body with required fields: learn their names, then try value shapes for them.
      const required = new Set<string>();
      let last = message;
      for (let round = 0; round < 6; round++) {
        const before = required.size;
        for (const m of last.matchAll(/Missing required key "([^"]+)"/g)) required.add(m[1] as string);
        if (required.size === before) break;
        last = await attempt(
          args.map((a, i) => (i === bodyAt ? Object.fromEntries([...required].map((k) => [k, ARG])) : a)),
        );
        if (probe.seen) break;
      }
      const keys = [...required].slice(0, 4);
      for (let combo = 0; !probe.seen && combo < SHAPES.length ** keys.length; combo++) {
        const body = Object.fromEntries(
          keys.map((k, i) => [k, SHAPES[Math.floor(combo / SHAPES.length ** i) % SHAPES.length]]),
        );
        await attempt(args.map((a, i) => (i === bodyAt ? body : a)));
      }
      if (probe.seen) break;
    }
    const seen = recorded();
    if (!seen) {
      unreached.push(f.name);
      continue;
    }
    const path = seen.path
      .split('/')
      // Enum arguments are the list methods' {direction}/{type}, right after `lists`.
      .map((segment, i, all) =>
        segment === ARG || (ENUMS.includes(segment) && (all[i - 1] === 'lists' || all[i - 2] === 'lists'))
          ? '{}'
          : segment,
      )
      .join('/');
    methods.push({ name: f.name, verb: seen.verb, path });
  }
  return { methods: methods.sort((a, b) => a.name.localeCompare(b.name)), unreached: unreached.sort() };
}

/** `/v0/inboxes/{inbox_id}/messages` and `/v0/inboxes/:inbox_id/messages` → `/v0/inboxes/{}/messages`. */
export function normalizePath(path: string): string {
  return path
    .split('/')
    .map((segment) => (/^\{[^}]*\}$/.test(segment) || segment.startsWith(':') ? '{}' : segment))
    .join('/');
}
