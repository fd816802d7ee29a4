import { htmlToPlainText } from './compose.js';

/**
 * The text of an attachment an agent may want to read without downloading it (MCP `get_attachment`):
 * PDF through pdf.js (`unpdf`, Mozilla's parser built for servers), DOCX through `mammoth`, and
 * text formats as they are. Runs in a worker thread with a time limit (`offload.ts` `textPool`);
 * callers check the size first (MAX_EXTRACT_BYTES).
 */

/** Attachments larger than this are not read (the download link still serves them). */
export const MAX_EXTRACT_BYTES = 10 * 1024 * 1024;
/** Text past this many characters is cut (`truncated`). */
export const MAX_EXTRACT_CHARS = 200_000;
/** A document that takes longer is given up (its thread is ended). */
export const EXTRACT_TIMEOUT_MS = 10_000;

export type TextFormat = 'pdf' | 'docx' | 'html' | 'text';

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const TEXT_TYPES = /^(text\/(?!html)[\w.+-]+|application\/(json|xml|csv|x-ndjson|[\w.+-]+\+(json|xml)))$/i;
const TEXT_NAMES = /\.(txt|csv|tsv|md|markdown|json|xml|ics|vcf|log|ya?ml)$/i;

/** The format to read an attachment as, from its content type, its name and its first bytes; none: not readable. */
export function textFormatOf(
  contentType: string | null | undefined,
  filename: string | null | undefined,
  head: Uint8Array,
): TextFormat | undefined {
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  const name = filename ?? '';
  const starts = (s: string) => head.length >= s.length && [...s].every((c, i) => head[i] === c.charCodeAt(0));
  if (type === 'application/pdf' || /\.pdf$/i.test(name)) return starts('%PDF-') ? 'pdf' : undefined;
  if (type === DOCX || /\.docx$/i.test(name)) return starts('PK\x03\x04') ? 'docx' : undefined;
  if (type === 'text/html' || /\.html?$/i.test(name)) return 'html';
  if (TEXT_TYPES.test(type) || TEXT_NAMES.test(name)) return 'text';
  return undefined;
}

export interface ExtractedText {
  readonly text: string;
  readonly truncated: boolean;
}

function bounded(text: string): ExtractedText {
  const clean = text
    .replace(/\r\n?/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return clean.length > MAX_EXTRACT_CHARS
    ? { text: clean.slice(0, MAX_EXTRACT_CHARS), truncated: true }
    : { text: clean, truncated: false };
}

/** The text of `bytes` read as `format` (in a worker thread: pdf.js and mammoth hold the thread while they parse). */
export async function extractText(format: TextFormat, bytes: Uint8Array): Promise<ExtractedText> {
  switch (format) {
    case 'pdf': {
      const { extractText: pdfText, getDocumentProxy } = await import('unpdf');
      const pdf = await getDocumentProxy(bytes);
      try {
        const { text } = await pdfText(pdf, { mergePages: false });
        return bounded(text.join('\n\n'));
      } finally {
        await pdf.destroy();
      }
    }
    case 'docx': {
      const mammoth = (await import('mammoth')).default;
      const { value } = await mammoth.extractRawText({
        buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
      });
      return bounded(value);
    }
    case 'html':
      return bounded(htmlToPlainText(new TextDecoder().decode(bytes)));
    case 'text':
      return bounded(new TextDecoder().decode(bytes));
  }
}
