import { describe, expect, it } from 'vitest';
import { buildQueryString, listValues, parseQuery } from './query.js';

describe('parseQuery', () => {
  it('reads lists, indexed lists and maps as PHP does', () => {
    const q = parseQuery(
      'typ[]=haus&typ[]=wohnung&bundesland[0]=%2Fapi%2Fbundeslands%2F3&order[kaufpreis]=desc&page=2',
    );
    expect(q.get('typ')).toEqual(['haus', 'wohnung']);
    expect(listValues(q.get('bundesland'))).toEqual(['/api/bundeslands/3']);
    expect(q.get('order')).toEqual({ kaufpreis: 'desc' });
    expect(q.get('page')).toBe('2');
  });

  it('keeps the first position and the last value of a repeated key', () => {
    expect([...parseQuery('a=1&b=2&a=3').entries()]).toEqual([
      ['a', '3'],
      ['b', '2'],
    ]);
  });

  it('survives malformed percent-encoding and bounds the number of pairs', () => {
    expect(parseQuery('x=%ZZ%41').get('x')).toBe('%ZZA');
    expect(parseQuery(Array.from({ length: 500 }, (_, i) => `k${i}=1`).join('&')).size).toBe(100);
  });
});

describe('buildQueryString', () => {
  it('drops page, appends it last and encodes brackets and slashes (RFC 3986)', () => {
    const q = parseQuery(
      'page=3&order[kaufpreis]=asc&bundesland=/api/bundeslands/3&typ[0]=haus&typ[1]=buero&itemsPerPage=2',
    );
    expect(buildQueryString(q, 'page', 4)).toBe(
      'order%5Bkaufpreis%5D=asc&bundesland=%2Fapi%2Fbundeslands%2F3&typ%5B%5D=haus&typ%5B%5D=buero&itemsPerPage=2&page=4',
    );
    expect(buildQueryString(q, 'page', undefined)).toBe(
      'order%5Bkaufpreis%5D=asc&bundesland=%2Fapi%2Fbundeslands%2F3&typ%5B%5D=haus&typ%5B%5D=buero&itemsPerPage=2',
    );
  });

  it('encodes the characters encodeURIComponent leaves alone', () => {
    expect(buildQueryString(parseQuery("q=it's(*)!"), 'page', 1)).toBe('q=it%27s%28%2A%29%21&page=1');
  });
});
