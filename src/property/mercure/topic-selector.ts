/**
 * Mercure topic selectors: `*` matches every topic, a URI template (RFC 6570, simple `{var}`
 * expressions, each standing for one path segment or more with `{+var}`) matches the topics it
 * expands to, and anything else matches itself exactly. Compiled templates are kept (bounded).
 */

const compiled = new Map<string, RegExp | null>();

function compile(selector: string): RegExp | null {
  let re = compiled.get(selector);
  if (re !== undefined) return re;
  if (!selector.includes('{')) re = null;
  else {
    let source = '';
    let i = 0;
    while (i < selector.length) {
      const open = selector.indexOf('{', i);
      if (open < 0) {
        source += escape(selector.slice(i));
        break;
      }
      const close = selector.indexOf('}', open);
      if (close < 0) {
        source += escape(selector.slice(i));
        break;
      }
      source += escape(selector.slice(i, open));
      source += selector[open + 1] === '+' ? '.+' : '[^/?#]+';
      i = close + 1;
    }
    re = new RegExp(`^${source}$`);
  }
  if (compiled.size > 10_000) compiled.clear();
  compiled.set(selector, re);
  return re;
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export function matchesSelector(selector: string, topic: string): boolean {
  if (selector === '*' || selector === topic) return true;
  const re = compile(selector);
  return re !== null && re.test(topic);
}

/** Whether one of `topics` matches one of `selectors`. */
export function anyMatch(selectors: readonly string[], topics: readonly string[]): boolean {
  for (const s of selectors) for (const t of topics) if (matchesSelector(s, t)) return true;
  return false;
}
