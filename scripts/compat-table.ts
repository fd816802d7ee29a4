/**
 * The README's Compatibility table (`npm run docs:compat`): every method of the installed
 * agentmail SDK (0.5.x) and of agentmail-049 (0.4.9), and whether this server answers it. A
 * method counts as supported only when the route is in the service's OpenAPI document AND a live
 * request reaches it (anything but the "no such route" 404); the WebSocket is supported when a
 * real upgrade succeeds. test/inbox/sdk-compatibility.test.ts regenerates the table against
 * running servers and compares it with the README, so the table cannot drift from the routes.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { AgentMailClient } from 'agentmail';
import { AgentMailClient as AgentMailClient049 } from 'agentmail-049';
import WebSocket from 'ws';
import { normalizePath, sdkSurface, type SdkMethod } from './sdk-surface.js';

/** Methods that only make sense on AgentMail's hosted service, and why. */
export const HOSTED_ONLY: Readonly<Record<string, string>> = {
  accounts: 'accounts at third-party mail providers, connected through the hosted service',
  providers: "the hosted service's catalogue of third-party providers to sign in to",
  'inboxes.authorize': "signs an inbox in at a third-party provider through the hosted service's sign-in flow",
};

export const WEBSOCKET_METHOD = 'websockets.connect';
const PLACEHOLDER = 'zz-compat';
const ENUMS = ['send', 'allow'];

export interface CompatRow {
  readonly name: string;
  readonly verb: string;
  readonly path: string;
  readonly in049: boolean;
  readonly in05: boolean;
  readonly status: 'yes' | 'hosted' | 'no';
  readonly note: string;
}

function hostedReason(name: string): string | undefined {
  return HOSTED_ONLY[name] ?? HOSTED_ONLY[name.split('.')[0] as string];
}

/** Both SDKs' methods, keyed by name; the WebSocket added by hand (it is no HTTP call). */
export async function surfaces(): Promise<{ current: SdkMethod[]; previous: SdkMethod[] }> {
  const withSocket = async (Client: new (options: never) => object): Promise<SdkMethod[]> => {
    const { methods, unreached } = await sdkSurface(Client);
    const rest = unreached.filter((n) => n !== WEBSOCKET_METHOD);
    if (rest.length > 0) throw new Error(`SDK methods the surface reader could not call: ${rest.join(', ')}`);
    return unreached.includes(WEBSOCKET_METHOD)
      ? [...methods, { name: WEBSOCKET_METHOD, verb: 'WS', path: '/v0' }].sort((a, b) => a.name.localeCompare(b.name))
      : methods;
  };
  return {
    current: await withSocket(AgentMailClient as never),
    previous: await withSocket(AgentMailClient049 as never),
  };
}

function concretePath(path: string): string {
  let enums = 0;
  return path
    .split('/')
    .map((segment, i, all) => {
      if (segment !== '{}') return segment;
      // The list methods' {direction}/{type} pair: the segment after `lists`.
      if (all[i - 1] === 'lists' || (all[i - 2] === 'lists' && enums === 1)) return ENUMS[enums++] as string;
      return PLACEHOLDER;
    })
    .join('/');
}

