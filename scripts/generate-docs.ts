/**
 * Writes the property service's API contracts to docs/api/ (`npm run docs:generate`). They are
 * checked in and compared by test/property/docs-snapshot.test.ts, so a change to a resource shows
 * up as a reviewable diff of the OpenAPI and Hydra documents.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { hydraDocumentation } from '../src/property/engine/hydra-docs.js';
import { openApiDocument } from '../src/property/engine/openapi.js';
import { propertyRegistry } from '../src/property/registry.js';

/** The Hydra document embeds the absolute docs URL (@vocab); the checked-in copy uses the dev server's. */
export const DOCS_URL = 'http://localhost:3001/api/docs.jsonld';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Repository-relative path → file content, exactly as it must be on disk. */
export function generatedDocs(): Record<string, string> {
  const render = (doc: object) => `${JSON.stringify(doc, null, 2)}\n`;
  return {
    'docs/api/property.openapi.json': render(openApiDocument(propertyRegistry)),
    'docs/api/property.hydra.jsonld': render(hydraDocumentation(propertyRegistry, DOCS_URL)),
  };
}

export function repositoryPath(relative: string): string {
  return resolve(root, relative);
}

function main(): void {
  for (const [relative, content] of Object.entries(generatedDocs())) {
    const target = repositoryPath(relative);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content);
    console.log(`wrote ${relative}`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) main();
