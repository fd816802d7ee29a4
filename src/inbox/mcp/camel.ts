/**
 * The MCP door speaks camelCase (`inboxId`, `pageToken`, `addLabels`), as AgentMail's hosted MCP
 * server and its SDKs do; the REST wire is snake_case. Rather than a second set of shapes, the MCP
 * tools take the REST shapes (request schemas, response schemas, presenters) and rename their
 * keys here, so a field added to the REST wire reaches MCP with its rules and in its place.
 *
 * Keys under `metadata` and `headers` are the caller's own and are never renamed.
 */

/** Objects whose keys belong to the caller: kept as they are. */
const OPAQUE = new Set(['metadata', 'headers']);

const renamed = (rename: (key: string) => string) => {
  // The wire has a few dozen field names: each is renamed once.
  const seen = new Map<string, string>();
  return (key: string): string => {
    let out = seen.get(key);
    if (out === undefined) {
      out = rename(key);
      if (seen.size < 10_000) seen.set(key, out);
    }
    return out;
  };
};

export const camel = renamed((key) => key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()));
export const snake = renamed((key) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`));

function renameKeys(value: unknown, rename: (key: string) => string): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => renameKeys(v, rename));
  if (Buffer.isBuffer(value)) return value;
  const out: Record<string, unknown> = {};
  for (const key in value) {
    const v = (value as Record<string, unknown>)[key];
    out[rename(key)] = OPAQUE.has(key) ? v : renameKeys(v, rename);
  }
  return out;
}

/** A REST answer (snake_case) as the MCP door returns it. */
export const camelKeys = <T>(value: T): unknown => renameKeys(value, camel);

/** MCP arguments (camelCase) as the REST request shapes and their converters take them. */
export const snakeKeys = (value: Readonly<Record<string, unknown>>): Record<string, unknown> =>
  renameKeys(value, snake) as Record<string, unknown>;

export type JsonSchema = { [key: string]: unknown };

/**
 * A JSON Schema (a TypeBox schema of the REST wire) with camelCase property names: `properties`
 * keys and `required` entries, all the way down but inside `metadata` and `headers`.
 */
export function camelSchema(schema: unknown): JsonSchema {
  const plain = JSON.parse(JSON.stringify(schema)) as JsonSchema;
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(walk);
    if (node === null || typeof node !== 'object') return node;
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(node)) {
      if (key === 'properties' && v && typeof v === 'object') {
        out[key] = Object.fromEntries(
          Object.entries(v).map(([name, sub]) => [camel(name), OPAQUE.has(name) ? sub : walk(sub)]),
        );
      } else if (key === 'required' && Array.isArray(v)) {
        out[key] = v.map((name) => (typeof name === 'string' ? camel(name) : name));
      } else out[key] = walk(v);
    }
    return out;
  };
  return walk(plain) as JsonSchema;
}
