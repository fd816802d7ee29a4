import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { generatedDocs, repositoryPath } from '../scripts/generate-docs.js';

// The documents in docs/api/ are the published contract: any change to a resource must show up
// there as a diff in the same commit, so the generator's output has to match them byte for byte.
const docs = await generatedDocs();

describe('checked-in API documents', () => {
  for (const [relative, expected] of Object.entries(docs)) {
    it(`${relative} is up to date`, () => {
      const path = repositoryPath(relative);
      expect(existsSync(path), `${relative} is missing: run npm run docs:generate`).toBe(true);
      expect(
        readFileSync(path, 'utf8'),
        `${relative} differs from the generated document: run npm run docs:generate and commit the result`,
      ).toBe(expected);
    });
  }
});
