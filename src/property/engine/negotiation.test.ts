import { describe, expect, it } from 'vitest';
import { AppError } from '../../platform/errors/app-error.js';
import { negotiate, negotiateErrorFormat, requireContentType } from './negotiation.js';

describe('negotiate', () => {
  it('defaults to JSON-LD without Accept or with a wildcard', () => {
    expect(negotiate(undefined, ['jsonld', 'json'])).toBe('jsonld');
    expect(negotiate('*/*', ['jsonld', 'json'])).toBe('jsonld');
    expect(negotiate('application/*', ['jsonld', 'json'])).toBe('jsonld');
  });

  it('honours the most specific, most preferred range', () => {
    expect(negotiate('application/json', ['jsonld', 'json'])).toBe('json');
    expect(negotiate('application/json, */*;q=0.8', ['jsonld', 'json'])).toBe('json');
    expect(negotiate('application/ld+json;q=0.5, application/json', ['jsonld', 'json'])).toBe('json');
    expect(negotiate('text/html, application/json;q=0.9', ['jsonld', 'json'])).toBe('json');
  });

  it('answers 406 when nothing matches, naming what is supported', () => {
    expect(() => negotiate('text/csv', ['jsonld', 'json'])).toThrowError(
      'Requested format "text/csv" is not supported. Supported MIME types are "application/ld+json", "application/json".',
    );
    expect(() => negotiate('application/json;q=0', ['jsonld', 'json'])).toThrow(AppError);
    expect(() => negotiate('application/ld+json', ['json'])).toThrow(AppError);
  });
});

describe('negotiateErrorFormat', () => {
  it('uses problem+json only when plain JSON is preferred', () => {
    expect(negotiateErrorFormat(undefined)).toBe('jsonld');
    expect(negotiateErrorFormat('application/json')).toBe('problem');
    expect(negotiateErrorFormat('application/problem+json')).toBe('problem');
    expect(negotiateErrorFormat('application/ld+json')).toBe('jsonld');
    expect(negotiateErrorFormat('*/*')).toBe('jsonld');
  });
});

describe('requireContentType', () => {
  it('ignores parameters and case, and explains what is accepted', () => {
    expect(() =>
      requireContentType('Application/Merge-Patch+JSON; charset=utf-8', ['application/merge-patch+json']),
    ).not.toThrow();
    expect(() => requireContentType('application/json', ['application/merge-patch+json'])).toThrowError(
      'The content-type "application/json" is not supported. Supported MIME types are "application/merge-patch+json".',
    );
    expect(() => requireContentType(undefined, ['application/json'])).toThrowError(
      'The "Content-Type" header must exist.',
    );
  });
});
