/**
 * Typed, frozen configuration from environment variables.
 *
 * This module is the only reader of `process.env`. Each service declares its settings as a
 * spec of small parsers; `loadConfig` runs every parser, collects every problem and throws one
 * `ConfigError` listing them all, so an operator fixes a bad environment in one go.
 */

export type Env = Readonly<Record<string, string | undefined>>;

export interface Setting<T> {
  readonly variable: string;
  /** Human text for the README's configuration table and for error messages. */
  readonly description: string;
  readonly defaultText: string;
  parse(raw: string | undefined): T;
}

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

class SettingProblem extends Error {}

type Parser<T> = (raw: string) => T;

const parsePort: Parser<number> = (raw) => {
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n > 65535) throw new SettingProblem(`must be a port number 0-65535, got "${raw}"`);
  return n;
};

function setting<T>(
  variable: string,
  description: string,
  fallback: T | (() => T),
  defaultText: string,
  parse: Parser<T>,
): Setting<T> {
  return {
    variable,
    description,
    defaultText,
    parse(raw) {
      if (raw === undefined || raw.trim() === '') {
        return typeof fallback === 'function' ? (fallback as () => T)() : fallback;
      }
      return parse(raw.trim());
    },
  };
}

export const env = {
  string(variable: string, description: string, fallback: string): Setting<string> {
    return setting(variable, description, fallback, fallback === '' ? 'unset' : `\`${fallback}\``, (raw) => raw);
  },
  optionalString(variable: string, description: string, defaultText = 'unset'): Setting<string | undefined> {
    return setting<string | undefined>(variable, description, undefined, defaultText, (raw) => raw);
  },
  port(variable: string, description: string, fallback: number): Setting<number> {
    return setting(variable, description, fallback, `\`${fallback}\``, parsePort);
  },
  optionalPort(variable: string, description: string, defaultText = 'unset'): Setting<number | undefined> {
    return setting<number | undefined>(variable, description, undefined, defaultText, parsePort);
  },
  integer(variable: string, description: string, fallback: number, min: number, max: number): Setting<number> {
    return setting(variable, description, fallback, `\`${fallback}\``, (raw) => {
      const n = Number(raw);
      if (!/^-?\d+$/.test(raw) || n < min || n > max)
        throw new SettingProblem(`must be an integer from ${min} to ${max}, got "${raw}"`);
      return n;
    });
  },
  /** A decimal number with at most four decimal places (percentages and the like), e.g. `3.57`. */
  decimal(variable: string, description: string, fallback: number, min: number, max: number): Setting<number> {
    return setting(variable, description, fallback, `\`${fallback}\``, (raw) => {
      const n = Number(raw);
      if (!/^\d+(\.\d{1,4})?$/.test(raw) || n < min || n > max)
        throw new SettingProblem(
          `must be a decimal number from ${min} to ${max} (at most 4 decimal places), got "${raw}"`,
        );
      return n;
    });
  },
  boolean(variable: string, description: string, fallback: boolean): Setting<boolean> {
    return setting(variable, description, fallback, `\`${fallback}\``, (raw) => {
      const v = raw.toLowerCase();
      if (['1', 'true', 'yes', 'on'].includes(v)) return true;
      if (['0', 'false', 'no', 'off'].includes(v)) return false;
      throw new SettingProblem(`must be true or false, got "${raw}"`);
    });
  },
  oneOf<const T extends string>(variable: string, description: string, values: readonly T[], fallback: T): Setting<T> {
    return setting(variable, description, fallback, `\`${fallback}\``, (raw) => {
      if (!(values as readonly string[]).includes(raw))
        throw new SettingProblem(`must be one of ${values.join(', ')}, got "${raw}"`);
      return raw as T;
    });
  },
  list(variable: string, description: string, fallback: readonly string[]): Setting<readonly string[]> {
    return setting(variable, description, fallback, fallback.length ? `\`${fallback.join(',')}\`` : 'unset', (raw) =>
      raw
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    );
  },
  /** A comma-separated list of at least one of `values`, each at most once. */
  listOf<const T extends string>(
    variable: string,
    description: string,
    values: readonly T[],
    fallback: readonly T[],
  ): Setting<readonly T[]> {
    return setting(variable, description, fallback, `\`${fallback.join(',')}\``, (raw) => {
      const items = raw
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      const unknown = items.filter((i) => !(values as readonly string[]).includes(i));
      if (unknown.length || !items.length)
        throw new SettingProblem(
          `must be a comma-separated list of ${values.join(', ')}, got "${raw}"${unknown.length ? ` (unknown: ${unknown.join(', ')})` : ''}`,
        );
      return [...new Set(items)] as T[];
    });
  },
  /** A comma-separated list of URLs, each with one of `protocols`; unset = none. */
  urlList(variable: string, description: string, protocols: readonly string[]): Setting<readonly string[]> {
    return setting<readonly string[]>(variable, description, [], 'unset (none)', (raw) => {
      const urls = raw
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      for (const item of urls) {
        let parsed: URL;
        try {
          parsed = new URL(item);
        } catch {
          throw new SettingProblem(`must be a comma-separated list of URLs, got "${redactUrl(item)}"`);
        }
        if (!protocols.includes(parsed.protocol))
          throw new SettingProblem(
            `must use ${protocols.join(' or ')}, got "${parsed.protocol}" in "${redactUrl(item)}"`,
          );
      }
      return urls;
    });
  },
  url(
    variable: string,
    description: string,
    protocols: readonly string[],
    defaultText = 'unset',
  ): Setting<string | undefined> {
    return setting<string | undefined>(variable, description, undefined, defaultText, (raw) => {
      let parsed: URL;
      try {
        parsed = new URL(raw);
      } catch {
        throw new SettingProblem(`must be a URL, got "${redactUrl(raw)}"`);
      }
      if (!protocols.includes(parsed.protocol))
        throw new SettingProblem(`must use ${protocols.join(' or ')}, got "${parsed.protocol}"`);
      return raw;
    });
  },
};

export type ConfigSpec = Readonly<Record<string, Setting<unknown>>>;
export type ConfigOf<S extends ConfigSpec> = { readonly [K in keyof S]: S[K] extends Setting<infer T> ? T : never };

/** Parses every setting of `spec` from `source`; throws one ConfigError naming every bad variable. */
export function loadConfig<S extends ConfigSpec>(spec: S, source: Env = process.env): ConfigOf<S> {
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [key, s] of Object.entries(spec)) {
    try {
      out[key] = s.parse(source[s.variable]);
    } catch (err) {
      if (!(err instanceof SettingProblem)) throw err;
      problems.push(`${s.variable} ${err.message}`);
    }
  }
  if (problems.length) throw new ConfigError(problems);
  return Object.freeze(out) as ConfigOf<S>;
}

/** Hides credentials in a URL before it reaches a log line or an error message. */
export function redactUrl(raw: string): string {
  return raw.replace(/\/\/([^:/@]+):([^@/]*)@/, '//$1:***@');
}
