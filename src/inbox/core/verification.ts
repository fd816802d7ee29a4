/**
 * Verification codes and links of a received message, for the sign-up and log-in flows agents run:
 * the one-time code ("Your code is 482913") and the confirmation link of the text and HTML bodies.
 * Pure: the MCP door adds them to the messages it returns (mcp/mcp.tools.ts).
 */

export interface VerificationHints {
  /** 4–8 digit codes, those next to a word like "code" or "OTP" first. */
  readonly codes: string[];
  /** http(s) links of the text and the HTML (`href`s), those that look like confirmations first. */
  readonly links: string[];
}

const MAX_CODES = 10;
const MAX_LINKS = 20;
/** Characters of body read: codes and links of a sign-up mail sit near the top. */
const SCAN_CHARS = 100_000;

const CODE_WORDS =
  /\b(code|codes|otp|pin|passcode|one[- ]time|verification|verify|confirm|security|login|log-in|sign[- ]in|2fa|mfa|token|código|code de|bestätigungscode|kod)\b/i;
/** A code: 4–8 digits alone, or 6–8 digits written in two groups (`482 913`, `482-913`). */
const CODE = /(?<![\w.,/:#+-])(\d{4,8}|\d{3,4}[ -]\d{3,4})(?![\w/:%-]|[.,]\d)/g;
const URL_IN_TEXT = /\bhttps?:\/\/[^\s<>"'`()[\]{}]+[^\s<>"'`()[\]{}.,;:!?]/gi;
const HREF = /\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))/gi;
const CONFIRM_LINK = /verif|confirm|activate|magic|login|log-in|signin|sign-in|token|auth|reset|otp|code/i;

const ENTITIES: Readonly<Record<string, string>> = { amp: '&', quot: '"', apos: "'", lt: '<', gt: '>' };
const decodeEntities = (s: string) =>
  s.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
    if (name[0] === '#') {
      const n = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      return Number.isFinite(n) && n > 0 && n < 0x110000 ? String.fromCodePoint(n) : whole;
    }
    return ENTITIES[name.toLowerCase()] ?? whole;
  });

const looksLikeYear = (digits: string) => /^(19|20)\d\d$/.test(digits);

function codesOf(text: string): string[] {
  const near: string[] = [];
  const other: string[] = [];
  for (const m of text.matchAll(CODE)) {
    const digits = (m[1] as string).replace(/[ -]/g, '');
    if (digits.length < 4 || digits.length > 8) continue;
    const at = m.index ?? 0;
    const context = text.slice(Math.max(0, at - 80), at + m[0].length + 40);
    if (CODE_WORDS.test(context)) near.push(digits);
    else if (!looksLikeYear(digits) && (m[1] as string).length === digits.length) other.push(digits);
  }
  return [...new Set([...near, ...other])].slice(0, MAX_CODES);
}

function linksOf(text: string, html: string): string[] {
  const found: string[] = [];
  for (const m of html.matchAll(HREF)) found.push(decodeEntities((m[1] ?? m[2] ?? m[3] ?? '').trim()));
  for (const m of text.matchAll(URL_IN_TEXT)) found.push(m[0]);
  for (const m of decodeEntities(html.replace(/<[^>]*>/g, ' ')).matchAll(URL_IN_TEXT)) found.push(m[0]);
  const links = [...new Set(found.filter((u) => /^https?:\/\/[^\s]+$/i.test(u) && u.length <= 4096))];
  return [...links.filter((u) => CONFIRM_LINK.test(u)), ...links.filter((u) => !CONFIRM_LINK.test(u))].slice(
    0,
    MAX_LINKS,
  );
}

/** The codes and links of a message's bodies (the HTML's visible text counts for codes too). */
export function verificationHints(bodies: { text?: string | null; html?: string | null }): VerificationHints {
  const text = (bodies.text ?? '').slice(0, SCAN_CHARS);
  const html = (bodies.html ?? '').slice(0, SCAN_CHARS);
  const visible = html
    ? decodeEntities(html.replace(/<(script|style|head)\b[^>]*>[\s\S]*?<\/\1\s*>/gi, ' ').replace(/<[^>]*>/g, ' '))
    : '';
  return { codes: codesOf(text ? `${text}\n${visible}` : visible), links: linksOf(text, html) };
}
