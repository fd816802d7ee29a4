import { describe, expect, it } from 'vitest';
import { ConfigError, env, loadConfig, redactUrl } from './config.js';

const spec = {
  port: env.port('X_PORT', 'a port', 3000),
  flag: env.boolean('X_FLAG', 'a flag', false),
  level: env.oneOf('X_LEVEL', 'a level', ['a', 'b'], 'a'),
  size: env.integer('X_SIZE', 'a size', 10, 1, 100),
  url: env.url('X_URL', 'a url', ['postgres:']),
  list: env.list('X_LIST', 'a list', ['*']),
};

describe('loadConfig', () => {
  it('applies defaults and freezes the result', () => {
    const config = loadConfig(spec, {});
    expect(config).toEqual({ port: 3000, flag: false, level: 'a', size: 10, url: undefined, list: ['*'] });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('parses every kind of value', () => {
    const config = loadConfig(spec, {
      X_PORT: '8080',
      X_FLAG: 'yes',
      X_LEVEL: 'b',
      X_SIZE: '42',
      X_URL: 'postgres://u:p@h/db',
      X_LIST: 'a, b,,c',
    });
    expect(config).toEqual({
      port: 8080,
      flag: true,
      level: 'b',
      size: 42,
      url: 'postgres://u:p@h/db',
      list: ['a', 'b', 'c'],
    });
  });

  it('lists every bad variable in one error and never echoes a password', () => {
    let caught: unknown;
    try {
      loadConfig(spec, { X_PORT: '99999', X_FLAG: 'maybe', X_LEVEL: 'c', X_SIZE: '0', X_URL: 'mysql://u:secret@h/db' });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const problems = (caught as ConfigError).problems;
    expect(problems).toHaveLength(5);
    expect(problems.map((p) => p.split(' ')[0])).toEqual(['X_PORT', 'X_FLAG', 'X_LEVEL', 'X_SIZE', 'X_URL']);
    expect((caught as Error).message).not.toContain('secret');
  });

  it('reads a list of known values (each once), and refuses an unknown value or an empty list', () => {
    const roles = { roles: env.listOf('X_ROLES', 'roles', ['api', 'worker'], ['api', 'worker']) };
    expect(loadConfig(roles, {}).roles).toEqual(['api', 'worker']);
    expect(loadConfig(roles, { X_ROLES: ' worker, api,worker ' }).roles).toEqual(['worker', 'api']);
    for (const [raw, problem] of [
      ['foo', 'X_ROLES must be a comma-separated list of api, worker, got "foo" (unknown: foo)'],
      ['api,smtp', 'X_ROLES must be a comma-separated list of api, worker, got "api,smtp" (unknown: smtp)'],
      [', ,', 'X_ROLES must be a comma-separated list of api, worker, got ", ,"'],
    ] as const) {
      const err = (() => {
        try {
          loadConfig(roles, { X_ROLES: raw });
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect([raw, (err as ConfigError | undefined)?.problems]).toEqual([raw, [problem]]);
    }
  });

  it('redacts credentials in URLs', () => {
    expect(redactUrl('postgres://user:pw@host:5432/db')).toBe('postgres://user:***@host:5432/db');
    expect(redactUrl('postgres://host/db')).toBe('postgres://host/db');
  });
});
