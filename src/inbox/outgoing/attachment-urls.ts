import { download, DownloadError } from '../../platform/net/download.js';
import { AttachmentUrlError } from '../core/message.errors.js';
import { CONTROL } from '../core/message.js';
import { isMediaType } from '../mail/compose.js';

/**
 * The file of an attachment given by `url` (AgentMail's alternative to base64 `content`), fetched
 * for every door through the send path's validation (outgoing.ts), before any unit of work:
 * GET under the egress policy of webhooks (platform/net/egress.ts, INBOX_WEBHOOK_ALLOW_PRIVATE),
 * redirects followed and each judged again, one deadline per URL, one byte budget per request.
 * docs/decisions/0042.
 */

export interface AttachmentUrlRules {
  /** INBOX_WEBHOOK_ALLOW_PRIVATE: the one egress setting of the service. */
  readonly allowPrivate: boolean;
  /** INBOX_ATTACHMENT_URL_TIMEOUT_MS: one URL, redirects included. */
  readonly timeoutMs: number;
  /** INBOX_ATTACHMENT_URL_MAX_BYTES: every URL of one request together. */
  readonly maxBytes: number;
}

/** Redirects followed per URL (pre-signed links redirect once or twice). */
export const ATTACHMENT_URL_MAX_REDIRECTS = 5;
const USER_AGENT = 'inbox-service-attachments/1.0';

export interface FetchedFile {
  readonly bytes: Buffer;
  /** The answer's Content-Type when it is one a message may carry as it is. */
  readonly contentType?: string;
  /** From Content-Disposition or the URL's path, made a valid attachment file name. */
  readonly filename?: string;
}

/** A file name from the server, as validation accepts one: no control characters or path separators, ≤ 255. */
function usableFilename(name: string | undefined): string | undefined {
  const cleaned = name?.replace(new RegExp(CONTROL.source, 'g'), '').replace(/[/\\]/g, '_').trim().slice(0, 255);
  return cleaned || undefined;
}

/**
 * Fetches the file at `url` for attachment `index`, within `budget` bytes (what the request's
 * earlier URLs left of `rules.maxBytes`); each failure is a 400 of its own (AttachmentUrlError).
 */
export async function fetchAttachmentFile(
  index: number,
  url: string,
  budget: number,
  rules: AttachmentUrlRules,
): Promise<FetchedFile> {
  try {
    const got = await download(url, {
      allowPrivate: rules.allowPrivate,
      timeoutMs: rules.timeoutMs,
      maxBytes: budget,
      maxRedirects: ATTACHMENT_URL_MAX_REDIRECTS,
      userAgent: USER_AGENT,
    });
    const contentType = got.contentType?.trim();
    const filename = usableFilename(got.filename);
    return {
      bytes: got.bytes,
      ...(contentType && isMediaType(contentType) ? { contentType } : {}),
      ...(filename ? { filename } : {}),
    };
  } catch (err) {
    if (!(err instanceof DownloadError)) throw err;
    const problem =
      err.failure === 'too_large'
        ? `the files given by url may total at most ${rules.maxBytes} bytes per message (${err.message})`
        : err.failure === 'blocked'
          ? `${err.message}, which this service does not fetch from`
          : err.message;
    throw new AttachmentUrlError(index, err.failure, problem, err.status);
  }
}
