import type { PiecesChannel } from '../platform/workers/pieces.js';
import { serveTasks, type TaskResult } from '../platform/workers/tasks.js';
import { parseJsonTask } from '../platform/workers/json.js';
import { decodeBase64Task } from './mail/base64.js';
import { composeInPieces, type ComposeInput } from './mail/compose.js';
import { distinctBodyWords, type BodyParts } from './core/search-text.js';
import { extractText, type TextFormat } from './mail/attachment-text.js';

/** The tasks of the inbox's worker threads (`offload.ts`). */

/** Composes a message and sends its source in pieces (compose.ts `composeSource`); its value is the source's size. */
async function composeTask({ input, pieces }: { input: ComposeInput; pieces: PiecesChannel }): Promise<TaskResult> {
  // Buffers arrive as plain Uint8Arrays: the same bytes, seen as Buffers again (no copy).
  const asBuffer = (u: Uint8Array) => Buffer.from(u.buffer, u.byteOffset, u.byteLength);
  return {
    value: await composeInPieces(
      { ...input, attachments: input.attachments.map((a) => ({ ...a, content: asBuffer(a.content) })) },
      pieces,
    ),
  };
}

async function bodyWordsTask(input: BodyParts): Promise<TaskResult> {
  return { value: await distinctBodyWords(input) };
}

async function attachmentTextTask({ format, bytes }: { format: TextFormat; bytes: Uint8Array }): Promise<TaskResult> {
  return { value: await extractText(format, bytes) };
}

serveTasks({
  attachmentText: attachmentTextTask,
  compose: composeTask,
  parseJson: parseJsonTask,
  decodeBase64: decodeBase64Task,
  bodyWords: bodyWordsTask,
});
