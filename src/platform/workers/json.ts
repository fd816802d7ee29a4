import secureJson from 'secure-json-parse';
import { JsonTooDeepError, jsonDeeperThan } from '../json-depth.js';
import type { TaskResult } from './tasks.js';

/**
 * The task that parses a JSON request body in a worker thread: the UTF-8 bytes in (moved, not
 * copied), the value out, refusing `__proto__` and `constructor.prototype` keys as Fastify's own
 * parser does. Throws on anything that is not valid JSON, and a JsonTooDeepError on JSON nested
 * deeper than MAX_JSON_DEPTH (whose value could not be sent back to the caller anyway).
 */
export function parseJsonTask(input: Uint8Array): TaskResult {
  const text = Buffer.from(input.buffer, input.byteOffset, input.byteLength).toString('utf8');
  if (jsonDeeperThan(text)) throw new JsonTooDeepError();
  return { value: secureJson.parse(text, null, { protoAction: 'error', constructorAction: 'error' }) };
}
