// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const SERVICES = 'See docs/architecture.md: platform/ imports no service, and the services never import each other.';
const LAYERS =
  'See docs/architecture.md: repositories and services know nothing of HTTP (inbox/http/) nor of request schemas (*.schemas.ts); only routes (and MCP tools, *.tools.ts) import *.schemas.ts.';
const CORE =
  'See docs/architecture.md: inbox/core/ holds types, pure rules, wire shapes and catalogues; it imports only platform basics and mail/ (no SQL, no I/O, no Fastify).';
const STORE =
  'See docs/architecture.md: only mailstore/ writes stored mail; elsewhere use the labels and removal services, or delivery.';
const SERVICE_TO_SERVICE =
  "See docs/architecture.md: a *.service.ts never imports another folder's *.service.ts; what several services share sits lower (core/, a repository, a *-scope.ts).";
const CATALOGUE =
  'See docs/architecture.md: every event type and job queue is named in inbox/core/events.ts or core/queues.ts.';

/** Imports that would break the one-way dependency rules of docs/architecture.md. */
const forbid = (groups, message = SERVICES) => ({
  'no-restricted-imports': ['error', { patterns: groups.map((group) => ({ group, message })) }],
});
/** Several rules for one set of files: ESLint keeps only the last `no-restricted-imports` that matches a file. */
const forbidAll = (...rules) => ({
  'no-restricted-imports': [
    'error',
    {
      patterns: rules.map(([group, message, options]) => ({ ...(group ? { group } : {}), message, ...options })),
    },
  ],
});
const NOT_PROPERTY = [['**/property/**'], SERVICES];
const NOT_HTTP = [['**/http/**'], LAYERS];
const NOT_SCHEMAS = [['**/*.schemas.js', '**/*.schemas'], LAYERS];
const NOT_OTHER_SERVICES = [['../*/*.service.js', '../*/*.service'], SERVICE_TO_SERVICE, { allowTypeImports: true }];
/** The writes of stored mail: only mailstore/ calls them. */
const STORE_WRITES = [
  ['**/mailstore/message.repository.js'],
  STORE,
  { importNames: ['insertMessages', 'updateMessageLabels', 'deleteMessageRow'] },
];
const THREAD_WRITES = [
  ['**/mailstore/thread.repository.js'],
  STORE,
  { importNames: ['insertThreads', 'updateThread', 'updateThreadLabels', 'deleteThreadWithMessages'] },
];
const SUMMARY_WRITES = [['**/mailstore/thread-summary.js'], STORE];
/** The folders of mail clients (decision 0045): only mailstore/ writes them, in the change's transaction. */
const FOLDER_WRITES = [
  ['**/mailstore/folder.repository.js'],
  STORE,
  { importNames: ['takeUids', 'insertFolderMessages', 'deleteFolderMessage'] },
];
const INBOX = 'src/inbox/**/*.ts';
/** The doors: HTTP routes and the MCP door's tools (which take the routes' request shapes, renamed). */
const ROUTES = [
  'src/inbox/**/*.routes.ts',
  'src/inbox/**/*.tools.ts',
  'src/inbox/**/*.schemas.ts',
  'src/inbox/**/*.test.ts',
];
/** Event type and queue names outside their catalogues. */
const CATALOGUED = [
  {
    selector:
      'Literal[value=/^(message|label|domain)\\.(received|sent|delivered|bounced|complained|rejected|opened|added|removed|verified)(\\.[a-z]+)?$/]',
    message: CATALOGUE,
  },
  {
    selector: 'ExportNamedDeclaration VariableDeclarator[id.name=/_QUEUE$/]',
    message: CATALOGUE,
  },
];

/**
 * A getter or setter in an object literal made inside a function: V8 gives every such object a map of its own
 * in the old generation, which keeps the getter's closure (and what it holds) alive through young
 * collections (docs/decisions/0056). A class with the getter on its prototype does not.
 */
const PER_CALL_GETTER = {
  selector: ':function ObjectExpression > Property[kind!="init"]',
  message:
    'A getter in an object literal made per call gives each object its own V8 map (decision 0056): use a class with the getter on its prototype.',
};

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
  {
    files: ['src/**/*.ts'],
    ignores: ['src/**/*.test.ts'],
    rules: { 'no-restricted-syntax': ['error', PER_CALL_GETTER] },
  },
  { files: ['src/platform/**'], rules: forbid([['**/inbox/**', '**/property/**']]) },
  { files: ['src/property/**'], rules: forbid([['**/inbox/**']]) },
  {
    files: [INBOX],
    ignores: ['src/inbox/mailstore/**', 'src/inbox/app.ts', ...ROUTES],
    rules: forbidAll(NOT_PROPERTY, NOT_SCHEMAS, STORE_WRITES, THREAD_WRITES, SUMMARY_WRITES, FOLDER_WRITES),
  },
  {
    files: ['src/inbox/**/*.routes.ts', 'src/inbox/**/*.tools.ts', 'src/inbox/**/*.schemas.ts'],
    rules: forbidAll(NOT_PROPERTY, STORE_WRITES, THREAD_WRITES, SUMMARY_WRITES, FOLDER_WRITES),
  },
  {
    files: ['src/inbox/**/*.service.ts', 'src/inbox/**/*.repository.ts'],
    ignores: ['src/inbox/mailstore/**'],
    rules: forbidAll(
      NOT_PROPERTY,
      NOT_HTTP,
      NOT_SCHEMAS,
      NOT_OTHER_SERVICES,
      STORE_WRITES,
      THREAD_WRITES,
      SUMMARY_WRITES,
      FOLDER_WRITES,
    ),
  },
  {
    files: ['src/inbox/mailstore/**/*.ts'],
    rules: forbidAll(NOT_PROPERTY, NOT_HTTP, NOT_SCHEMAS, NOT_OTHER_SERVICES),
  },
  {
    files: ['src/inbox/core/**/*.ts'],
    ignores: ['src/inbox/core/**/*.test.ts'],
    rules: forbidAll(
      [undefined, CORE, { regex: '^\\.\\./(?!mail/|\\.\\./platform/)' }],
      [['../../platform/db/**', '../../platform/http/**', '../../platform/jobs/**', '../../platform/net/**'], CORE],
      [
        [
          'fastify',
          'fastify/**',
          '@fastify/**',
          'kysely',
          'pg',
          'better-sqlite3',
          'ioredis',
          'node:fs',
          'node:net',
          'node:http',
        ],
        CORE,
      ],
    ),
  },
  {
    files: [INBOX],
    ignores: ['src/inbox/core/**', 'src/inbox/**/*.test.ts', 'src/inbox/migrations/**'],
    rules: { 'no-restricted-syntax': ['error', ...CATALOGUED, PER_CALL_GETTER] },
  },
  {
    files: ['bench/**/*.mjs', 'scripts/**/*.mjs', 'bin/**/*.mjs', '.ci/**/*.mjs'],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        Buffer: 'readonly',
        fetch: 'readonly',
      },
    },
  },
);
