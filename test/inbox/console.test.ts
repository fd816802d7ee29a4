import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsole } from '../../scripts/build-console.js';
import { hasChromium, launchChromium } from '../property/admin-browser.js';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';
import {
  createInboxTestDatabase,
  dialects,
  startInboxServer,
  type InboxTestDatabase,
  type InboxTestServer,
} from '../support/inbox-server.js';
import nodemailer from 'nodemailer';
import { smtpPort } from './smtp-inbound.helpers.js';
import { bearerKey, call, expectError, organization, unique } from './fixtures.js';

/**
 * The web console's sign-in (issue 30): an API key exchanged for an HttpOnly, SameSite=Strict
 * session cookie and a CSRF token; the console then uses the ordinary /v0 routes, held to its key's
 * scope; sign-out, expiry and a deleted key end the session on the server. And the page in Chromium.
 */

const require = createRequire(import.meta.url);

/** Where the browser tests leave a screenshot of each step, for a person to look at (`.tmp/` is ignored by git). */
const SCREENSHOTS = process.env.CONSOLE_TEST_SCREENSHOTS ?? path.resolve('.tmp/screenshots/console');
/** The console's budget: script and stylesheet together, uncompressed (the property admin's is about 1.5 MB). */
const BUNDLE_BUDGET_BYTES = 48 * 1024;

async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** axe-core in the page: the accessibility violations of what it shows now, but the minor ones. */
async function axeViolations(page: Page): Promise<string[]> {
  // Evaluated by the browser's debugger protocol, which the page's CSP (no inline scripts) does not govern.
  await page.evaluate(readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8'));
  const result = await page.evaluate(async () => {
    const axe = (
      globalThis as unknown as {
        axe: { run(): Promise<{ violations: { id: string; impact: string; nodes: unknown[] }[] }> };
      }
    ).axe;
    return (await axe.run()).violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length }));
  });
  return result.filter((v) => v.impact !== 'minor').map((v) => `${v.id} (${v.impact}, ${v.nodes})`);
}

interface Answer {
  status: number;
  headers: Headers;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- wire bodies are checked key by key
  body: any;
}

