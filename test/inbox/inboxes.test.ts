import { AgentMailError } from 'agentmail';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callInbox, dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const call = callInbox;

describe.each(dialects)('%s: inboxes', (dialect) => {
  let server: InboxTestServer;
  let key: string;
  let podId: string;
  let otherKey: string;

  beforeAll(async () => {
    server = await startInboxServer({ dialect });
    const created = await server.createKey({ name: 'tests' });
    key = created.key;
    podId = created.podId;
    otherKey = (await server.createKey()).key;
  });
  afterAll(() => server.close());

  describe('authentication', () => {
    it.each([
      ['no header', undefined, 'MISSING_API_KEY'],
      ['not a bearer token', 'Basic abc', 'MALFORMED_API_KEY'],
      ['an unknown key', 'Bearer am_unknown', 'INVALID_API_KEY'],
      ['a key of the wrong shape', 'Bearer sk_live_123', 'INVALID_API_KEY'],
    ])('%s → 401 authentication_error', async (_name, header, code) => {
      const res = await fetch(`${server.url}/v0/inboxes`, { headers: header ? { authorization: header } : {} });
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({
        error: { type: 'authentication_error', message: expect.any(String), details: { code } },
      });
    });

    it('keys are am_ + at least 32 random bytes, and are not stored in clear', async () => {
      const created = await server.createKey();
      expect(created.key).toMatch(/^am_[A-Za-z0-9_-]{43,}$/);
      const rows = await server.service.database.db.selectFrom('api_keys').selectAll().execute();
      expect(rows.some((r) => JSON.stringify(r).includes(created.key))).toBe(false);
      expect(rows.find((r) => r.id === created.apiKeyId)?.key_hash).toMatch(/^[0-9a-f]{64}$/);
    });

    it('a second key of the same organization sees the same inboxes', async () => {
      const first = await server.createKey();
      const inbox = await server.client(first.key).inboxes.create({ username: 'shared-org' });
      const second = await server.createKey({ organizationId: first.organizationId });
      expect(second.podId).toBe(first.podId);
      expect((await server.client(second.key).inboxes.get(inbox.inboxId)).inboxId).toBe('shared-org@inbox.test');
    });

    it('adding a key to an unknown organization fails', async () => {
      await expect(server.createKey({ organizationId: 'org_missing' })).rejects.toThrow('does not exist');
    });
  });

  describe('create', () => {
    it('creates with an empty body through the SDK, on the default domain, in the default pod', async () => {
      const inbox = await server.client(key).inboxes.create();
      expect(inbox.inboxId).toMatch(/^agent-[a-z0-9_x-]+@inbox\.test$/);
      expect(inbox.podId).toBe(podId);
      expect(inbox.createdAt).toBeInstanceOf(Date);
    });

    it('answers the wire shape with 201, lower-casing the address', async () => {
      const res = await call(server, key, 'POST', '/v0/inboxes', {
        username: 'Sales.Team',
        domain: 'Agents.Test',
        display_name: 'Sales',
        client_id: 'create-1',
      });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        pod_id: podId,
        inbox_id: 'sales.team@agents.test',
        email: 'sales.team@agents.test',
        display_name: 'Sales',
        client_id: 'create-1',
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
      });
    });

    it('a repeated client_id returns the first inbox with 200, whatever else the body says', async () => {
      const first = await call(server, key, 'POST', '/v0/inboxes', { username: 'idem', client_id: 'idem-1' });
      const again = await call(server, key, 'POST', '/v0/inboxes', { username: 'something-else', client_id: 'idem-1' });
      expect([first.status, again.status]).toEqual([201, 200]);
      expect(again.body).toEqual(first.body);
      // client_ids are per organization
      const other = await call(server, otherKey, 'POST', '/v0/inboxes', {
        username: 'idem-other',
        client_id: 'idem-1',
      });
      expect(other.status).toBe(201);
    });

    it('a taken address answers 409, also across organizations', async () => {
      await call(server, key, 'POST', '/v0/inboxes', { username: 'taken' });
      for (const k of [key, otherKey]) {
        const res = await call(server, k, 'POST', '/v0/inboxes', { username: 'TAKEN' });
        expect(res.status).toBe(409);
        expect(res.body).toEqual({
          error: {
            type: 'conflict',
            message: expect.stringContaining('taken@inbox.test'),
            details: { field: 'username', code: 'ADDRESS_TAKEN' },
          },
        });
      }
    });

    it.each([
      [{ domain: 'example.com' }, 'domain', 'DOMAIN_NOT_ALLOWED'],
      [{ username: 'has space' }, 'username', 'INVALID_USERNAME'],
      [{ username: '.dot' }, 'username', 'INVALID_USERNAME'],
      [{ username: 'a..b' }, 'username', 'INVALID_USERNAME'],
      [{ username: 'x@y' }, 'username', 'INVALID_USERNAME'],
      [{ username: 'a'.repeat(65) }, 'username', 'INVALID_VALUE'],
      [{ display_name: 5 }, 'display_name', 'INVALID_VALUE'],
      [{ client_id: '' }, 'client_id', 'INVALID_VALUE'],
    ])('%j → 400 validation_error on %s', async (body, field, code) => {
      const res = await call(server, key, 'POST', '/v0/inboxes', body);
      expect(res.status).toBe(400);
      expect(res.body?.error).toMatchObject({ type: 'validation_error', details: { field, code } });
    });

    it('malformed JSON and wrong media types are refused in the error envelope', async () => {
      const bad = await call(server, key, 'POST', '/v0/inboxes', '{"username":');
      expect(bad.status).toBe(400);
      expect(bad.body).toEqual({
        error: {
          type: 'validation_error',
          message: 'The request body is not valid JSON.',
          details: { code: 'INVALID_JSON' },
        },
      });
      const res = await fetch(`${server.url}/v0/inboxes`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'text/plain' },
        body: 'x',
      });
      expect(res.status).toBe(415);
      expect(((await res.json()) as { error: { type: string } }).error.type).toBe('unsupported_media_type');
    });
  });

  describe('read, update, delete', () => {
    it('gets by address case-insensitively and URL-encoded, and hides other organizations', async () => {
      await call(server, key, 'POST', '/v0/inboxes', { username: 'reader' });
      const res = await call(server, key, 'GET', `/v0/inboxes/${encodeURIComponent('Reader@Inbox.Test')}`);
      expect(res.status).toBe(200);
      expect(res.body?.inbox_id).toBe('reader@inbox.test');
      const hidden = await call(server, otherKey, 'GET', '/v0/inboxes/reader@inbox.test');
      expect(hidden.status).toBe(404);
      expect(hidden.body?.error).toMatchObject({ type: 'not_found', details: { code: 'INBOX_NOT_FOUND' } });
      await expect(server.client(otherKey).inboxes.get('reader@inbox.test')).rejects.toBeInstanceOf(AgentMailError);
    });

    it('PATCH changes the display name (null clears it) and bumps updated_at', async () => {
      const created = await call(server, key, 'POST', '/v0/inboxes', { username: 'patchme', display_name: 'Old' });
      await new Promise((r) => setTimeout(r, 5));
      const patched = await call(server, key, 'PATCH', '/v0/inboxes/patchme@inbox.test', { display_name: 'New' });
      expect(patched.status).toBe(200);
      expect(patched.body?.display_name).toBe('New');
      expect(patched.body?.updated_at > created.body?.updated_at).toBe(true);
      const cleared = await call(server, key, 'PATCH', '/v0/inboxes/patchme@inbox.test', { display_name: null });
      expect(cleared.body).not.toHaveProperty('display_name');
      expect(
        (await call(server, otherKey, 'PATCH', '/v0/inboxes/patchme@inbox.test', { display_name: 'x' })).status,
      ).toBe(404);
      expect((await call(server, key, 'PATCH', '/v0/inboxes/patchme@inbox.test', {})).status).toBe(400);
    });

    it('DELETE removes the inbox (204) and frees nothing for other organizations to read', async () => {
      await call(server, key, 'POST', '/v0/inboxes', { username: 'gone' });
      expect((await call(server, otherKey, 'DELETE', '/v0/inboxes/gone@inbox.test')).status).toBe(404);
      expect((await call(server, key, 'DELETE', '/v0/inboxes/gone@inbox.test')).status).toBe(204);
      expect((await call(server, key, 'GET', '/v0/inboxes/gone@inbox.test')).status).toBe(404);
      expect((await call(server, key, 'DELETE', '/v0/inboxes/gone@inbox.test')).status).toBe(404);
    });
  });

  describe('list', () => {
    it('pages with limit and next_page_token, newest first or ascending, without repeats', async () => {
      const k = await server.createKey();
      const client = server.client(k.key);
      for (let i = 0; i < 7; i++) await client.inboxes.create({ username: `page-${dialect}-${i}` });
      const seen: string[] = [];
      let token: string | undefined;
      do {
        const page = await client.inboxes.list({ limit: 3, ...(token ? { pageToken: token } : {}) });
        expect(page.count).toBe(page.inboxes.length);
        expect(page.limit).toBe(3);
        seen.push(...page.inboxes.map((i) => i.inboxId));
        token = page.nextPageToken;
      } while (token);
      expect(seen).toEqual(Array.from({ length: 7 }, (_, i) => `page-${dialect}-${6 - i}@inbox.test`));
      const asc = await client.inboxes.list({ ascending: true, limit: 100 });
      expect(asc.inboxes.map((i) => i.inboxId)).toEqual([...seen].reverse());
      expect(asc.nextPageToken).toBeUndefined();
      // other organizations' inboxes never show
      expect(
        (await server.client(otherKey).inboxes.list({ limit: 100 })).inboxes.some((i) => i.inboxId.startsWith('page-')),
      ).toBe(false);
    });

    it('clamps limit to 100, and refuses bad limits and forged tokens', async () => {
      expect((await call(server, key, 'GET', '/v0/inboxes?limit=1000')).body?.limit).toBe(100);
      for (const q of [
        'limit=0',
        'limit=-1',
        'limit=abc',
        'page_token=not-a-token',
        `page_token=${Buffer.from('["x",1,"sideways"]').toString('base64url')}`,
      ]) {
        const res = await call(server, key, 'GET', `/v0/inboxes?${q}`);
        expect(res.status, q).toBe(400);
        expect(res.body?.error.type).toBe('validation_error');
      }
    });
  });

  describe('rate limit', () => {
    it('answers 429 with Retry-After and RateLimit headers past the per-key budget', async () => {
      const limited = await startInboxServer({ dialect, env: { INBOX_RATE_LIMIT_PER_MINUTE: '3' } });
      try {
        const k = await limited.createKey();
        const statuses = [];
        let last: Response | undefined;
        for (let i = 0; i < 4; i++) {
          last = await fetch(`${limited.url}/v0/inboxes`, { headers: { authorization: `Bearer ${k.key}` } });
          statuses.push(last.status);
        }
        expect(statuses).toEqual([200, 200, 200, 429]);
        expect(last?.headers.get('ratelimit-limit')).toBe('3');
        expect(last?.headers.get('ratelimit-remaining')).toBe('0');
        expect(Number(last?.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(await last?.json()).toMatchObject({
          error: { type: 'rate_limit_exceeded', details: { code: 'RATE_LIMIT_EXCEEDED' } },
        });
        // another key has its own budget
        const k2 = await limited.createKey({ organizationId: k.organizationId });
        expect(
          (await fetch(`${limited.url}/v0/inboxes`, { headers: { authorization: `Bearer ${k2.key}` } })).status,
        ).toBe(200);
      } finally {
        await limited.close();
      }
    });
  });

  describe('documentation and operations', () => {
    it('serves OpenAPI 3.1 and the docs page without a key; unknown routes are 404 in the envelope', async () => {
      const doc = (await (await fetch(`${server.url}/v0/openapi.json`)).json()) as {
        openapi: string;
        paths: Record<string, unknown>;
        components: { securitySchemes: Record<string, unknown> };
      };
      expect(doc.openapi).toBe('3.1.0');
      expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/v0/inboxes', '/v0/inboxes/{inbox_id}']));
      expect(doc.components.securitySchemes.bearer).toEqual({
        type: 'http',
        scheme: 'bearer',
        description: expect.any(String),
      });
      const page = await fetch(`${server.url}/v0/docs`);
      expect(page.headers.get('content-type')).toContain('text/html');
      const missing = await call(server, key, 'GET', '/v0/nothing-here');
      expect(missing.status).toBe(404);
      expect(missing.body?.error.type).toBe('not_found');
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    });
  });
});
