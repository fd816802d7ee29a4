import { describe, expect, it } from 'vitest';
import { formatDateTime } from '../../src/property/engine/serializer.js';

/** The output API Platform's DateTimeNormalizer gives, computed the long way (a Date per value). */
const throughDate = (value: string): string => {
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? value : `${date.toISOString().slice(0, 19)}+00:00`;
};

describe('formatDateTime', () => {
  it('gives stored UTC timestamps in RFC 3339 with seconds and +00:00', () => {
    expect(formatDateTime('2026-11-01T12:00:00.000Z')).toBe('2026-11-01T12:00:00+00:00');
    expect(formatDateTime('2024-02-29T23:59:59.999Z')).toBe('2024-02-29T23:59:59+00:00');
  });

  it('writes every value as a Date would, the short path included', () => {
    const values = [
      '2026-11-01T12:00:00.000Z',
      '2026-11-01T12:00:00Z',
      '2026-01-28T00:00:00.5Z',
      '2026-12-31T23:59:59.123456Z',
      '2025-02-29T10:00:00.000Z', // no such day: a Date rolls it over to 1 March
      '2026-02-30T10:00:00.000Z',
      '2026-04-31T10:00:00.000Z',
      '2026-11-01T12:00:00.000+02:00',
      '2026-11-01 12:00:00',
      '2026-13-01T00:00:00.000Z',
      '2026-11-01T24:00:00.000Z',
      'not a date',
    ];
    for (let day = 1; day <= 31; day++) values.push(`2026-02-${String(day).padStart(2, '0')}T08:30:15.000Z`);
    for (const value of values) expect(formatDateTime(value), value).toBe(throughDate(value));
  });
});
