import { describe, expect, it } from 'vitest';
import {
  anyone,
  authenticated,
  dateFilter,
  defineResource,
  existsFilter,
  f,
  orderFilter,
  rangeFilter,
  searchFilter,
} from './define.js';
import { buildRegistry, RegistryError } from './registry.js';

const options = { prefix: '/api', title: 't', description: 'd', version: '1' };

describe('buildRegistry', () => {
  it('refuses public caching of answers that differ by caller (decision 0047)', () => {
    const byCaller = defineResource({
      shortName: 'Gamma',
      path: '/api/gammas',
      table: 'gamma',
      fields: { id: f.id(), owner: f.integer() },
      cacheHeaders: { public: true, sharedMaxAge: -5 },
      operations: {
        getCollection: { security: authenticated },
        get: { security: anyone, securityItem: () => true, provider: async (items) => items },
      },
      scope: (principal) => ({ owner: principal?.id ?? -1 }),
    });
    expect(() => buildRegistry([byCaller], options)).toThrow(RegistryError);
    let message = '';
    try {
      buildRegistry([byCaller], options);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('cacheHeaders.public: getCollection must be readable without a key');
    expect(message).toContain('cacheHeaders.public: get has an item rule');
    expect(message).toContain('cacheHeaders.public: get has a provider');
    expect(message).toContain('cacheHeaders.public: a scope makes answers differ by caller');
    expect(message).toContain('cacheHeaders.public: sharedMaxAge must be whole seconds');
    const fine = defineResource({
      shortName: 'Delta',
      path: '/api/deltas',
      table: 'delta',
      fields: { id: f.id() },
      cacheHeaders: { public: true, maxAge: 10 },
      operations: { get: { security: anyone } },
    });
    expect(buildRegistry([fine], options).resources[0]?.cacheHeaders).toEqual({ public: true, maxAge: 10 });
  });

  it('rejects unknown references, duplicate paths, bad filters and missing security, all at once', () => {
    const a = defineResource({
      shortName: 'Alpha',
      path: '/api/alphas',
      table: 'alpha',
      fields: { id: f.id(), beta: f.ref('Missing'), name: f.string({ required: true }), n: f.integer() },
      operations: { get: { security: anyone }, post: {} as never },
      filters: [
        ...searchFilter({ nope: 'exact', n: 'ipartial', beta: 'exact' }),
        ...orderFilter('missing'),
        ...rangeFilter('name'),
        ...dateFilter('n'),
        ...existsFilter('name'),
        ...rangeFilter('n', 'n', 'ratio'),
      ],
      derived: { ratio: { kind: 'number', ratio: ['name', 'n'] } },
      links: [{ path: '/api/betas/{id}/alphas', from: 'Alpha', toField: 'beta' }],
      countedBy: 'name',
    });
    const b = defineResource({
      shortName: 'Beta',
      path: '/api/alphas',
      table: 'beta',
      fields: { name: f.string() },
      operations: {},
    });
    let message = '';
    try {
      buildRegistry([a, b], options);
    } catch (err) {
      expect(err).toBeInstanceOf(RegistryError);
      message = (err as Error).message;
    }
    expect(message).toContain('field beta refers to unknown resource Missing');
    expect(message).toContain('operation post has no security rule');
    expect(message).toContain('search filter names unknown field nope');
    expect(message).toContain('order filter names unknown field missing');
    expect(message).toContain('search filter (ipartial) does not suit integer n');
    expect(message).toContain('range filter does not suit string name');
    expect(message).toContain('date filter does not suit integer n');
    expect(message).toContain('exists filter does not suit string name');
    expect(message).toContain('range filter on n declared twice');
    expect(message).toContain('derived ratio needs two numeric fields');
    expect(message).toContain('link /api/betas/{id}/alphas needs a ref field to Alpha');
    expect(message).toContain('countedBy names no ref field');
    expect(message).toContain('duplicate path /api/alphas');
    expect(message).toContain('resource Beta: needs exactly one id field');
  });

  it('refuses a hook on an operation that would never run it, and computed fields nothing computes', () => {
    const processor = async () => ({ id: 1 });
    const provider = async (items: readonly { id: number }[]) => items;
    const a = defineResource({
      shortName: 'Alpha',
      path: '/api/alphas',
      table: 'alpha',
      fields: { id: f.id(), total: f.computed('number') },
      operations: {
        getCollection: { security: anyone, processor },
        get: { security: anyone, provider },
        delete: { security: anyone, provider },
        patch: { security: anyone, processor },
      },
    });
    const message = (() => {
      try {
        buildRegistry([a], options);
        return '';
      } catch (err) {
        return (err as Error).message;
      }
    })();
    expect(message).toContain('operation getCollection would never run its processor');
    expect(message).toContain('operation delete would never run its provider');
    expect(message).toContain('operation getCollection answers with computed field total but has no provider');
    expect(message).toContain('operation patch answers with computed field total but has no provider');
    expect(message).not.toContain('operation get answers');
    expect(message).not.toContain('operation patch would never run');
  });

  it('accepts a resource that is not persisted only as a post with a processor and no id', () => {
    const processor = async () => ({ id: 0 });
    const ok = defineResource({
      shortName: 'Calc',
      path: '/api/calcs',
      table: null,
      fields: { a: f.input('number'), b: f.computed('number') },
      operations: { post: { security: anyone, processor } },
    });
    const registry = buildRegistry([ok], options);
    expect(registry.byShortName('Calc')?.persisted).toBe(false);
    const bad = defineResource({
      shortName: 'Calc',
      path: '/api/calcs',
      table: null,
      fields: { id: f.id() },
      operations: { post: { security: anyone }, get: { security: anyone } },
    });
    expect(() => buildRegistry([bad], options)).toThrow(
      /has no id field[\s\S]*needs a processor[\s\S]*offers post only, not get/,
    );
  });

  it('derives names and freezes the result', () => {
    const registry = buildRegistry(
      [
        defineResource({
          shortName: 'FooBar',
          path: '/api/foo_bars',
          table: 'foo',
          fields: { id: f.id(), name: f.string() },
          operations: { getCollection: { security: anyone } },
        }),
      ],
      options,
    );
    const r = registry.byShortName('FooBar');
    expect(r?.entrypointKey).toBe('fooBar');
    expect(r?.segment).toBe('foo_bars');
    expect(r?.fieldsByName.get('name')?.column).toBe('name');
    expect(Object.isFrozen(registry.resources)).toBe(true);
    expect(Object.isFrozen(r?.fields[1])).toBe(true);
  });
});
