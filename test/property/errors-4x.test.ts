import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api } from '../support/http.js';
import { dialects, startPropertyServer, type Account, type PropertyTestServer } from '../support/property-server.js';
import { createImmobilie, immobilieBody } from './fixtures.js';

/**
 * Issue 31 item 3: with PROPERTY_HYDRA_PREFIX=false (the 4.x wire) a body that breaks the
 * constraints answers 422 with API Platform 4's problem+json ConstraintViolation body, in JSON-LD
 * and in plain problem+json; a body that is no JSON and an unusable query parameter stay 400; the
 * OpenAPI document says so. The 3.x wire keeps its 400 (checked against the same requests).
 */

const PROBLEM = 'application/problem+json; charset=utf-8';
const NOT_BLANK = 'c1051bb4-d103-4f74-8988-acbcafc7fdc3';

describe.each(dialects)('%s: 4.x-wire validation errors', (dialect) => {
  let v4: PropertyTestServer;
  let v3: PropertyTestServer;
  let user4: Account;
  let user3: Account;

  beforeAll(async () => {
    [v4, v3] = await Promise.all([
      startPropertyServer({ dialect, env: { PROPERTY_HYDRA_PREFIX: 'false' } }),
      startPropertyServer({ dialect }),
    ]);
    [user4, user3] = await Promise.all([v4.createAccount('user'), v3.createAccount('user')]);
  });
  afterAll(async () => {
    await Promise.all([v4?.close(), v3?.close()]);
  });

  it('a POST with a blank required field: 422 ConstraintViolation (4.x), 400 ConstraintViolationList (3.x)', async () => {
    const body = immobilieBody({ adresse: '' });
    const res = await api(v4.url, '/api/immobilies', { method: 'POST', key: user4.key, body });
    expect(res.status).toBe(422);
    expect(res.headers.get('content-type')).toBe(PROBLEM);
    expect(res.body).toEqual({
      '@context': '/api/contexts/ConstraintViolation',
      '@id': `/api/validation_errors/${NOT_BLANK}`,
      '@type': 'ConstraintViolation',
      status: 422,
      violations: [{ propertyPath: 'adresse', message: 'This value should not be blank.', code: NOT_BLANK }],
      detail: 'adresse: This value should not be blank.',
      description: 'adresse: This value should not be blank.',
      title: 'An error occurred',
      type: `/validation_errors/${NOT_BLANK}`,
    });
    const legacy = await api(v3.url, '/api/immobilies', { method: 'POST', key: user3.key, body });
    expect(legacy.status).toBe(400);
    expect((legacy.body as Record<string, unknown>)['@type']).toBe('ConstraintViolationList');
  });

  it('plain JSON asked for: problem+json with the same violations, without JSON-LD keys', async () => {
    const res = await api(v4.url, '/api/immobilies', {
      method: 'POST',
      key: user4.key,
      body: immobilieBody({ zimmer: 'drei' as never, adresse: '' }),
      accept: 'application/json',
    });
    expect(res.status).toBe(422);
    expect(res.headers.get('content-type')).toBe(PROBLEM);
    const body = res.body as Record<string, unknown>;
    expect(Object.keys(body).filter((k) => k.startsWith('@'))).toEqual([]);
    expect(body).toMatchObject({ status: 422, title: 'An error occurred' });
    expect((body.violations as { propertyPath: string }[]).map((v) => v.propertyPath).sort()).toEqual([
      'adresse',
      'zimmer',
    ]);
    expect(body.type).toMatch(/^\/validation_errors\//);
  });

  it('PATCH, PUT and the calculator answer 422 too; a body that is no JSON and a bad filter stay 400', async () => {
    const item = await createImmobilie(v4.url, user4.key);
    const patch = await api(v4.url, `/api/immobilies/${item.id}`, {
      method: 'PATCH',
      key: user4.key,
      body: { kaufpreis: -1 },
    });
    expect(patch.status).toBe(422);
    const put = await api(v4.url, `/api/immobilies/${item.id}`, { method: 'PUT', key: user4.key, body: {} });
    expect(put.status).toBe(422);
    const calc = await api(v4.url, '/api/finanzierungsrechners', {
      method: 'POST',
      key: user4.key,
      body: { kaufpreis: 100, eigenkapital: 1, zinssatz: 3, zinsbindungJahre: 10 },
    });
    expect(calc.status).toBe(422);
    expect((calc.body as { violations: { propertyPath: string }[] }).violations[0]?.propertyPath).toBe('tilgungssatz');

    const syntax = await api(v4.url, '/api/immobilies', {
      method: 'POST',
      key: user4.key,
      body: '{"adresse":',
    });
    expect(syntax.status).toBe(400);
    const filter = await api(v4.url, '/api/immobilies?typ=castle', { key: user4.key });
    expect(filter.status).toBe(400);
    expect((filter.body as { status: number }).status).toBe(400);
  });

  it('the OpenAPI document lists 422 for writes in the 4.x wire and only 400 in the 3.x wire', async () => {
    const doc4 = (await api(v4.url, '/api/docs.json')).body as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
    };
    const doc3 = (await api(v3.url, '/api/docs.json')).body as typeof doc4;
    for (const [path, method] of [
      ['/api/immobilies', 'post'],
      ['/api/immobilies/{id}', 'patch'],
      ['/api/finanzierungsrechners', 'post'],
    ] as const) {
      expect(Object.keys(doc4.paths[path]?.[method]?.responses ?? {}), `${method} ${path}`).toContain('422');
      expect(Object.keys(doc3.paths[path]?.[method]?.responses ?? {}), `${method} ${path}`).not.toContain('422');
    }
  });
});
