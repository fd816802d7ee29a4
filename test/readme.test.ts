import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Setting } from '../src/platform/config/config.js';
import { inboxConfigSpec } from '../src/inbox/inbox.config.js';
import { propertyConfigSpec } from '../src/property/property.config.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe('README', () => {
  it('has both quick-start commands', () => {
    expect(readme).toContain('npm ci && npm start');
    expect(readme).toContain('npm ci && npm test');
  });

  it('lists every setting in its configuration table with its default', () => {
    const settings = [...Object.values(inboxConfigSpec), ...Object.values(propertyConfigSpec)] as Setting<unknown>[];
    for (const s of settings) {
      const row = readme.split('\n').find((line) => line.startsWith(`| \`${s.variable}\` |`));
      expect(row, `README configuration table lacks ${s.variable}`).toBeDefined();
      expect(row, `README row of ${s.variable} should show the default ${s.defaultText}`).toContain(
        s.defaultText.replace(/^`|`$/g, ''),
      );
    }
  });
});
