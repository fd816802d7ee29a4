/**
 * Writes the API contracts of both services to docs/api/ (`npm run docs:generate`). They are
 * checked in and compared by test/property/docs-snapshot.test.ts, so a change to a resource or a
 * route shows up as a reviewable diff of the OpenAPI and Hydra documents.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildInboxApp } from '../src/inbox/app.js';
import { inboxConfigSpec } from '../src/inbox/inbox.config.js';
import { createInboxServices, migrateInbox, openInboxDatabase } from '../src/inbox/service.js';
import { loadConfig } from '../src/platform/config/config.js';
import { hydraDocumentation } from '../src/property/engine/hydra-docs.js';
import { openApiDocument } from '../src/property/engine/openapi.js';
import { propertyRegistry } from '../src/property/registry.js';

/** The Hydra document embeds the absolute docs URL (@vocab); the checked-in copy uses the dev server's. */
export const DOCS_URL = 'http://localhost:3001/api/docs.jsonld';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Repository-relative path → file content, exactly as it must be on disk. */
export async function generatedDocs(): Promise<Record<string, string>> {
  const render = (doc: object) => `${JSON.stringify(doc, null, 2)}\n`;
  return {
    'docs/api/inbox.openapi.json': render(await inboxOpenApi()),
    'docs/api/property.openapi.json': render(openApiDocument(propertyRegistry)),
    'docs/api/property.hydra.jsonld': render(hydraDocumentation(propertyRegistry, DOCS_URL)),
  };
}

/** The inbox service's OpenAPI document, generated from its route schemas on a throw-away database. */
async function inboxOpenApi(): Promise<object> {
  const config = loadConfig(inboxConfigSpec, {
    INBOX_DATABASE_URL: 'sqlite::memory:',
    LOG_LEVEL: 'silent',
    INBOX_ROLES: 'api',
  });
  const database = await openInboxDatabase(config);
  try {
    await migrateInbox(database);
    const runtime = createInboxServices(config, database.db, { log: { warn: () => {}, error: () => {} } });
    const app = await buildInboxApp(runtime.services, database);
    await app.ready();
    try {
      return app.swagger();
    } finally {
      await app.close();
    }
  } finally {
    await database.destroy();
  }
}

export function repositoryPath(relative: string): string {
  return resolve(root, relative);
}

async function main(): Promise<void> {
  for (const [relative, content] of Object.entries(await generatedDocs())) {
    const target = repositoryPath(relative);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content);
    console.log(`wrote ${relative}`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) await main();
