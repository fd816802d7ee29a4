import type { TaskResult } from '../../platform/workers/tasks.js';
import { ownBuffer } from '../../platform/workers/tasks.js';

const BASE64 = /^(?:[A-Za-z0-9+/]*|[A-Za-z0-9_-]*)={0,2}$/;

/**
 * The bytes of an attachment's base64 `content` (standard or URL-safe alphabet, padding optional,
 * whitespace ignored), or null when it is not valid base64.
 */
export function decodeBase64(content: string): Buffer | null {
  const b64 = content.replace(/\s+/g, '');
  const padded = b64.includes('=');
  if (!BASE64.test(b64) || b64.length % 4 === 1 || (padded && b64.length % 4 !== 0)) return null;
  return Buffer.from(b64, 'base64');
}

/** `decodeBase64` as a worker-thread task (inbox.tasks.ts): the bytes are moved back, not copied. */
export function decodeBase64Task(content: string): TaskResult {
  const bytes = decodeBase64(content);
  if (!bytes) return { value: null };
  // Buffer.from(…, 'base64') may hand out a slice of a shared pool: a whole buffer of its own moves.
  const own = ownBuffer(bytes) ? bytes : Buffer.from(bytes);
  return { value: own, transfer: [ownBuffer(own) as ArrayBuffer] };
}
