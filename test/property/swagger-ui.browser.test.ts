import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page, type Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPropertyServer, type PropertyTestServer } from '../support/property-server.js';

/**
 * /api/docs.html in a real browser: Swagger UI must start from the local assets under a strict
 * CSP, load the OpenAPI document, and "Try it out" must reach the API on the same origin — with
 * the key from "Authorize" — while nothing at all is fetched from another host.
 */

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium)
  console.warn(`swagger-ui.browser.test: skipped, ${CHROMIUM} not found (Debian: apt-get install -y chromium)`);

const LAUNCH_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-quic',
  '--no-first-run',
  '--disable-component-update',
  '--disable-sync',
];

/** Expands an operation, runs it with "Try it out" → "Execute" and returns the response body shown. */
async function execute(page: Page, operationId: string): Promise<{ status: string; body: string }> {
  const block = page.locator(`[id$="-${operationId}"].opblock`);
  await block.locator('.opblock-summary').first().click();
  await block.locator('button.try-out__btn').click();
  await block.locator('button.execute').click();
  const live = block.locator('.live-responses-table tbody .response');
  await live.first().waitFor();
  const status = (await live.locator('.response-col_status').first().innerText()).trim();
  const body = await block
    .locator(
      '.live-responses-table .response-col_description .microlight, .live-responses-table .response-col_description pre',
    )
    .first()
    .innerText();
  return { status, body };
}

describe('Swagger UI at /api/docs.html', () => {
  let server: PropertyTestServer;
  let browser: Browser | undefined;

  beforeAll(async () => {
    if (!hasChromium) return;
    server = await startPropertyServer({ dialect: 'sqlite' });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it.skipIf(!hasChromium)(
    'lists the operations, runs them against the same origin and never leaves 127.0.0.1',
    async () => {
      const account = await server.createAccount('admin');
      const page = await (browser as Browser).newPage();
      const requests: Request[] = [];
      const problems: string[] = [];
      page.on('request', (request) => requests.push(request));
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(`console: ${message.text()}`);
      });

      const response = await page.goto(`${server.url}/api/docs.html`);
      expect(response?.status()).toBe(200);
      expect(response?.headers()['content-type']).toMatch(/^text\/html/);

      // The UI rendered the document: one block per operation, e.g. GET /api/bundeslands.
      const collection = page.locator('[id$="-api_bundeslands_get_collection"].opblock');
      await collection.waitFor({ timeout: 20_000 });
      expect(await collection.locator('.opblock-summary-method').innerText()).toBe('GET');
      expect(await collection.locator('.opblock-summary-path').getAttribute('data-path')).toBe('/api/bundeslands');
      expect(await page.locator('.opblock').count()).toBe(26); // 25 resource operations (PUT and PATCH on every writable resource, the financing POST) and GET /api/users/{id}/immobilies

      const spec = requests.find((r) => new URL(r.url()).pathname === '/api/docs.json');
      expect(spec, 'Swagger UI fetched /api/docs.json').toBeDefined();
      expect(spec?.headers().accept).toBe('application/json');

      // Public collection, no key needed.
      const states = await execute(page, 'api_bundeslands_get_collection');
      expect(states.status).toBe('200');
      expect(states.body).toContain('hydra:member');
      expect(states.body).toContain('Baden-Württemberg');

      // "Authorize" with the API key; the next request carries it as X-API-KEY.
      await page.locator('.auth-wrapper button.authorize').click();
      await page.locator('.modal-ux input').first().fill(account.key);
      await page.locator('.modal-ux .auth-btn-wrapper button.authorize').click();
      await page.locator('.modal-ux button.btn-done').click();
      const properties = await execute(page, 'api_immobilies_get_collection');
      expect(properties.status).toBe('200');
      expect(properties.body).toContain('hydra:member');
      const call = requests.find((r) => new URL(r.url()).pathname === '/api/immobilies');
      expect(call?.headers()['x-api-key']).toBe(account.key);

      const foreign = requests
        .map((r) => r.url())
        .filter((u) => !/^(data|blob):/.test(u) && new URL(u).host !== new URL(server.url).host);
      expect(foreign, 'requests that left the server').toEqual([]);
      expect(problems, 'errors in the page (a CSP violation shows up here)').toEqual([]);
      await page.close();
    },
    90_000,
  );
});
