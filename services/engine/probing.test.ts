import { describe, expect, it } from 'vitest';
import { MIN_CAPACITY, capacityFor, freeSlot, mayShiftBack, needsReseed, nextShift, overfull, probeDistance, MAX_PROBE } from './probing.js';

/** A table of `capacity` slots of `stride` words with entries `[slot, hash]` (hash in word 0). */
function table(capacity: number, stride: number, entries: [number, number][]): Int32Array {
  const words = new Int32Array(capacity * stride);
  for (const [slot, h] of entries) words[slot * stride] = h;
  return words;
}

describe('probing', () => {
  it('sizes a table to a power of two at most 3/4 full', () => {
    expect([0, 1, 12, 13, 24, 25, 768, 769].map(capacityFor)).toEqual([MIN_CAPACITY, 16, 16, 32, 32, 64, 1024, 2048]);
    expect([overfull(12, 16), overfull(13, 16)]).toEqual([false, true]);
  });

  it('reseeds only past MAX_PROBE, and at most once per size/2 inserts', () => {
    expect(needsReseed(MAX_PROBE, 100, 100)).toBe(false);
    expect(needsReseed(MAX_PROBE + 1, 50, 100)).toBe(true);
    expect(needsReseed(MAX_PROBE + 1, 49, 100)).toBe(false);
  });

  it('finds the first free slot of a run, wrapping around, and its distance from home', () => {
    for (const stride of [2, 16]) {
      const words = table(8, stride, [[6, 6], [7, 14], [0, 22]]);
      expect(freeSlot(words, stride, 7, 6)).toBe(1);
      expect(probeDistance(1, 6, 7)).toBe(3);
      expect(freeSlot(words, stride, 7, 3)).toBe(3);
      expect(probeDistance(3, 3, 7)).toBe(0);
    }
  });

  it('shifts back only entries whose home is not between the hole and them', () => {
    // Slot 2: hole. Slot 3 is home (3), slot 4 homes at 2, slot 5 homes at 1; slot 6 is free.
    const words = table(8, 2, [[3, 3], [4, 2 + 8], [5, 1 + 16]]);
    expect(nextShift(words, 2, 7, 2)).toBe(4);
    // After moving 4 into 2, the hole is 4: slot 5 (home 1) may move, slot 3 stays.
    expect(nextShift(words, 2, 7, 4)).toBe(5);
    expect(nextShift(words, 2, 7, 5)).toBe(-1);
    // Wrapping: hole at 7, entry at 0 whose home is 6 moves; one whose home is 0 does not.
    expect(nextShift(table(8, 16, [[0, 6]]), 16, 7, 7)).toBe(0);
    expect(nextShift(table(8, 16, [[0, 8]]), 16, 7, 7)).toBe(-1);
    expect([mayShiftBack(2, 4, 3), mayShiftBack(2, 4, 2), mayShiftBack(7, 1, 0), mayShiftBack(7, 1, 6)]).toEqual([false, true, false, true]);
  });
});
