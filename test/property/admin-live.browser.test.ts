import type { Browser, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { dialects, type Account, type PropertyTestServer } from '../support/property-server.js';
import { adminServer, builtAdmin, hasChromium, plain, signIn } from './admin-browser.js';

/**
 * Issue 31 item 1 in the admin: two sessions side by side in Chromium. One writes (creates, then
 * edits a property); the other's list shows the change without a reload, through the Mercure hub.
 * A `user` session, open at the same time, never shows another account's property, and shows its
 * own as soon as it is created. The time each change took to show is printed (the issue asks
 * for 2 s); the assertions themselves wait as long as the test's timeout.
 */

const adminDir = builtAdmin();

async function openList(browser: Browser, server: PropertyTestServer, account: Account): Promise<Page> {
  const page = await signIn(browser, server, account.key);
  await page.getByRole('menuitem', { name: 'Immobilien' }).click();
  await page.waitForURL(/#\/immobilies/);
  await page.locator('#main-content').waitFor();
  // A marker that a reload would wipe.
  await page.evaluate(() => ((globalThis as unknown as { liveMarker: number }).liveMarker = 31));
  return page;
}

const listText = async (page: Page) => plain(await page.locator('#main-content').innerText());

/** Waits until the list shows `text` and says how long that took. */
async function shows(page: Page, text: string, since: number): Promise<number> {
  await expect.poll(() => listText(page), { timeout: 20_000, interval: 50 }).toContain(text);
  return Date.now() - since;
}

describe.each(dialects)('live updates in the admin (%s)', (dialect) => {
  const session = adminServer(dialect, adminDir);

  it.skipIf(!hasChromium)(
    "one session's create and edit show in the other's list without a reload; a user sees only their own",
    async () => {
      const server = session.server();
      const browser = session.browser();
      const [watcher, writer, user, other] = await Promise.all([
        server.createAccount('admin'),
        server.createAccount('admin'),
        server.createAccount('user'),
        server.createAccount('user'),
      ]);
      const watching = await openList(browser, server, watcher);
      const userPage = await openList(browser, server, user);
      const writing = await openList(browser, server, writer);
      // Let both subscribers connect: the hub's token request and stream are the last things they open.
      for (const page of [watching, userPage])
        await expect
          .poll(() =>
            page.evaluate(() =>
              performance
                .getEntriesByType('resource')
                .map((e) => e.name)
                .join(' '),
            ),
          )
          .toContain('/.well-known/mercure/token');

      // The writing session creates a property for another account, then edits it.
      const write = (method: string, pathname: string, body: unknown) =>
        writing.evaluate(
          async ({ method, pathname, body, key }) => {
            const r = await fetch(pathname, {
              method,
              headers: {
                'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/ld+json',
                accept: 'application/ld+json',
                'x-api-key': key,
              },
              body: JSON.stringify(body),
            });
            return { status: r.status, body: (await r.json()) as { '@id': string } };
          },
          { method, pathname, body, key: writer.key },
        );
      let since = Date.now();
      const created = await write('POST', '/api/immobilies', {
        adresse: `Livestraße 1 ${dialect}`,
        typ: 'haus',
        bundesland: '/api/bundeslands/1',
        kaufpreis: 310000,
        verwalter: other.iri,
      });
      expect(created.status).toBe(201);
      const createdAfter = await shows(watching, `Livestraße 1 ${dialect}`, since);
      since = Date.now();
      expect((await write('PATCH', created.body['@id'], { adresse: `Livestraße 2 ${dialect}` })).status).toBe(200);
      const editedAfter = await shows(watching, `Livestraße 2 ${dialect}`, since);
      console.log(`admin-live (${dialect}): create shown after ${createdAfter} ms, edit after ${editedAfter} ms`);

      // The user's own new property shows; the other account's never did.
      since = Date.now();
      expect(
        (
          await write('POST', '/api/immobilies', {
            adresse: `Eigenes Haus ${dialect}`,
            typ: 'haus',
            bundesland: '/api/bundeslands/1',
            verwalter: user.iri,
          })
        ).status,
      ).toBe(201);
      const ownAfter = await shows(userPage, `Eigenes Haus ${dialect}`, since);
      console.log(`admin-live (${dialect}): the user's own property shown after ${ownAfter} ms`);
      expect(await listText(userPage)).not.toContain('Livestraße');
      for (const page of [watching, userPage])
        expect(await page.evaluate(() => (globalThis as unknown as { liveMarker?: number }).liveMarker)).toBe(31);
    },
    120_000,
  );
});