async function reaches(baseUrl: string, key: string, method: SdkMethod): Promise<boolean> {
  if (method.verb === 'WS') {
    const socket = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/v0?api_key=${encodeURIComponent(key)}`);
    const opened = await new Promise<boolean>((done) => {
      socket.once('open', () => done(true));
      socket.once('unexpected-response', () => done(false));
      socket.once('error', () => done(false));
    });
    socket.terminate();
    return opened;
  }
  const hasBody = method.verb === 'POST' || method.verb === 'PATCH' || method.verb === 'PUT';
  const response = await fetch(`${baseUrl}${concretePath(method.path)}`, {
    method: method.verb,
    headers: { authorization: `Bearer ${key}`, ...(hasBody ? { 'content-type': 'application/json' } : {}) },
    ...(hasBody ? { body: '{}' } : {}),
  });
  const text = await response.text();
  if (response.status === 405) return false;
  if (response.status !== 404) return true;
  return !text.includes('ROUTE_NOT_FOUND');
}

/** The table's rows, probing the server at `baseUrl` (its OpenAPI document from /v0/openapi.json) with `key`. */
export async function compatibilityRows(baseUrl: string, key: string): Promise<CompatRow[]> {
  const { current, previous } = await surfaces();
  const openapi = (await (await fetch(`${baseUrl}/v0/openapi.json`)).json()) as {
    paths: Record<string, Record<string, unknown>>;
  };
  const documented = new Set(
    Object.entries(openapi.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((verb) => `${verb.toUpperCase()} ${normalizePath(path)}`),
    ),
  );
  const byName = new Map<string, { method: SdkMethod; in05: boolean; in049: boolean }>();
  for (const m of previous) byName.set(m.name, { method: m, in05: false, in049: true });
  for (const m of current) {
    const old = byName.get(m.name);
    byName.set(m.name, {
      method: m,
      in05: true,
      in049: old !== undefined && old.method.verb === m.verb && old.method.path === m.path,
    });
    if (old && !(old.method.verb === m.verb && old.method.path === m.path))
      byName.set(`${m.name} (0.4.9)`, { method: old.method, in05: false, in049: true });
  }
  const rows: CompatRow[] = [];
  for (const [name, { method, in05, in049 }] of [...byName.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    const hosted = hostedReason(method.name);
    const live = await reaches(baseUrl, key, method);
    const inDocs = method.verb === 'WS' || documented.has(`${method.verb} ${method.path}`);
    if (hosted !== undefined) {
      if (live) throw new Error(`${name} is listed as hosted-only but the server answers it: update HOSTED_ONLY`);
      rows.push({
        name,
        verb: method.verb,
        path: method.path,
        in05,
        in049,
        status: 'hosted',
        note: `hosted service only: ${hosted}`,
      });
    } else if (live && inDocs) {
      rows.push({ name, verb: method.verb, path: method.path, in05, in049, status: 'yes', note: '' });
    } else {
      rows.push({
        name,
        verb: method.verb,
        path: method.path,
        in05,
        in049,
        status: 'no',
        note: live ? 'answered but not documented in OpenAPI' : 'not yet',
      });
    }
  }
  return rows;
}

export const TABLE_START = '<!-- compatibility:start (npm run docs:compat) -->';
export const TABLE_END = '<!-- compatibility:end -->';

export function renderTable(rows: readonly CompatRow[]): string {
  const count = (pick: (r: CompatRow) => boolean) => rows.filter(pick).length;
  const current = count((r) => r.in05);
  const previous = count((r) => r.in049);
  const lines = [
    TABLE_START,
    `agentmail 0.5.27: **${count((r) => r.in05 && r.status === 'yes')} of ${current}** methods supported, ${count((r) => r.in05 && r.status === 'hosted')} hosted-only; agentmail 0.4.9: **${count((r) => r.in049 && r.status === 'yes')} of ${previous}** supported, ${count((r) => r.in049 && r.status === 'hosted')} hosted-only.`,
    '',
    '| SDK method | Request | 0.5.27 | 0.4.9 | Here |',
    '|---|---|---|---|---|',
    ...rows.map((r) => {
      const here = r.status === 'yes' ? 'supported' : `no (${r.note})`;
      return `| \`${r.name}\` | \`${r.verb} ${r.path}\` | ${r.in05 ? '✓' : ''} | ${r.in049 ? '✓' : ''} | ${here} |`;
    }),
    TABLE_END,
  ];
  return lines.join('\n');
}

/** The table as it stands in README.md (between the markers). */
export function readmeTable(readme: string): string | undefined {
  const start = readme.indexOf(TABLE_START);
  const end = readme.indexOf(TABLE_END);
  return start < 0 || end < 0 ? undefined : readme.slice(start, end + TABLE_END.length);
}

async function main(): Promise<void> {
  const { loadConfig } = await import('../src/platform/config/config.js');
  const { inboxConfigSpec } = await import('../src/inbox/inbox.config.js');
  const { startInboxService } = await import('../src/inbox/service.js');
  const config = loadConfig(inboxConfigSpec, {
    HOST: '127.0.0.1',
    INBOX_PORT: '0',
    INBOX_ROLES: 'api',
    INBOX_DATABASE_URL: 'sqlite::memory:',
    LOG_LEVEL: 'silent',
  });
  const service = await startInboxService(config);
  try {
    const key = await service.runtime.services.apiKeys.createKey({ name: 'compat' });
    const rows = await compatibilityRows((service.url ?? '').replace('localhost', '127.0.0.1'), key.key);
    const file = resolve(fileURLToPath(import.meta.url), '..', '..', 'README.md');
    const readme = readFileSync(file, 'utf8');
    const old = readmeTable(readme);
    if (!old) throw new Error(`README.md lacks the markers ${TABLE_START} … ${TABLE_END}`);
    writeFileSync(file, readme.replace(old, renderTable(rows)));
    console.log(renderTable(rows).split('\n')[1]);
  } finally {
    await service.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) await main();
