import { mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { dialects } from '../support/property-server.js';
import { adminServer, builtAdmin, hasChromium, plain, signIn } from './admin-browser.js';

/**
 * Issue 31 item 5: the financing calculator page of the admin (`#/finanzierungsrechners`) in a
 * real browser, on both dialects: a property manager picks an Immobilie, enters equity, rate,
 * repayment, Zinsbindung and Sondertilgung, and sees a published example's figures, the yearly
 * table and the chart. The screenshot of the result is saved in `.tmp/screenshots/` (or in
 * ADMIN_TEST_SCREENSHOTS when set).
 */

if (!hasChromium)
  console.warn('admin-calculator.browser.test: skipped, /usr/bin/chromium not found (apt-get install chromium)');

const SCREENSHOTS = process.env.ADMIN_TEST_SCREENSHOTS ?? path.resolve('.tmp/screenshots');
const adminDir = builtAdmin();
beforeAll(() => mkdirSync(SCREENSHOTS, { recursive: true }));

describe.each(dialects)('the calculator page of the admin (%s)', (dialect) => {
  const session = adminServer(dialect, adminDir);

  it.skipIf(!hasChromium)(
    'computes bauprojektexperte.de Szenario A for a picked property and draws its chart; violations show at their field',
    async () => {
      const server = session.server();
      const manager = await server.createAccount('user');
      const created = await fetch(`${server.url}/api/immobilies`, {
        method: 'POST',
        headers: { 'content-type': 'application/ld+json', 'x-api-key': manager.key },
        body: JSON.stringify({
          adresse: 'Rechnerweg 1, 10115 Berlin',
          typ: 'wohnung',
          bundesland: '/api/bundeslands/3',
          kaufpreis: 450000,
        }),
      });
      expect(created.status).toBe(201);

      const page = await signIn(session.browser(), server, manager.key);
      const problems: string[] = [];
      const foreign: string[] = [];
      page.on('pageerror', (e) => problems.push(e.message));
      page.on('request', (r) => {
        const u = r.url();
        if (!/^(data|blob|about):/.test(u) && new URL(u).host !== new URL(server.url).host) foreign.push(u);
      });
      await page.getByRole('menuitem', { name: 'Finanzierungsrechner' }).click();
      await page.waitForURL(/#\/finanzierungsrechners/);
      await expect.poll(() => page.locator('body').innerText()).not.toContain('Not Found');

      // Pick the property: its price (450,000 €) fills in; 100,000 € equity leaves the example's 350,000 € loan.
      await page.getByLabel('Immobilie').click();
      await page.getByRole('option', { name: 'Rechnerweg 1, 10115 Berlin' }).click();
      await expect.poll(() => page.locator('input[name="kaufpreis"]').inputValue()).toBe('450000');
      await page.locator('input[name="eigenkapital"]').fill('100.000');
      await page.locator('input[name="zinssatz"]').fill('3,9');
      await page.locator('input[name="tilgungssatz"]').fill('2,5');
      await page.locator('input[name="zinsbindungJahre"]').fill('10');
      await page.getByRole('button', { name: 'Berechnen' }).click();

      // Szenario A: "Monatsrate ≈ 1.867 €, Restschuld nach 10 Jahren ≈ 243.000 €, Zinsen (10 Jahre)
      // ≈ 117.000 €, Gesamtlaufzeit ≈ 24 Jahre" — here to the cent.
      const figure = async (name: string) => plain(await page.locator(`[data-figure="${name}"] h6`).innerText());
      await page.locator('.ergebnis').waitFor();
      expect(await figure('darlehensbetrag')).toBe('350.000,00 €');
      expect(await figure('monatsrate')).toBe('1.866,67 €');
      expect(await figure('restschuldNachZinsbindung')).toBe('243.194,05 €');
      expect(await figure('zinsenZinsbindung')).toBe('117.194,45 €');
      expect(await figure('effektivzins')).toBe('3,97 %');
      expect(await figure('laufzeit')).toBe('24 Jahre 2 Monate');
      const rows = page.locator('.tilgungsplan tbody tr');
      expect(await rows.count()).toBe(25);
      expect(plain(await rows.last().innerText())).toMatch(/0,00 €$/);
      // The chart: one bar group per year, the debt line from the loan down to zero.
      const chart = page.locator('svg.tilgungschart');
      expect(await chart.locator('[data-bar]').count()).toBe(25);
      const points = ((await chart.locator('polyline.restschuld').getAttribute('points')) ?? '').trim().split(/\s+/);
      expect(points).toHaveLength(26);
      const box = await chart.boundingBox();
      expect(box?.width ?? 0).toBeGreaterThan(300);
      const file = path.join(SCREENSHOTS, `calculator-${dialect}.png`);
      await page.screenshot({ path: file, fullPage: true });
      expect(statSync(file).size).toBeGreaterThan(10_000);

      // A Sondertilgung shortens the table; a Wunschrate below the interest is shown at its field.
      await page.locator('input[name="sondertilgung"]').fill('10000');
      await page.getByRole('button', { name: 'Berechnen' }).click();
      await expect.poll(() => rows.count()).toBeLessThan(25);
      await page.getByLabel('Wunschrate', { exact: true }).check();
      await page.locator('input[name="wunschrate"]').fill('1000');
      await page.getByRole('button', { name: 'Berechnen' }).click();
      await page.getByText(/should be greater than 1137\.5/).waitFor();

      expect(problems).toEqual([]);
      expect(foreign).toEqual([]);
      await page.close();
    },
    120_000,
  );
});
