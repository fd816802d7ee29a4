import { writeFileSync } from 'node:fs';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { setInterval } from 'node:timers';

/**
 * Loaded into a measured server with `node --import` (bench/bigsend-run.mjs): the event loop's
 * delay, as Node's own histogram samples it (a timer every RESOLUTION_MS ms, how much later than
 * that it fired), and every stall of STALL_MS or more (a timer of its own that came that late).
 * On SIGUSR2 it writes what it saw since the last signal to BENCH_LOOP_DELAY_FILE (`seq` counts
 * the reports, so that the bench knows a new one arrived) and starts again: the bench signals
 * before and after each phase. Delays in ms.
 */
const RESOLUTION_MS = 5;
const STALL_MS = 10;
const file = process.env.BENCH_LOOP_DELAY_FILE;
if (file) {
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();
  let stalls = [];
  let last = performance.now();
  setInterval(() => {
    const now = performance.now();
    const late = now - last - RESOLUTION_MS;
    if (late >= STALL_MS) stalls.push(late);
    last = now;
  }, RESOLUTION_MS).unref();
  let seq = 0;
  // The histogram's values are the timer's whole interval; the delay is what exceeds it.
  const ms = (ns) => Math.max(0, Math.round(ns / 1e4) / 100 - RESOLUTION_MS);
  process.on('SIGUSR2', () => {
    stalls.sort((a, b) => b - a);
    writeFileSync(
      file,
      JSON.stringify({
        seq: ++seq,
        p50: ms(histogram.percentile(50)),
        p99: ms(histogram.percentile(99)),
        max: ms(histogram.max),
        stalls: stalls.length,
        stalledMs: Math.round(stalls.reduce((a, b) => a + b, 0)),
        longest: stalls.slice(0, 5).map(Math.round),
      }),
    );
    histogram.reset();
    stalls = [];
  });
}
