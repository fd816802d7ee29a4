import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonDeeperThan, MAX_JSON_DEPTH } from './json-depth.js';

/** How deep the arrays and objects of a parsed value nest (0 for a scalar). */
function depthOf(value: unknown): number {
  let deepest = 0;
  const pending: [unknown, number][] = [[value, 0]];
  while (pending.length) {
    const [at, depth] = pending.pop() as [unknown, number];
    if (at === null || typeof at !== 'object') continue;
    deepest = Math.max(deepest, depth + 1);
    for (const inner of Object.values(at)) pending.push([inner, depth + 1]);
  }
  return deepest;
}

describe('jsonDeeperThan', () => {
  it('agrees with the depth of the parsed value, for any JSON text and any limit', () => {
    fc.assert(
      fc.property(fc.json({ depthSize: 'large' }), fc.integer({ min: 0, max: 12 }), (text, max) => {
        expect(jsonDeeperThan(text, max)).toBe(depthOf(JSON.parse(text)) > max);
      }),
      { numRuns: 2000 },
    );
  });

  it('counts no bracket inside a string, whatever its escapes', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom('[', '{', '"', '\\', 'a', ']') }), (inner) => {
        const text = JSON.stringify([inner]);
        expect(jsonDeeperThan(text, 1)).toBe(false);
        expect(jsonDeeperThan(`[${text}]`, 1)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses from MAX_JSON_DEPTH + 1 levels on, valid JSON or not', () => {
    expect(jsonDeeperThan('['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH))).toBe(false);
    expect(jsonDeeperThan('['.repeat(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(jsonDeeperThan('{"a":'.repeat(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(jsonDeeperThan('"an unterminated string [[[[')).toBe(false);
  });
});
