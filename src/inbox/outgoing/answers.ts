import {
  addressOf,
  escapeHtml,
  forwardedBlock,
  forwardSubject,
  htmlToPlainText,
  replySubject,
} from '../mail/compose.js';
import type { Message } from '../core/message.js';
import type { ReplyInput, SendAttachmentInput, SendInput } from './outgoing.js';

/**
 * Reply and forward composition: what an answer to a stored message says before it is validated
 * like any send. Pure functions of the original and the caller's input.
 */

/** References are capped: a long conversation keeps its newest ids. */
const MAX_REFERENCES = 50;

function uniqueByAddress(list: readonly string[]): string[] {
  const seen = new Set<string>();
  return list.filter((e) => {
    const key = addressOf(e).toLowerCase();
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** In-Reply-To and References of an answer to `parent`: they make it join the thread on both sides. */
export function answerHeaders(parent: Message | undefined): { inReplyTo: string | null; references: string[] } {
  if (!parent) return { inReplyTo: null, references: [] };
  return {
    inReplyTo: parent.messageId,
    references: [...new Set([...parent.references, parent.messageId])].slice(-MAX_REFERENCES),
  };
}

/**
 * A reply to `parent` in its inbox: by default its sender (its Reply-To, or, for a message this
 * inbox sent, its recipients); with `replyAll` also every to and cc recipient but the inbox
 * itself. Explicit to, cc and bcc replace the computed ones.
 */
export function replyInput(parent: Message, input: ReplyInput): SendInput {
  const own = parent.inboxId.toLowerCase();
  const notOwn = (list: readonly string[]) => list.filter((e) => addressOf(e).toLowerCase() !== own);
  const fromUs = addressOf(parent.from).toLowerCase() === own;
  let to = fromUs ? notOwn(parent.to) : parent.replyTo.length ? [...parent.replyTo] : [parent.from];
  if (input.replyAll && !fromUs) to = [...to, ...notOwn(parent.to)];
  // A note the inbox sent to itself is answered to itself.
  if (!to.length) to = [parent.from];
  to = uniqueByAddress(to);
  const inTo = new Set(to.map((e) => addressOf(e).toLowerCase()));
  const cc = input.replyAll
    ? uniqueByAddress(notOwn(parent.cc)).filter((e) => !inTo.has(addressOf(e).toLowerCase()))
    : [];
  return { ...input, to: input.to ?? to, cc: input.cc ?? cc, subject: replySubject(parent.subject) };
}

/**
 * A forward of `original`: the caller's text and HTML first, then the original under a
 * forwarded-message block, with the original's attachments (`carried`) after the caller's.
 */
export function forwardInput(original: Message, input: SendInput, carried: readonly SendAttachmentInput[]): SendInput {
  const block = forwardedBlock(original);
  const own = input.text ?? (input.html !== undefined ? htmlToPlainText(input.html) : '');
  const ownHtml =
    input.html ?? (input.text !== undefined ? `<div>${escapeHtml(input.text).replace(/\n/g, '<br>')}</div>` : '');
  return {
    ...input,
    subject: input.subject ?? forwardSubject(original.subject),
    text: own ? `${own}\n\n${block.text}` : block.text,
    html: `${ownHtml}${ownHtml ? '<br><br>' : ''}${block.html}`,
    attachments: [...(input.attachments ?? []), ...carried],
  };
}
