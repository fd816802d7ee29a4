// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const SERVICES = 'See docs/architecture.md: platform/ imports no service, and the services never import each other.';
const LAYERS =
  'See docs/architecture.md: repositories and services know nothing of HTTP (inbox/http/) nor of wire schemas (*.schemas.ts); events/message-events.ts builds event payloads.';
const MESSAGES =
  'See docs/architecture.md: threads are built from messages, so messages/ never imports threads/ (service.ts wires what messages need of threads).';

/** Imports that would break the one-way dependency rules of docs/architecture.md. */
const forbid = (groups, message = SERVICES) => ({
  'no-restricted-imports': ['error', { patterns: groups.map((group) => ({ group, message })) }],
});
/** Several rules for one set of files: ESLint keeps only the last `no-restricted-imports` that matches a file. */
const forbidAll = (...rules) => ({
  'no-restricted-imports': ['error', { patterns: rules.map(([group, message]) => ({ group, message })) }],
});
const NOT_PROPERTY = [['**/property/**'], SERVICES];
const NOT_HTTP = [['**/http/**', '**/*.schemas.js', '**/*.schemas'], LAYERS];
const NOT_THREADS = [['**/threads/**'], MESSAGES];
const LAYERED = ['src/inbox/**/*.service.ts', 'src/inbox/**/*.repository.ts'];

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
  { files: LAYERED, rules: forbidAll(NOT_PROPERTY, NOT_HTTP) },
  { files: ['src/inbox/messages/**'], rules: forbidAll(NOT_PROPERTY, NOT_THREADS) },
  {
    files: LAYERED.map((glob) => glob.replace('src/inbox/', 'src/inbox/messages/')),
    rules: forbidAll(NOT_PROPERTY, NOT_HTTP, NOT_THREADS),
  },
  {
    files: ['bench/**/*.mjs', 'scripts/**/*.mjs', '.ci/**/*.mjs'],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        Buffer: 'readonly',
      },
    },
  },
);