async function request(
  server: InboxTestServer,
  method: string,
  url: string,
  options: { cookie?: string; csrf?: string; body?: unknown } = {},
): Promise<Answer> {
  const res = await fetch(`${server.url}${url}`, {
    method,
    redirect: 'manual',
    headers: {
      ...(options.cookie ? { cookie: options.cookie } : {}),
      ...(options.csrf ? { 'x-csrf-token': options.csrf } : {}),
      ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text && text.startsWith('{') ? JSON.parse(text) : text };
}

async function signIn(server: InboxTestServer, key: string) {
  const answer = await request(server, 'POST', '/console/session', { body: { api_key: key } });
  expect(answer.status).toBe(200);
  const setCookie = answer.headers.get('set-cookie') ?? '';
  const cookie = setCookie.split(';')[0] as string;
  return { answer, setCookie, cookie, csrf: answer.body.csrf_token as string };
}

const asReply = (a: Answer) => ({ ...a, bytes: Buffer.from(JSON.stringify(a.body)) });

describe.each(dialects)('console sessions (%s)', (dialect) => {
  let server: InboxTestServer;
  let org: Awaited<ReturnType<typeof organization>>;

  beforeAll(async () => {
    server = await startInboxServer({ dialect });
    org = await organization(server, [unique('con'), unique('sole')]);
  });
  afterAll(async () => server?.close());

  it('exchanges a key for an HttpOnly, SameSite=Strict cookie and a CSRF token; the key is never sent back', async () => {
    const { answer, setCookie, cookie, csrf } = await signIn(server, org.key);
    expect(setCookie).toMatch(/^am_console=amc_[\w-]+; Path=\/; HttpOnly; SameSite=Strict; Max-Age=43200$/);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(answer.body).toEqual({
      csrf_token: csrf,
      expires_at: expect.any(String),
      organization_id: org.organizationId,
    });
    expect(JSON.stringify(answer.body)).not.toContain(org.key);
    // The stored row holds the token's hash, never the token or the key.
    const rows = await server.service.runtime.services.db.selectFrom('console_sessions').selectAll().execute();
    const text = JSON.stringify(rows);
    expect(text).not.toContain(cookie.split('=')[1]);
    expect(text).not.toContain(org.key);
    // The session answers what the key answers.
    const viaSession = await request(server, 'GET', '/v0/inboxes', { cookie, csrf });
    const viaKey = await call(server.url, org.key, 'GET', '/v0/inboxes');
    expect(viaSession.status).toBe(200);
    expect(viaSession.body).toEqual(viaKey.body);
    expect((await request(server, 'GET', '/console/session', { cookie })).body.csrf_token).toBe(csrf);
  });

  it('refuses a bad key, a cookie without its CSRF token, and a forged one, in the error format', async () => {
    expectError(
      asReply(await request(server, 'POST', '/console/session', { body: { api_key: 'am_nope' } })),
      401,
      'authentication_error',
      'INVALID_API_KEY',
    );
    expectError(
      asReply(await request(server, 'POST', '/console/session', { body: {} })),
      400,
      'validation_error',
      'REQUIRED',
    );
    const { cookie, csrf } = await signIn(server, org.key);
    for (const given of [undefined, 'x'.repeat(csrf.length), `${csrf}x`]) {
      const answer = await request(server, 'GET', '/v0/inboxes', { cookie, ...(given ? { csrf: given } : {}) });
      expectError(asReply(answer), 401, 'authentication_error', 'CSRF_TOKEN_MISMATCH');
    }
    expectError(
      asReply(await request(server, 'GET', '/v0/inboxes', { cookie: 'am_console=amc_forged', csrf })),
      401,
      'authentication_error',
      'SESSION_EXPIRED',
    );
    expectError(
      asReply(await request(server, 'GET', '/console/session')),
      401,
      'authentication_error',
      'NO_CONSOLE_SESSION',
    );
  });

  it("holds a session to its key's scope: an inbox key's session sees its inbox only", async () => {
    const [own, other] = org.inboxes as [string, string];
    const inboxKey = bearerKey(await org.client.inboxes.apiKeys.create(own, { name: 'console' })).apiKey;
    const { cookie, csrf, answer } = await signIn(server, inboxKey);
    expect(answer.body.inbox_id).toBe(own);
    const listed = await request(server, 'GET', '/v0/inboxes', { cookie, csrf });
    expect(listed.body.inboxes.map((i: { inbox_id: string }) => i.inbox_id)).toEqual([own]);
    expect(
      (await request(server, 'GET', `/v0/inboxes/${encodeURIComponent(other)}/threads`, { cookie, csrf })).status,
    ).toBe(404);
  });

  it("domains.getSetupLink's errors: an unknown domain or another organization's is a 404, no key a 401", async () => {
    expectError(
      await call(server.url, org.key, 'GET', '/v0/domains/nothing-here.example/setup-link'),
      404,
      'not_found',
      'DOMAIN_NOT_FOUND',
    );
    expectError(
      await call(server.url, undefined, 'GET', '/v0/domains/nothing-here.example/setup-link'),
      401,
      'authentication_error',
      'MISSING_API_KEY',
    );
    const sdkError = await org.client.domains.getSetupLink('nothing-here.example').catch((e: unknown) => e);
    expect(sdkError).toMatchObject({ statusCode: 404 });
  });

  it('ends at sign-out (which needs the CSRF token), at its time, and with its key', async () => {
    const signedIn = await signIn(server, org.key);
    expectError(
      asReply(await request(server, 'DELETE', '/console/session', { cookie: signedIn.cookie })),
      401,
      'authentication_error',
      'CSRF_TOKEN_MISMATCH',
    );
    const out = await request(server, 'DELETE', '/console/session', { cookie: signedIn.cookie, csrf: signedIn.csrf });
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toMatch(/^am_console=; .*Max-Age=0/);
    expect((await request(server, 'GET', '/v0/inboxes', signedIn)).status).toBe(401);

    const expiring = await signIn(server, org.key);
    await server.service.runtime.services.db
      .updateTable('console_sessions')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .execute();
    expectError(
      asReply(await request(server, 'GET', '/v0/inboxes', expiring)),
      401,
      'authentication_error',
      'SESSION_EXPIRED',
    );

    const created = bearerKey(await org.client.apiKeys.create({ name: unique('temp') }));
    const withKey = await signIn(server, created.apiKey);
    expect((await request(server, 'GET', '/v0/inboxes', withKey)).status).toBe(200);
    await org.client.apiKeys.delete(created.apiKeyId);
    expect((await request(server, 'GET', '/v0/inboxes', withKey)).status).toBe(401);
  });
});

/**
 * The page in Chromium, on each dialect. On PostgreSQL two instances share the database, as in a
 * deployment behind a balancer: the page talks to `server`, and what the test sets up and checks
 * through the API (organizations, sends, drafts, keys) goes through `api`, the other instance, so
 * that every step also proves the page sees what another instance wrote. On SQLite both are one.
 */
describe.skipIf(!hasChromium).each(dialects)('console page in Chromium (%s)', (dialect) => {
  let dir = '';
  let database: InboxTestDatabase | undefined;
  let server: InboxTestServer;
  let api: InboxTestServer;
  let browser: Browser;
  let dns: TestDnsServer;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'console-build-'));
    await buildConsole(dir);
    dns = await startDnsServer();
    const env = {
      INBOX_CONSOLE_DIR: dir,
      INBOX_DNS_SERVERS: dns.address,
      INBOX_SMTP_HOSTNAME: 'mx.console.test',
      INBOX_DOMAIN_KEY_SECRET: 'a-test-secret-of-at-least-32-characters!',
    };
    if (dialect === 'postgres') {
      database = createInboxTestDatabase('postgres');
      server = await startInboxServer({ database, env });
      api = await startInboxServer({ database, env: { ...env, INBOX_ROLES: 'api,smtp' } });
    } else {
      server = await startInboxServer({ env });
      api = server;
    }
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    if (api !== server) await api?.close();
    await server?.close();
    await database?.drop();
    await dns?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('signs in with a key typed into a password field, shows inboxes, threads and a message whose HTML cannot run scripts, and signs out', async () => {
    const org = await organization(api, [unique('web'), unique('peer')]);
    const [inbox, peer] = org.inboxes as [string, string];
    await org.client.inboxes.messages.send(peer, {
      to: inbox,
      subject: 'Rendered safely',
      text: 'plain part',
      html: '<p id="p">Hello <b>console</b></p><img src="https://tracker.example/pixel.gif"><script>parent.document.title="pwned"</script>',
    });
    const page = await browser.newPage();
    const requests: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    await page.goto(`${server.url}/console/`);
    const field = page.locator('#api-key');
    expect(await field.getAttribute('type')).toBe('password');
    await field.fill(org.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator(`[data-inbox="${inbox}"]`).click();
    await page.locator('.thread-item', { hasText: 'Rendered safely' }).click();
    const frame = page.locator('iframe.html-body');
    await frame.waitFor();
    expect(await frame.getAttribute('sandbox')).toBe('');
    expect(await page.frameLocator('iframe.html-body').locator('#p').innerText()).toBe('Hello console');
    // No script of the mail ran, no remote image was fetched, nothing left this origin.
    expect(await page.title()).toBe('Inbox console');
    expect(requests.some((u) => u.includes('tracker.example'))).toBe(false);
    expect(requests.every((u) => u.startsWith(server.url) || u.startsWith('about:') || u.startsWith('data:'))).toBe(
      true,
    );
    // The key is nowhere the page's script could read it: not in storage, not in cookies, not in the page.
    const traces = await page.evaluate(() => {
      type Storage = Record<string, string>;
      const w = globalThis as unknown as {
        localStorage: Storage;
        sessionStorage: Storage;
        document: { cookie: string; documentElement: { outerHTML: string } };
      };
      return {
        storage: JSON.stringify({ ...w.localStorage }) + JSON.stringify({ ...w.sessionStorage }),
        cookie: w.document.cookie,
        html: w.document.documentElement.outerHTML,
      };
    });
    expect(traces.cookie).toBe('');
    expect(traces.storage + traces.html).not.toContain(org.key);
    // The page's policy is strict.
    const csp = (await (await fetch(`${server.url}/console/`)).headers.get('content-security-policy')) ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    // Live: a message that arrives now shows up without a reload, over the session's WebSocket.
    await page.locator('#live', { hasText: 'live' }).waitFor({ timeout: 5000 });
    await org.client.inboxes.messages.send(peer, { to: inbox, subject: 'Arrived live', text: 'no reload' });
    await page.locator('.thread-item', { hasText: 'Arrived live' }).waitFor({ timeout: 5000 });
    // The feed does not take a session from another site's page.
    const cookie = (await page.context().cookies()).find((c) => c.name === 'am_console');
    const crossSite = await new Promise<number>((resolve) => {
      const req = http.get(`${server.url}/v0`, {
        headers: {
          connection: 'Upgrade',
          upgrade: 'websocket',
          'sec-websocket-version': '13',
          'sec-websocket-key': Buffer.from('0123456789abcdef').toString('base64'),
          origin: 'https://evil.example',
          cookie: `am_console=${cookie?.value ?? ''}`,
        },
      });
      req.on('response', (res) => resolve(res.statusCode ?? 0));
      req.on('upgrade', () => resolve(101));
    });
    expect(crossSite).toBe(403);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.locator('#api-key').waitFor();
    expect((await page.context().cookies()).filter((c) => c.name === 'am_console' && c.value)).toEqual([]);
    await page.close();
  });

  it('reviews drafts: every inbox the key sees, keyboard to move and open, edit and send now, discard', async () => {
    const org = await organization(api, [unique('rev'), unique('iew')]);
    const [one, two] = org.inboxes as [string, string];
    const first = await org.client.inboxes.drafts.create(one, {
      to: [two],
      subject: 'Needs a look',
      text: 'Draft body',
    });
    const sendAt = new Date(Date.now() + 86_400_000);
    await org.client.inboxes.drafts.create(two, { to: [one], subject: 'Later one', text: 'x', sendAt });
    const page = await browser.newPage();
    page.on('dialog', (dialog) => void dialog.accept());
    await page.goto(`${server.url}/console/`);
    await page.locator('#api-key').fill(org.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: 'Drafts to review' }).click();
    const items = page.locator('.draft-item');
    await expect.poll(() => items.count()).toBe(2);
    await expect.poll(() => page.locator('.draft-item .scheduled').count()).toBe(1);
    // Keyboard: j and k move, Enter opens.
    const current = () => page.locator('.draft-item[aria-current="true"]').getAttribute('data-draft');
    const order = await items.evaluateAll((els) => els.map((e) => e.getAttribute('data-draft')));
    expect(await current()).toBe(order[0]);
    await page.keyboard.press('j');
    expect(await current()).toBe(order[1]);
    await page.keyboard.press('k');
    expect(await current()).toBe(order[0]);
    await page.locator(`.draft-item[data-draft="${first.draftId}"]`).focus();
    await page.keyboard.press('Enter');
    await page.locator('#draft-subject').fill('Looked at and sent');
    await page.keyboard.press('Control+Enter');
    await page.locator('#review-message', { hasText: 'Sent.' }).waitFor();
    await expect.poll(() => items.count()).toBe(1);
    const sent = await org.client.inboxes.messages.list(one, { labels: ['sent'] });
    expect(sent.messages.map((m) => m.subject)).toContain('Looked at and sent');
    // Discard the other (the page asks first; the test accepts).
    await items.first().click();
    await page.locator('#discard').click();
    await page.locator('#review-message', { hasText: 'Discarded.' }).waitFor();
    expect((await org.client.drafts.list()).drafts).toEqual([]);
    await page.close();
  });

  it('writes mail: compose, reply, forward, and labels added and removed, each seen by the API', async () => {
    const org = await organization(api, [unique('wri'), unique('ter')]);
    const [me, peer] = org.inboxes as [string, string];
    await org.client.inboxes.messages.send(peer, { to: me, subject: 'Question', text: 'Can you help?' });
    const page = await browser.newPage();
    await page.goto(`${server.url}/console/`);
    await page.locator('#api-key').fill(org.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator(`[data-inbox="${me}"]`).click();
    // A new message.
    await page.locator('#compose').click();
    await page.locator('#new-message-to').fill(peer);
    await page.locator('#new-message-subject').fill('Hello from the console');
    await page.locator('#new-message-text').fill('Typed by a person.');
    await page.getByRole('form', { name: 'New message' }).getByRole('button', { name: 'Send' }).click();
    await expect
      .poll(async () => (await org.client.inboxes.messages.list(peer)).messages.map((m) => m.subject))
      .toContain('Hello from the console');
    // A reply in the thread.
    await page.locator('.thread-item', { hasText: 'Question' }).click();
    await page.locator('.message .reply').first().click();
    await page.locator('#reply-text').fill('Yes, gladly.');
    await page.getByRole('form', { name: 'Reply' }).getByRole('button', { name: 'Send' }).click();
    await expect.poll(() => page.locator('.thread .message').count()).toBe(2);
    // A label added, then removed.
    await page.locator('.add-label input').first().fill('vip');
    await page.locator('.add-label input').first().press('Enter');
    await page.locator('.thread .message .label', { hasText: 'vip' }).first().waitFor();
    const threads = await org.client.inboxes.threads.list(me);
    const thread = threads.threads.find((t) => t.subject === 'Question');
    expect(thread?.labels).toContain('vip');
    await page.getByRole('button', { name: 'Remove label vip' }).first().click();
    await expect
      .poll(async () => (await org.client.inboxes.threads.get(me, thread!.threadId)).labels)
      .not.toContain('vip');
    // A system label cannot be removed: the API's message is shown, nothing changes.
    await page.getByRole('button', { name: 'Remove label received' }).first().click();
    await page.locator('.thread .status.error').first().waitFor();
    // A forward.
    await page.locator('.message .forward').first().click();
    await page.locator('#forward-to').fill(peer);
    await page.locator('#forward-text').fill('FYI');
    await page.getByRole('form', { name: 'Forward' }).getByRole('button', { name: 'Send' }).click();
    await expect
      .poll(async () => (await org.client.inboxes.messages.list(peer)).messages.map((m) => m.subject))
      .toContain('Fwd: Question');
    await page.close();
  });

  it("domains: getSetupLink leads to the domain's console page, whose records are copied, published and verified there", async () => {
    const org = await organization(api);
    const name = `${unique('shop')}.example`;
    const page = await browser.newPage();
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    await page.goto(`${server.url}/console/#/domains`);
    await page.locator('#api-key').fill(org.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#new-domain').fill(name);
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await page.locator('#domain-status', { hasText: 'NOT_STARTED' }).waitFor();
    // The SDK's getSetupLink answers this very page, on the instance that was asked (its own origin).
    const link = await org.client.domains.getSetupLink(name);
    expect(link).toMatchObject({ supported: true, url: `${api.url}/console/#/domains/${encodeURIComponent(name)}` });
    await page.goto(link.url as string);
    await page.locator('#domain-status', { hasText: 'NOT_STARTED' }).waitFor();
    const records = (await org.client.domains.get(name)).records;
    expect(await page.locator('table.records tbody tr').count()).toBe(records.length);
    // Copy a value as a person would, and publish every record at the (test) DNS provider.
    const dkim = records.find((r) => r.name.includes('._domainkey.'))!;
    await page.getByRole('button', { name: `Copy the value of the TXT record ${dkim.name}` }).click();
    expect(
      await page.evaluate(() =>
        (
          globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }
        ).navigator.clipboard.readText(),
      ),
    ).toBe(dkim.value);
    for (const r of records)
      dns.add(
        r.name,
        r.type === 'MX'
          ? { type: 'MX', priority: r.priority ?? 10, exchange: r.value }
          : { type: 'TXT', value: r.value },
      );
    await page.locator('#zone-file').click();
    await page.locator('.zone pre', { hasText: dkim.name }).waitFor();
    await page.locator('#verify-domain').click();
    await page.locator('#domain-status', { hasText: 'VERIFIED' }).waitFor();
    expect((await org.client.domains.get(name)).status).toBe('VERIFIED');
    await page.close();
  });

  it('API keys: a new key shown once (and working), scoped to an inbox, revoked from the page', async () => {
    const org = await organization(api, [unique('keys')]);
    const inbox = org.inboxes[0] as string;
    const page = await browser.newPage();
    page.on('dialog', (dialog) => void dialog.accept());
    await page.goto(`${server.url}/console/#/keys`);
    await page.locator('#api-key').fill(org.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#key-name').fill('support desk');
    await page.locator('#key-inbox').fill(inbox);
    await page.locator('#key-read-only').check();
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = (await page.locator('code.secret').innerText()).trim();
    expect(secret).toMatch(/^am_/);
    const made = api.client(secret);
    expect((await made.inboxes.list()).inboxes.map((i) => i.inboxId)).toEqual([inbox]);
    await expect(made.inboxes.messages.send(inbox, { to: inbox, text: 'x' })).rejects.toMatchObject({
      statusCode: 403,
    });
    // The secret is shown once: the list shows its prefix only, and a reload does not bring it back.
    await page.reload();
    await page.locator('table.key-list').waitFor();
    expect(await page.content()).not.toContain(secret);
    await page.getByRole('button', { name: 'Revoke support desk' }).click();
    await expect.poll(() => page.locator('tr', { hasText: 'support desk' }).count()).toBe(0);
    await expect(made.inboxes.list()).rejects.toMatchObject({ statusCode: 401 });
    await page.close();
  });

  it('webhooks and inboxes: a webhook made on the page receives a delivery shown there, then is disabled; an inbox made, renamed and paused', async () => {
    const receiver = await startWebhookReceiver();
    try {
      const org = await organization(api, [unique('hook')]);
      const inbox = org.inboxes[0] as string;
      const page = await browser.newPage();
      page.on('dialog', (dialog) => void dialog.accept());
      await page.goto(`${server.url}/console/#/webhooks`);
      await page.locator('#api-key').fill(org.key);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.locator('#webhook-url').fill(receiver.url('/hook'));
      await page.locator('#webhook-inboxes').fill(inbox);
      await page.getByRole('button', { name: 'Create webhook' }).click();
      await page.locator('#webhook-state', { hasText: 'enabled' }).waitFor();
      // "Send test event": a signed webhook.test through the delivery worker, its attempt shown on the page.
      await page.locator('#test-webhook').click();
      await page.locator('.webhook p.status', { hasText: 'delivered (200)' }).waitFor({ timeout: 15_000 });
      await page.locator('.delivery-list td', { hasText: 'webhook.test' }).waitFor();
      expect(JSON.parse(receiver.received[0]?.body ?? '{}')).toMatchObject({ event_type: 'webhook.test' });
      await shot(page, '5-webhook-test-event');
      await org.client.inboxes.messages.send(inbox, { to: inbox, subject: 'ping', text: 'x' });
      await receiver.waitFor(2, 10_000);
      await server.service.runtime.runner.drain();
      await expect
        .poll(
          async () => {
            await page.reload();
            return page.locator('.delivery-list td', { hasText: '200' }).count();
          },
          { timeout: 10_000 },
        )
        .toBeGreaterThan(0);
      await page.locator('#toggle-webhook').click();
      await page.locator('#webhook-state', { hasText: 'disabled' }).waitFor();
      expect((await org.client.webhooks.list()).webhooks[0]?.enabled).toBe(false);
      expect(await page.locator('#test-webhook').isDisabled()).toBe(true);

      // Inboxes: made, renamed and paused from the mail section.
      await page.goto(`${server.url}/console/#/mail`);
      const username = unique('made');
      await page.locator('#new-inbox').fill(username);
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      const address = `${username}@inbox.test`;
      await page.locator(`[data-inbox="${address}"]`).waitFor();
      await page.locator('.inbox-settings summary').click();
      await page.locator('#inbox-display-name').fill('Made in the console');
      await page.locator('#inbox-paused').check();
      await page.getByRole('button', { name: 'Save inbox' }).click();
      await page.locator('.inbox-form', { hasText: 'Saved.' }).waitFor();
      const made = await org.client.inboxes.get(address);
      expect(made.displayName).toBe('Made in the console');
      expect((made as unknown as { status?: string }).status).toBe('paused');
      await page.close();
    } finally {
      await receiver.stop();
    }
  });

  it('allow and block lists and pods: entries and pods added and removed on the page, as the API sees them', async () => {
    const org = await organization(api);
    const page = await browser.newPage();
    page.on('dialog', (dialog) => void dialog.accept());
    await page.goto(`${server.url}/console/#/lists`);
    await page.locator('#api-key').fill(org.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#list-entry').fill('spammer.example');
    await page.locator('#list-direction').selectOption('receive');
    await page.locator('#list-type').selectOption('block');
    await page.getByRole('button', { name: 'Add entry' }).click();
    await page.locator('[data-list="receive/block"] li', { hasText: 'spammer.example' }).waitFor();
    const listed = await call(api.url, org.key, 'GET', '/v0/lists/receive/block');
    expect(listed.body.entries.map((e: { entry: string }) => e.entry)).toEqual(['spammer.example']);
    await page.getByRole('button', { name: 'Remove spammer.example from receive block' }).click();
    await expect
      .poll(async () => (await call(api.url, org.key, 'GET', '/v0/lists/receive/block')).body.entries.length)
      .toBe(0);
    await page.goto(`${server.url}/console/#/pods`);
    const pod = unique('team');
    await page.locator('#pod-name').fill(pod);
    await page.getByRole('button', { name: 'Create pod' }).click();
    await page.locator('li', { hasText: pod }).waitFor();
    expect((await org.client.pods.list()).pods.map((p) => p.name)).toContain(pod);
    await page.getByRole('button', { name: `Delete pod ${pod}` }).click();
    await expect.poll(async () => (await org.client.pods.list()).pods.map((p) => p.name)).not.toContain(pod);
    await page.close();
  });

  it('a page of another origin cannot write with the session: its form post and its fetch carry no CSRF token', async () => {
    const org = await organization(api);
    const page = await browser.newPage();
    await page.goto(`${server.url}/console/`);
    await page.locator('#api-key').fill(org.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#live').waitFor();
    const before = (await org.client.inboxes.list()).inboxes.length;
    // Another origin (another port of the same host: the same site, so SameSite does not help here;
    // the CSRF header does).
    const evil = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<form id="f" method="POST" action="${server.url}/v0/inboxes" enctype="text/plain">
        <input name='{"username":"stolen","x":"' value='"}'></form>
        <script>
          fetch('${server.url}/v0/inboxes', { method: 'POST', credentials: 'include', body: '{}',
            headers: { 'content-type': 'text/plain' } }).then((r) => (document.title = 'fetch ' + r.status), () => (document.title = 'fetch blocked'));
        </script>`);
    });
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
    try {
      const other = `http://127.0.0.1:${(evil.address() as AddressInfo).port}/`;
      await page.goto(other);
      await expect.poll(() => page.title()).toMatch(/^fetch/);
      const answer = page.waitForResponse((r) => r.url() === `${server.url}/v0/inboxes`);
      await page.evaluate(() =>
        (globalThis as unknown as { document: { getElementById(id: string): { submit(): void } } }).document
          .getElementById('f')
          .submit(),
      );
      expect((await answer).status()).toBe(401);
      expect((await org.client.inboxes.list()).inboxes.length).toBe(before);
    } finally {
      evil.close();
      await page.close();
    }
  });

  it('keeps its bundle under budget, its pages free of accessibility violations (axe-core, all but minor), and draws the charts', async () => {
    const assets = readdirSync(path.join(dir, 'assets')).filter((f) => /\.(js|css)$/.test(f));
    const bytes = assets.reduce((sum, f) => sum + statSync(path.join(dir, 'assets', f)).size, 0);
    expect(bytes).toBeGreaterThan(1000);
    expect(bytes).toBeLessThanOrEqual(BUNDLE_BUDGET_BYTES);

    const org = await organization(api, [unique('a11y'), unique('peer')]);
    const [one, two] = org.inboxes as [string, string];
    await org.client.inboxes.messages.send(one, { to: two, subject: 'Counted', text: 'one' });
    await org.client.inboxes.messages.send(one, { to: two, subject: 'Counted again', text: 'two' });
    await org.client.inboxes.drafts.create(one, { to: [two], subject: 'A draft', text: 'x' });
    const page = await browser.newPage();
    await page.goto(`${server.url}/console/`);
    await page.locator('#api-key').waitFor();
    await shot(page, '1-sign-in');
    expect(await axeViolations(page)).toEqual([]);
    await page.locator('#api-key').fill(org.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator(`[data-inbox="${two}"]`).click();
    await page.locator('.thread-item', { hasText: 'Counted again' }).click();
    await page.locator('.thread .message').first().waitFor();
    await shot(page, '2-mail');
    expect(await axeViolations(page)).toEqual([]);
    for (const [section, ready] of [
      ['drafts', '.draft-item'],
      ['domains', '#new-domain'],
      ['webhooks', '#webhook-url'],
      ['keys', 'table.key-list'],
      ['lists', '#list-entry'],
      ['pods', '#pod-name'],
      ['charts', 'figure.chart-figure'],
    ] as const) {
      await page.goto(`${server.url}/console/#/${section}`);
      await page.locator(ready).first().waitFor();
      await shot(page, `3-${section}`);
      expect({ section, violations: await axeViolations(page) }).toEqual({ section, violations: [] });
    }
    // The charts: the organization's sends and receipts of today.
    const sent = page.locator('figure[data-event-type="message.sent"] svg');
    expect(await sent.getAttribute('aria-label')).toMatch(/^message\.sent: 2 in \d+ days$/);
    await page.locator('#chart-scope').selectOption(`inbox:${two}`);
    await expect
      .poll(() => page.locator('figure[data-event-type="message.received"] svg').getAttribute('aria-label'))
      .toMatch(/^message\.received: 2 in /);
    expect(await page.locator('figure[data-event-type="message.sent"] svg').getAttribute('aria-label')).toMatch(
      /^message\.sent: 0 in /,
    );
    // A pod's: both inboxes live in the organization's default pod, so its sends are theirs.
    const podId = (await org.client.inboxes.get(one)).podId;
    await page.locator('#chart-scope').selectOption(`pod:${podId}`);
    await expect
      .poll(() => page.locator('figure[data-event-type="message.sent"] svg').getAttribute('aria-label'))
      .toMatch(/^message\.sent: 2 in /);
    expect(page.url()).toContain(`#/charts/${encodeURIComponent(`pod:${podId}`)}`);
    await shot(page, '3-charts-pod');
    expect(await axeViolations(page)).toEqual([]);
    await page.close();
  }, 120_000);
});

describe.skipIf(!hasChromium || !dialects.includes('postgres'))('console across two instances (postgres)', () => {
  let dir = '';
  let database: InboxTestDatabase;
  let web: InboxTestServer;
  let mx: InboxTestServer;
  let browser: Browser;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'console-build-'));
    await buildConsole(dir);
    database = createInboxTestDatabase('postgres');
    web = await startInboxServer({ database, env: { INBOX_CONSOLE_DIR: dir, INBOX_ROLES: 'api,worker' } });
    mx = await startInboxServer({ database, env: { INBOX_ROLES: 'api,smtp' } });
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await mx?.close();
    await web?.close();
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("the main flow across instances: sees only the key's inboxes, a message received by SMTP on the other instance appears live, a draft written there is approved here and sent, and the session signed out on one is dead on both", async () => {
    const org = await organization(web, [unique('two'), unique('peer')]);
    const [inbox, peer] = org.inboxes as [string, string];
    const stranger = await organization(mx, [unique('strange')]);
    const page = await browser.newPage();
    const requests: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    await page.goto(`${web.url}/console/`);
    await page.locator('#api-key').fill(org.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // Only the key's inboxes: not the other organization's, made on the other instance.
    await page.locator(`[data-inbox="${inbox}"]`).waitFor();
    const listed = await page
      .locator('[data-inbox]')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-inbox')));
    expect(listed.sort()).toEqual([inbox, peer].sort());
    expect(listed).not.toContain(stranger.inboxes[0]);
    await page.locator(`[data-inbox="${inbox}"]`).click();
    await page.locator('#live', { hasText: 'live' }).waitFor({ timeout: 5000 });
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: smtpPort(mx),
      secure: false,
      ignoreTLS: true,
    });
    await transport.sendMail({
      from: 'someone@outside.example',
      to: inbox,
      subject: 'Over SMTP elsewhere',
      text: 'hi',
    });
    transport.close();
    await page.locator('.thread-item', { hasText: 'Over SMTP elsewhere' }).waitFor({ timeout: 5000 });
    await shot(page, '4-live-from-another-instance');
    // An agent writes a draft through the other instance; the person approves it from the queue here.
    const draft = await mx.client(org.key).inboxes.drafts.create(inbox, {
      to: [peer],
      subject: 'Written elsewhere',
      text: 'Draft body',
    });
    await page.getByRole('link', { name: 'Drafts to review' }).click();
    await page.locator(`.draft-item[data-draft="${draft.draftId}"]`).focus();
    await page.keyboard.press('Enter');
    await page.locator('#draft-subject').fill('Approved here');
    await page.keyboard.press('Control+Enter');
    await page.locator('#review-message', { hasText: 'Sent.' }).waitFor();
    await shot(page, '4-draft-approved-across-instances');
    // The other instance finds it sent, and received by the peer.
    const sent = await mx.client(org.key).inboxes.messages.list(inbox, { labels: ['sent'] });
    expect(sent.messages.map((m) => m.subject)).toContain('Approved here');
    const received = await mx.client(org.key).inboxes.messages.list(peer);
    expect(received.messages.map((m) => m.subject)).toContain('Approved here');
    expect((await mx.client(org.key).drafts.list()).drafts).toEqual([]);
    // The cookie works on the other instance too (sessions are rows), until sign-out on this one.
    const cookie = (await page.context().cookies()).find((c) => c.name === 'am_console')!;
    const csrf = (await request(web, 'GET', '/console/session', { cookie: `am_console=${cookie.value}` })).body
      .csrf_token as string;
    expect((await request(mx, 'GET', '/v0/inboxes', { cookie: `am_console=${cookie.value}`, csrf })).status).toBe(200);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.locator('#api-key').waitFor();
    for (const instance of [web, mx])
      expect(
        (await request(instance, 'GET', '/v0/inboxes', { cookie: `am_console=${cookie.value}`, csrf })).status,
      ).toBe(401);
    // Every request the page made stayed on this server.
    expect(requests.filter((u) => !u.startsWith(web.url))).toEqual([]);
    await page.close();
  });
});
