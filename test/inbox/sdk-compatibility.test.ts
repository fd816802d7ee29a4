import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compatibilityRows, readmeTable, renderTable, surfaces, type CompatRow } from '../../scripts/compat-table.js';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { expectWireShape } from '../support/sdk-shapes.js';
import { call, expectError } from './fixtures.js';

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

describe('the SDK surface reader', () => {
  it('reads every method of both SDK lines, with verb and path', async () => {
    const { current, previous } = await surfaces();
    // agentmail 0.5.27 has 141 methods (140 HTTP + the WebSocket), 0.4.9 has 93.
    expect(current.length).toBe(141);
    expect(previous.length).toBe(93);
    expect(current.find((m) => m.name === 'inboxes.messages.send')).toEqual({
      name: 'inboxes.messages.send',
      verb: 'POST',
      path: '/v0/inboxes/{}/messages/send',
    });
    expect(current.find((m) => m.name === 'inboxes.lists.get')).toEqual({
      name: 'inboxes.lists.get',
      verb: 'GET',
      path: '/v0/inboxes/{}/lists/{}/{}/{}',
    });
    expect(current.find((m) => m.name === 'websockets.connect')).toEqual({
      name: 'websockets.connect',
      verb: 'WS',
      path: '/v0',
    });
  });
});

describe.each(dialects)('%s: README Compatibility table', (dialect) => {
  let server: InboxTestServer;
  let key: string;
  let rows: CompatRow[];
  beforeAll(async () => {
    server = await startInboxServer({ dialect });
    key = (await server.createKey()).key;
    rows = await compatibilityRows(server.url, key);
  });
  afterAll(async () => server?.close());

  it('is what the running server answers (npm run docs:compat rewrites it)', () => {
    expect(readmeTable(README)).toBe(renderTable(rows));
  });

  it('names nothing hosted-only or missing that answers with anything but the error envelope', async () => {
    for (const row of rows.filter((r) => r.status !== 'yes' && r.verb !== 'WS')) {
      const path = row.path.replaceAll('{}', row.path.includes('/lists/') ? 'send' : 'x');
      const reply = await call(
        server.url,
        key,
        row.verb,
        path,
        row.verb === 'GET' || row.verb === 'DELETE' ? undefined : {},
      );
      expect(reply.status, `${row.name}`).toBeGreaterThanOrEqual(400);
      expect(Object.keys(reply.body), `${row.name}`).toEqual(['error']);
    }
  });

  it('answers hosted-only methods 404 ROUTE_NOT_FOUND in the error format', async () => {
    expectError(await call(server.url, key, 'GET', '/v0/providers'), 404, 'not_found', 'ROUTE_NOT_FOUND');
    expectError(await call(server.url, key, 'GET', '/v0/accounts'), 404, 'not_found', 'ROUTE_NOT_FOUND');
  });
});

describe('the strict wire-shape check', () => {
  it('fails on a missing required field, a wrong type and an unknown key, and passes a complete body', () => {
    expect(() => expectWireShape('pods.Pod', { pod_id: 'p' })).toThrow(/Missing required key/);
    const pod = {
      pod_id: 'p',
      name: 'n',
      updated_at: '2026-01-01T00:00:00.000Z',
      created_at: '2026-01-01T00:00:00.000Z',
    };
    expect(() => expectWireShape('pods.Pod', { ...pod, name: 3 })).toThrow(/Expected string/);
    expect(() => expectWireShape('pods.Pod', { ...pod, extra: true })).toThrow(/extra/);
    expectWireShape('pods.Pod', { ...pod, extra: true }, { allowExtraKeys: true });
  });
});
