import secureJson from 'secure-json-parse';
import type { TaskResult } from './tasks.js';

/**
 * The task that parses a JSON request body in a worker thread: the UTF-8 bytes in (moved, not
 * copied), the value out, refusing `__proto__` and `constructor.prototype` keys as Fastify's own
 * parser does. Throws on anything that is not valid JSON.
 */
export function parseJsonTask(input: Uint8Array): TaskResult {
  const text = Buffer.from(input.buffer, input.byteOffset, input.byteLength).toString('utf8');
  return { value: secureJson.parse(text, null, { protoAction: 'error', constructorAction: 'error' }) };
}
