import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildAdmin } from '../../scripts/build-admin.js';
import { propertyRegistry } from '../../src/property/registry.js';
import { dialects, startPropertyServer, type Account, type PropertyTestServer } from '../support/property-server.js';

/**
 * /admin in a real browser: API Platform's own admin (HydraAdmin), bundled by `npm run build:admin`
 * and served by the property service, driven as a person would — sign in with an API key, list,
 * filter, show, create, edit, delete — on both dialects. Every request the page makes is recorded:
 * none may leave the server (no CDN, no fonts, no react-admin telemetry).
 */

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium)
  console.warn(
    `admin.browser.test: browser parts skipped, ${CHROMIUM} not found (Debian: apt-get install -y chromium)`,
  );

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
const SCREENSHOTS = process.env.ADMIN_TEST_SCREENSHOTS;

/**
 * The calculator (issue 12 §1: computed costs; §3: states labelled by name) is built on another
 * branch. Until Immobilie has its computed fields these checks cannot run; once it has them they
 * are required. Checked against that branch's API before this test was committed.
 */
const calculator =
  propertyRegistry.byShortName('Immobilie')?.fields.some((field) => field.name === 'kaufnebenkosten') ?? false;
if (!calculator)
  console.warn(
    'admin.browser.test: Immobilie has no computed costs yet; the show-page costs and state names are not checked',
  ); // a directory: the test leaves PNGs of each screen there

/** The values of `typ` as the Hydra docs list them (owl:oneOf), labelled as api-doc-parser labels enums. */
const TYPES = ['Wohnung', 'Haus', 'Grundstueck', 'Gewerbe', 'Buero'];

/** Text as shown, with the non-breaking spaces of number formats made plain. */
const plain = (text: string) => text.replace(/[\u00a0\u202f]/g, ' ').trim();
/** The admin's list of a resource, by URL (react-admin may add list parameters after `?`). */
const LIST = (resource: string) => new RegExp(`#/${resource}(\\?.*)?$`);
/** An amount as de-DE writes euros, for comparing with the screen. */
const euro = (value: number) =>
  plain(new Intl.NumberFormat('de-DE', { style: 'currency', currency: 'EUR' }).format(value));

interface Recorded {
  method: string;
  url: string;
  headers: Record<string, string>;
  status?: number;
}

