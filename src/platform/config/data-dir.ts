import { constants, accessSync, existsSync, mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from './config.js';

/**
 * The directory a SQLite database file goes to, made if missing and checked writable before the
 * database is opened, so that a bad `DATA_DIR` (or `sqlite:` path) stops the process with an error
 * that names it. Node's recursive `mkdirSync` never returns on some paths it cannot make (a path
 * under `/proc`: it spun at 85 % CPU); here each missing level is made on its own, and the first
 * failure ends it. Nothing happens for a PostgreSQL URL.
 */
export function prepareSqliteDirectory(options: {
  readonly url: string | undefined;
  readonly dataDir: string;
  /** The setting that names the database, for the message (`INBOX_DATABASE_URL`, …). */
  readonly urlVariable: string;
}): void {
  if (options.url === undefined) return prepareDirectory(options.dataDir, 'DATA_DIR');
  if (!options.url.startsWith('sqlite:')) return;
  const file = options.url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
  if (file !== ':memory:') prepareDirectory(path.dirname(path.resolve(file)), options.urlVariable);
}

function prepareDirectory(dir: string, variable: string): void {
  const target = path.resolve(dir);
  const missing: string[] = [];
  for (let at = target; !existsSync(at); at = path.dirname(at)) {
    missing.unshift(at);
    if (path.dirname(at) === at) break;
  }
  try {
    for (const level of missing) {
      try {
        mkdirSync(level);
      } catch (err) {
        // Another process made it meanwhile.
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
    }
    if (!statSync(target).isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
    accessSync(target, constants.W_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new ConfigError([
      `${variable}: ${target} cannot hold the database (${code}); create it as a writable directory, or point ${variable} elsewhere`,
    ]);
  }
}
