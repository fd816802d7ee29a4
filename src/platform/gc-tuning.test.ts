import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const MODULE = fileURLToPath(new URL('./gc-tuning.ts', import.meta.url));

/**
 * A process that keeps most of what one object literal makes (as a cache would), with V8 tracing
 * its pretenuring decisions: how many times it decided to tenure a site (or to tenure it if that holds).
 */
function tenureDecisions(withTuning: boolean): number {
  const workload = [
    withTuning ? `await import(${JSON.stringify(MODULE)});` : '',
    'const keep = [];',
    'const make = (i) => ({ i, s: "x" });',
    'for (let r = 0; r < 1e6; r++) { keep.push(make(r)); if (keep.length > 100000) keep.length = 0; }',
  ].join('\n');
  const out = execFileSync(
    process.execPath,
    ['--import', 'tsx', '--trace-pretenuring-statistics', '--input-type=module', '-e', workload],
    { encoding: 'utf8', timeout: 30_000, maxBuffer: 64 * 1024 * 1024 },
  );
  return out.split('\n').filter((line) => /=> (maybe )?tenure/.test(line)).length;
}

describe('gc-tuning', () => {
  it('turns off allocation-site pretenuring for the process that imports it', { timeout: 90_000 }, () => {
    // Without the module, V8 makes tenure decisions in the same process (the workload's or tsx's own):
    // the trace would show one.
    expect(tenureDecisions(false)).toBeGreaterThan(0);
    expect(tenureDecisions(true)).toBe(0);
  });
});