/** Records every request of a page, its answer status, page errors and console errors. */
function record(page: Page) {
  const requests: Recorded[] = [];
  const problems: string[] = [];
  const byRequest = new Map<object, Recorded>();
  page.on('request', (request) => {
    const entry: Recorded = { method: request.method(), url: request.url(), headers: request.headers() };
    byRequest.set(request, entry);
    requests.push(entry);
  });
  page.on('response', (response) => {
    const entry = byRequest.get(response.request());
    if (entry) entry.status = response.status();
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  return {
    requests,
    problems,
    /** Requests to anything but the server under test (data: and blob: URLs never leave the page). */
    foreign(serverUrl: string) {
      const host = new URL(serverUrl).host;
      return requests.map((r) => r.url).filter((u) => !/^(data|blob|about):/.test(u) && new URL(u).host !== host);
    },
    /** Requests to the API, as `METHOD /path?query` (decoded). */
    api(filter: (r: Recorded) => boolean = () => true) {
      return requests.filter((r) => new URL(r.url).pathname.startsWith('/api') && filter(r));
    },
  };
}

async function shot(page: Page, name: string) {
  if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

async function api(
  server: PropertyTestServer,
  key: string | undefined,
  method: string,
  pathname: string,
  body?: unknown,
) {
  const headers: Record<string, string> = { accept: 'application/ld+json' };
  if (key) headers['x-api-key'] = key;
  if (body !== undefined)
    headers['content-type'] = method === 'PATCH' ? 'application/merge-patch+json' : 'application/ld+json';
  const response = await fetch(`${server.url}${pathname}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
}

async function createProperty(server: PropertyTestServer, account: Account, fields: Record<string, unknown>) {
  const created = await api(server, account.key, 'POST', '/api/immobilies', {
    typ: 'wohnung',
    bundesland: '/api/bundeslands/1',
    ...fields,
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body as Record<string, unknown> & { '@id': string };
}

async function signIn(page: Page, server: PropertyTestServer, key: string) {
  await page.goto(`${server.url}/admin`);
  await page.locator('input[name="apiKey"]').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('menuitem', { name: 'Immobilien' }).waitFor();
}

/** How many entries the page's sessionStorage holds (the API key is the admin's only one). */
function sessionEntries(page: Page): Promise<number> {
  return page.evaluate(() => (globalThis as unknown as { sessionStorage: { length: number } }).sessionStorage.length);
}

/** The rows of the list on screen, as their visible text. */
async function listRows(page: Page): Promise<string[]> {
  await page.locator('.RaDatagrid-tbody').waitFor();
  return (await page.locator('.RaDatagrid-tbody tr').allInnerTexts()).map(plain);
}

/** The value shown under a label on a show page. */
async function shownValue(page: Page, label: string): Promise<string> {
  const field = page.locator('.RaLabeled-label', { hasText: new RegExp(`^${label}$`) }).locator('xpath=..');
  return plain(await field.locator('.RaLabeled-label ~ *').first().innerText());
}

let adminDir: string;

beforeAll(async () => {
  adminDir = mkdtempSync(path.join(tmpdir(), 'admin-build-'));
  await buildAdmin(adminDir);
}, 180_000);

afterAll(() => {
  if (adminDir) rmSync(adminDir, { recursive: true, force: true });
});

describe.each(dialects)('admin at /admin (%s)', (dialect) => {
  let server: PropertyTestServer;
  let browser: Browser | undefined;

  beforeAll(async () => {
    server = await startPropertyServer({ dialect, env: { PROPERTY_ADMIN_DIR: adminDir } });
    if (hasChromium) browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('serves the page from local files under a strict CSP; other asset names answer 404', async () => {
    for (const pathname of ['/admin', '/admin/']) {
      const page = await fetch(`${server.url}${pathname}`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
      const csp = page.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("connect-src 'self'");
      const html = await page.text();
      const script = /<script type="module" src="(\/admin\/assets\/admin-[A-Z0-9]+\.js)">/.exec(html)?.[1];
      expect(script, html).toBeDefined();
      expect(html).toContain('data-entrypoint="/api"');
      const asset = await fetch(`${server.url}${script}`);
      expect(asset.status).toBe(200);
      expect(asset.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
      expect(asset.headers.get('cache-control')).toContain('immutable');
      expect((await asset.text()).length).toBeGreaterThan(100_000);
    }
    for (const name of ['nope.js', 'manifest.json', '..%2Fmanifest.json', '%2e%2e%2f%2e%2e%2fpackage.json']) {
      const missing = await fetch(`${server.url}/admin/assets/${name}`, { headers: { accept: 'application/ld+json' } });
      expect(missing.status, name).toBe(404);
      expect(((await missing.json()) as Record<string, unknown>)['@type']).toBe('hydra:Error');
    }
  });

  it.skipIf(!hasChromium)(
    'an admin key: sign in once, list, filter, show the computed costs, create picking the state by name, edit with PATCH, delete, log out',
    async () => {
      const admin = await server.createAccount('admin');
      const owner = await server.createAccount('user');
      const leipzig = await createProperty(server, owner, {
        adresse: 'Lindenweg 4, 04109 Leipzig',
        typ: 'haus',
        bundesland: '/api/bundeslands/13',
        wohnflaeche: 92.5,
        zimmer: 4,
        kaufpreis: 420000,
      });
      await createProperty(server, admin, {
        adresse: 'Hauptstraße 1, 80331 München',
        typ: 'wohnung',
        bundesland: '/api/bundeslands/2',
        wohnflaeche: 61,
        zimmer: 2,
        kaufpreis: 689000.5,
      });

      const context = await (browser as Browser).newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      const seen = record(page);

      // Without a key the admin shows its login screen; a wrong key is refused there.
      await page.goto(`${server.url}/admin`);
      await page.locator('input[name="apiKey"]').waitFor();
      await shot(page, `${dialect}-01-login`);
      // One way to the login screen: the page, then `#/login` (the redirect once looped, pushing
      // `#/login` until Chromium's cap of 50 history entries, and the form came seconds late).
      await new Promise((resolve) => setTimeout(resolve, 500)); // a loop would keep pushing meanwhile
      expect(
        await page.evaluate(() => (globalThis as unknown as { history: { length: number } }).history.length),
      ).toBeLessThanOrEqual(3);
      await page.locator('input[name="apiKey"]').fill('not-a-key');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByText('This API key is not valid.').waitFor();
      expect(await sessionEntries(page)).toBe(0);

      await page.locator('input[name="apiKey"]').fill(admin.key);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('menuitem', { name: 'Immobilien' }).waitFor();

      // The list: both properties (an admin sees all), prices in euros the German way.
      // The state is a reference, fetched after the rows: wait for its label (its name, with the calculator's Hydra docs).
      await expect
        .poll(async () => (await listRows(page)).find((r) => r.includes('Lindenweg 4')), { timeout: 15_000 })
        .toContain(calculator ? 'Sachsen' : '/api/bundeslands/13');
      let rows = await listRows(page);
      await shot(page, `${dialect}-02-list`);
      expect(rows).toHaveLength(2);
      const leipzigRow = rows.find((r) => r.includes('Lindenweg 4')) as string;
      expect(leipzigRow).toContain('420.000,00 €');
      expect(rows.find((r) => r.includes('Hauptstraße 1'))).toContain('689.000,50 €');
      if (calculator) expect(leipzigRow).toContain(euro(Number(leipzig.preisProQuadratmeter)));

      // Reloading keeps the session: no second login.
      await page.reload();
      expect(await listRows(page)).toHaveLength(2);
      expect(await page.locator('input[name="apiKey"]').count()).toBe(0);

      // Filter by type with the filter the API declares.
      await page.getByRole('button', { name: 'Add filter' }).click();
      await page.getByRole('menu').getByText('Typ', { exact: true }).click();
      expect(await choose(page, 'typ', 'Haus'), 'the typ filter is a select of the allowed values').toEqual(TYPES);
      await expect.poll(async () => (await listRows(page)).length, { timeout: 10_000 }).toBe(1);
      rows = await listRows(page);
      expect(rows[0]).toContain('Lindenweg 4');
      expect(
        seen.api((r) => r.method === 'GET' && new URL(r.url).searchParams.get('typ') === 'haus').length,
      ).toBeGreaterThan(0);
      await shot(page, `${dialect}-03-filtered`);

      // Show: the computed costs as the API computes them.
      await page.mouse.move(1, 1); // away from the column headers, whose sort tooltips cover the rows
      await page.locator('[role="tooltip"]').waitFor({ state: 'detached' });
      await page
        .locator('.RaDatagrid-tbody tr', { hasText: 'Lindenweg 4' })
        .getByRole('link', { name: 'Show' })
        .click();
      await page.getByText('Kaufnebenkosten').waitFor();
      await shot(page, `${dialect}-04-show`);
      expect(await shownValue(page, 'Kaufpreis')).toBe('420.000,00 €');
      if (calculator) {
        const fresh = (await api(server, admin.key, 'GET', leipzig['@id'])).body as Record<string, unknown>;
        const costs = fresh.kaufnebenkosten as Record<string, number>;
        expect(typeof fresh.gesamtkosten, 'the API computes gesamtkosten').toBe('number');
        expect(await shownValue(page, 'Preis pro m²')).toBe(euro(fresh.preisProQuadratmeter as number));
        expect(await shownValue(page, 'Grunderwerbsteuer')).toBe(euro(fresh.grunderwerbsteuer as number));
        expect(await shownValue(page, 'Gesamtkosten')).toBe(euro(fresh.gesamtkosten as number));
        for (const part of ['grunderwerbsteuer', 'notar', 'grundbuch', 'summe']) {
          expect(
            plain(await page.locator(`.kaufnebenkosten tr[data-cost="${part}"] td`).last().innerText()),
            part,
          ).toBe(euro(costs[part] as number));
        }
        expect(await page.locator('.kaufnebenkosten tr[data-cost="makler"]').count()).toBe(
          costs.makler === undefined ? 0 : 1,
        );
      }

      // Create, picking the federal state by its name.
      await page.getByRole('menuitem', { name: 'Immobilien' }).click();
      await page.getByRole('link', { name: 'Create' }).click();
      await page.locator('input[name="adresse"]').fill('Am Markt 3, 01067 Dresden');
      expect(await choose(page, 'typ', 'Wohnung'), 'typ is a select of the allowed values').toEqual(TYPES);
      await chooseReference(page, 'bundesland', calculator ? 'Sachsen' : '/api/bundeslands/13');
      await page.locator('input[name="wohnflaeche"]').fill('80');
      await page.locator('input[name="zimmer"]').fill('3');
      await page.locator('input[name="kaufpreis"]').fill('300000');
      await shot(page, `${dialect}-05-create`);
      const posted = page.waitForResponse(
        (r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/api/immobilies',
      );
      await page.getByRole('button', { name: 'Save' }).click();
      const postResponse = await posted;
      expect(postResponse.status()).toBe(201);
      const createdIri = ((await postResponse.json()) as { '@id': string })['@id'];
      const created = (await api(server, admin.key, 'GET', createdIri)).body as Record<string, unknown>;
      expect(created).toMatchObject({
        adresse: 'Am Markt 3, 01067 Dresden',
        typ: 'wohnung',
        bundesland: '/api/bundeslands/13',
        wohnflaeche: 80,
        zimmer: 3,
        kaufpreis: 300000,
        verwalter: admin.iri,
      });

      // Edit: a PATCH with the merge-patch content type and the key, answered 200.
      await page.goto(`${server.url}/admin#/immobilies/${encodeURIComponent(createdIri)}`);
      await page.locator('input[name="kaufpreis"]').waitFor();
      await expect.poll(() => page.locator('input[name="kaufpreis"]').inputValue()).toBe('300000');
      await page.locator('input[name="kaufpreis"]').fill('315000');
      await shot(page, `${dialect}-06-edit`);
      const patched = page.waitForResponse(
        (r) => r.request().method() !== 'GET' && new URL(r.url()).pathname === createdIri,
      );
      await page.getByRole('button', { name: 'Save' }).click();
      const patchResponse = await patched;
      expect(patchResponse.request().method()).toBe('PATCH');
      expect(patchResponse.request().headers()['content-type']).toBe('application/merge-patch+json');
      expect(patchResponse.request().headers()['x-api-key']).toBe(admin.key);
      expect(patchResponse.status()).toBe(200);
      expect(((await api(server, admin.key, 'GET', createdIri)).body as Record<string, unknown>).kaufpreis).toBe(
        315000,
      );
      // The save redirects to the list once the response is handled. Going on before that redirect
      // lets it land after the next navigation and take the edit form away mid-click (a CI run
      // timed out on the detached Delete button), so wait for the list first.
      await page.waitForURL(LIST('immobilies'));

      // Delete from the edit page, confirmed in the dialog. The edit form must be showing first,
      // and that list's (hidden) bulk Delete button must not be the one clicked, so the button is
      // taken from the edit form.
      await page.goto(`${server.url}/admin#/immobilies/${encodeURIComponent(createdIri)}`);
      await expect.poll(() => page.locator('form input[name="kaufpreis"]').inputValue()).toBe('315000');
      const deleting = page.waitForResponse(
        (r) => r.request().method() === 'DELETE' && new URL(r.url()).pathname === createdIri,
        { timeout: 20_000 },
      );
      await page.locator('form').getByRole('button', { name: 'Delete' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
      const deleted = await deleting;
      expect(deleted.status()).toBe(204);
      expect((await api(server, admin.key, 'GET', createdIri)).status).toBe(404);
      await page.waitForURL(LIST('immobilies'));

      // A user's role is a select of the roles the docs list; saving sends the value, answered 200.
      await page.goto(`${server.url}/admin#/users/${encodeURIComponent(owner.iri)}`);
      await expect.poll(() => controlOf(page, 'role').locator('input[name="role"]').inputValue()).toBe('user');
      expect(await choose(page, 'role', 'Technical'), 'role is a select of the allowed values').toEqual([
        'User',
        'Admin',
        'Moderator',
        'Technical',
      ]);
      await shot(page, `${dialect}-06b-user-role`);
      const rolePatched = page.waitForResponse(
        (r) => r.request().method() === 'PATCH' && new URL(r.url()).pathname === owner.iri,
      );
      await page.getByRole('button', { name: 'Save' }).click();
      const roleResponse = await rolePatched;
      expect(roleResponse.status()).toBe(200);
      expect(roleResponse.request().postDataJSON()).toMatchObject({ role: 'technical' });
      expect(((await api(server, admin.key, 'GET', owner.iri)).body as Record<string, unknown>).role).toBe('technical');

      // Every API request carried the key; none was answered 415.
      const apiCalls = seen.api(
        (r) => !r.url.includes('/api/docs') && new URL(r.url).pathname !== '/api' && !r.url.includes('/api/contexts/'),
      );
      expect(
        apiCalls
          .filter((r) => r.headers['x-api-key'] !== admin.key && r.headers['x-api-key'] !== 'not-a-key')
          .map((r) => r.url),
      ).toEqual([]);
      expect(seen.requests.filter((r) => r.status === 415).map((r) => r.url)).toEqual([]);

      // Log out: back to the login screen and the key is gone from the session.
      await page.getByRole('button', { name: 'Profile' }).click();
      await page.getByRole('menuitem', { name: 'Logout' }).click();
      await page.locator('input[name="apiKey"]').waitFor();
      expect(await sessionEntries(page)).toBe(0);

      expect(seen.foreign(server.url), 'requests that left the server').toEqual([]);
      expect(
        seen.problems.filter((p) => !/status of 401/.test(p)),
        'errors in the page (a CSP violation shows up here)',
      ).toEqual([]);
      await context.close();
    },
    180_000,
  );

  it.skipIf(!hasChromium)(
    'labels every resource and field in German: no empty API key column, rates with %',
    async () => {
      const admin = await server.createAccount('admin', { name: 'Anna Admin' });
      const context = await (browser as Browser).newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      const seen = record(page);
      await signIn(page, server, admin.key);
      const menu = await page.getByRole('menuitem').allInnerTexts();
      expect(menu.map(plain)).toEqual(
        expect.arrayContaining(['Immobilien', 'Bundesländer', 'Heizungstypen', 'Benutzer']),
      );
      const headers = async () =>
        (await page.locator('.RaDatagrid-headerCell').allInnerTexts()).map(plain).filter(Boolean);

      await page.getByRole('menuitem', { name: 'Benutzer' }).click();
      await expect.poll(async () => (await listRows(page)).join('\n'), { timeout: 15_000 }).toContain('Anna Admin');
      expect(await headers()).toEqual(['Name', 'E-Mail', 'Rolle']);
      await shot(page, `${dialect}-08-users`);

      await page.getByRole('menuitem', { name: 'Bundesländer' }).click();
      await expect.poll(async () => (await listRows(page)).join('\n'), { timeout: 15_000 }).toContain('Bayern');
      expect(await headers()).toEqual(['Name', 'Kürzel', 'Grunderwerbsteuersatz']);
      const bayern = (await listRows(page)).find((r) => r.includes('Bayern')) as string;
      const states = (await api(server, admin.key, 'GET', '/api/bundeslands?code=BY')).body?.['hydra:member'] as {
        grunderwerbsteuerSatz?: number;
      }[];
      const rate = states[0]?.grunderwerbsteuerSatz;
      expect(bayern).toContain(typeof rate === 'number' ? `${String(rate).replace('.', ',')} %` : '–');
      await shot(page, `${dialect}-09-states`);

      expect(seen.foreign(server.url)).toEqual([]);
      expect(seen.problems).toEqual([]);
      await context.close();
    },
    120_000,
  );

  it.skipIf(!hasChromium)(
    'a user key sees only its own properties; a key that stops working leads back to the login screen',
    async () => {
      const admin = await server.createAccount('admin');
      const erika = await server.createAccount('user');
      const otto = await server.createAccount('user');
      await createProperty(server, erika, { adresse: 'Erikas Wohnung, Kiel', kaufpreis: 250000 });
      await createProperty(server, erika, { adresse: 'Erikas Garten, Kiel', typ: 'grundstueck' });
      await createProperty(server, otto, { adresse: 'Ottos Haus, Bremen', typ: 'haus' });

      const context = await (browser as Browser).newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      const seen = record(page);
      await signIn(page, server, erika.key);
      const rows = await listRows(page);
      await shot(page, `${dialect}-07-user-list`);
      expect(rows).toHaveLength(2);
      expect(rows.join('\n')).toContain('Erikas Wohnung');
      expect(rows.join('\n')).toContain('Erikas Garten');
      expect(rows.join('\n')).not.toContain('Ottos Haus');

      // The key belongs to this tab: another tab of the same browser asks for it again.
      const otherTab = await context.newPage();
      await otherTab.goto(`${server.url}/admin`);
      await otherTab.locator('input[name="apiKey"]').waitFor();
      await otherTab.close();

      // The account is deleted while signed in: the next request answers 401 and the admin returns to its login screen.
      expect((await api(server, admin.key, 'DELETE', erika.iri)).status).toBe(204);
      await page.getByRole('button', { name: 'Refresh' }).click();
      await page.locator('input[name="apiKey"]').waitFor({ timeout: 15_000 });
      expect(await sessionEntries(page)).toBe(0);
      expect(seen.requests.some((r) => r.status === 401 && new URL(r.url).pathname.startsWith('/api/immobilies'))).toBe(
        true,
      );

      expect(seen.foreign(server.url), 'requests that left the server').toEqual([]);
      expect(
        seen.problems.filter((p) => !/status of 401/.test(p)),
        'errors in the page',
      ).toEqual([]);
      await context.close();
    },
    120_000,
  );
});

/** The control of an input or filter on screen, by its source. */
function controlOf(page: Page, source: string) {
  return page.locator('.MuiFormControl-root', { has: page.locator(`input[name="${source}"]`) }).last();
}

/**
 * Picks `label` in the select of `source` (an enum the Hydra docs describe with owl:oneOf) and
 * returns every option the select offered. Fails if the input is no select (a free-text box).
 */
async function choose(page: Page, source: string, label: string): Promise<string[]> {
  const control = controlOf(page, source);
  await control.waitFor();
  await control.locator('[role="combobox"]').click();
  const listbox = page.getByRole('listbox');
  await listbox.waitFor();
  const offered = (await listbox.getByRole('option').allInnerTexts()).map(plain).filter((o) => o !== '');
  await listbox.getByRole('option', { name: label, exact: true }).click();
  await listbox.waitFor({ state: 'detached' });
  return offered;
}

/** Picks a reference by the label its autocomplete offers (the record's name, not its IRI). */
async function chooseReference(page: Page, source: string, label: string) {
  const control = controlOf(page, source);
  await control.waitFor();
  await control.locator('[role="combobox"]').click();
  await page.getByRole('option', { name: label, exact: true }).click();
}

describe('admin without a build', () => {
  let server: PropertyTestServer;
  let empty: string;
  beforeAll(async () => {
    empty = mkdtempSync(path.join(tmpdir(), 'admin-missing-'));
    server = await startPropertyServer({ env: { PROPERTY_ADMIN_DIR: empty } });
  });
  afterAll(async () => {
    await server?.close();
    rmSync(empty, { recursive: true, force: true });
  });

  it('answers 503 with the reason in the service error format', async () => {
    for (const pathname of ['/admin', '/admin/assets/admin.js']) {
      const response = await fetch(`${server.url}${pathname}`, { headers: { accept: 'application/ld+json' } });
      expect(response.status, pathname).toBe(503);
      const body = (await response.json()) as Record<string, unknown>;
      expect(body['@type']).toBe('hydra:Error');
      expect(String(body['hydra:description'])).toContain('npm run build');
    }
  });
});
