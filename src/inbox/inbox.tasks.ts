import { ownBuffer, serveTasks, type TaskResult } from '../platform/workers/tasks.js';
import { parseJsonTask } from '../platform/workers/json.js';
import { decodeBase64Task } from './mail/base64.js';
import { composeWithNodemailer, type ComposeInput } from './mail/compose.js';
import { distinctBodyWords, type BodyParts } from './search/search-text.js';

/** The tasks of the inbox's worker threads (`offload.ts`). */

async function composeTask(input: ComposeInput): Promise<TaskResult> {
  // Buffers arrive as plain Uint8Arrays: the same bytes, seen as Buffers again (no copy).
  const asBuffer = (u: Uint8Array) => Buffer.from(u.buffer, u.byteOffset, u.byteLength);
  const raw = await composeWithNodemailer({ ...input, attachments: input.attachments.map((a) => ({ ...a, content: asBuffer(a.content) })) });
  const own = ownBuffer(raw);
  return { value: raw, transfer: own ? [own] : [] };
}

async function bodyWordsTask(input: BodyParts): Promise<TaskResult> {
  return { value: await distinctBodyWords(input) };
}

serveTasks({ compose: composeTask, parseJson: parseJsonTask, decodeBase64: decodeBase64Task, bodyWords: bodyWordsTask });
