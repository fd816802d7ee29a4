import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { RouteHistogram } from './route-histogram.js';

describe('RouteHistogram', () => {
  it('renders cumulative buckets, +Inf, sum and count in the Prometheus text format', async () => {
    const registry = new Registry();
    const h = new RouteHistogram('req_seconds', 'Request time', [0.1, 1], registry);
    const get = h.series('GET /a 200', () => ({ method: 'GET', route: '/a', status_code: '200' }));
    if (!get) throw new Error('no series');
    for (const s of [0.05, 0.1, 0.5, 3]) h.observe(get, s);
    const text = await registry.metrics();
    expect(text).toContain('# TYPE req_seconds histogram');
    expect(text).toContain('req_seconds_bucket{le="0.1",method="GET",route="/a",status_code="200"} 2');
    expect(text).toContain('req_seconds_bucket{le="1",method="GET",route="/a",status_code="200"} 3');
    expect(text).toContain('req_seconds_bucket{le="+Inf",method="GET",route="/a",status_code="200"} 4');
    expect(text).toContain('req_seconds_sum{method="GET",route="/a",status_code="200"} 3.65');
    expect(text).toContain('req_seconds_count{method="GET",route="/a",status_code="200"} 4');
  });

  it('reuses the series of a key and stops creating series at its bound', () => {
    const h = new RouteHistogram('bounded_seconds', 'x', [1], new Registry(), 2);
    const a = h.series('a', () => ({ k: 'a' }));
    expect(h.series('a', () => ({ k: 'other' }))).toBe(a);
    expect(h.series('b', () => ({ k: 'b' }))).toBeDefined();
    expect(h.series('c', () => ({ k: 'c' }))).toBeUndefined();
  });
});
