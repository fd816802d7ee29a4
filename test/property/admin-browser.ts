import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { buildAdmin } from '../../scripts/build-admin.js';
import { startPropertyServer, type PropertyTestServer, type TestDialect } from '../support/property-server.js';

/** What the admin's browser tests of issue 31 share: the build, the server, Chromium, signing in. */

export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);
const LAUNCH_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'];

/** Debian's Chromium, headless, as every browser test of the repository starts it (never a downloaded browser). */
export const launchChromium = (): Promise<Browser> => chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });

/** Text as shown, with the non-breaking spaces of number formats made plain. */
export const plain = (text: string) => text.replace(/[\u00a0\u202f]/g, ' ').trim();

/** Bundles the admin once for the test file (as `npm run build:admin` does); gives its directory. */
export function builtAdmin(): () => string {
  let dir = '';
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'admin-build-'));
    await buildAdmin(dir);
  }, 180_000);
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return () => dir;
}

/** For one describe block: the property service serving that admin, and Chromium when installed. */
export function adminServer(dialect: TestDialect, adminDir: () => string) {
  let server: PropertyTestServer | undefined;
  let browser: Browser | undefined;
  beforeAll(async () => {
    server = await startPropertyServer({ dialect, env: { PROPERTY_ADMIN_DIR: adminDir() } });
    if (hasChromium) browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });
  return {
    server: () => server as PropertyTestServer,
    browser: () => browser as Browser,
  };
}

/** Opens the admin in a new page and signs in with `key`. */
export async function signIn(browser: Browser, server: PropertyTestServer, key: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  await page.goto(`${server.url}/admin`);
  await page.locator('input[name="apiKey"]').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  return page;
}
