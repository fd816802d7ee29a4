import { describe, expect, it } from 'vitest';
import { closeInOrder } from './close-in-order.js';

describe('closeInOrder', () => {
  it('runs the steps one after another and names, once, a step still running after the warning time', async () => {
    const order: string[] = [];
    const slow: [string, number][] = [];
    await closeInOrder(
      [
        ['fast', () => void order.push('fast')],
        ['stuck', () => new Promise((r) => setTimeout(() => r(order.push('stuck')), 120))],
        ['last', async () => void order.push('last')],
      ],
      (step, waitedMs) => slow.push([step, waitedMs]),
      30,
    );
    expect(order).toEqual(['fast', 'stuck', 'last']);
    expect(slow).toEqual([['stuck', 30]]);
  });

  it('stops at a step that fails, with its error, and names no step that ended in time', async () => {
    const order: string[] = [];
    const slow: string[] = [];
    await expect(
      closeInOrder(
        [
          ['first', () => void order.push('first')],
          [
            'broken',
            async () => {
              throw new Error('pool gone');
            },
          ],
          ['never', () => void order.push('never')],
        ],
        (step) => slow.push(step),
        30,
      ),
    ).rejects.toThrow('pool gone');
    expect(order).toEqual(['first']);
    // The warning timers of the steps that ended are cleared.
    await new Promise((r) => setTimeout(r, 60));
    expect(slow).toEqual([]);
  });
});
