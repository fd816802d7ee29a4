import { describe, expect, it } from 'vitest';
import { verificationHints } from './verification.js';

describe('verificationHints', () => {
  it('finds the code next to its word first, and leaves out years, prices, times and parts of words', () => {
    const hints = verificationHints({
      text: 'Order 5521 of 2026-11-28 costs 1234.50 EUR at 10:30.\nYour verification code is 482913. It expires in 10 minutes.\nRef ABC12345',
    });
    expect(hints.codes[0]).toBe('482913');
    expect(hints.codes).toContain('5521');
    expect(hints.codes).not.toContain('2026');
    expect(hints.codes).not.toContain('1234');
    expect(hints.codes).not.toContain('12345');
  });

  it('reads codes written in two groups and codes of the HTML body', () => {
    expect(verificationHints({ text: 'Your code: 482 913' }).codes).toEqual(['482913']);
    expect(verificationHints({ html: '<p>Use <b>7315</b> as your one-time PIN</p>' }).codes).toEqual(['7315']);
  });

  it('collects http(s) links of text and hrefs, decoded, confirmation links first, without mailto', () => {
    const hints = verificationHints({
      text: 'Read our blog at https://example.com/blog.',
      html: '<a href="https://example.com/verify?token=a&amp;u=1">Confirm</a> <a href=\'mailto:x@y.z\'>mail</a>',
    });
    expect(hints.links).toEqual(['https://example.com/verify?token=a&u=1', 'https://example.com/blog']);
  });

  it('answers empty lists for a message without bodies', () => {
    expect(verificationHints({})).toEqual({ codes: [], links: [] });
  });
});
