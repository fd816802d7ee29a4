// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Imports that would break the one-way dependency rule of docs/architecture.md. */
const forbid = (groups) => ({
  'no-restricted-imports': ['error', { patterns: groups.map((group) => ({ group, message: 'See docs/architecture.md: platform/ imports no service, and the services never import each other.' })) }],
});

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'data/**', 'bench/results/**', '.tmp/**', 'tmp-*/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  { files: ['src/platform/**'], rules: forbid([['**/inbox/**', '**/property/**']]) },
  { files: ['src/property/**'], rules: forbid([['**/inbox/**']]) },
  { files: ['src/inbox/**'], rules: forbid([['**/property/**']]) },
  {
    files: ['bench/**/*.mjs', 'scripts/**/*.mjs', '.ci/**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', setTimeout: 'readonly', Buffer: 'readonly' } },
  },
);
