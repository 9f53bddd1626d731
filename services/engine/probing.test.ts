import { describe, expect, it } from 'vitest';
import { MIN_CAPACITY, capacityFor, freeSlot, grownCapacity, homeSlot, mayShiftBack, needsReseed, nextShift, overfull, probeDistance, MAX_PROBE } from './probing.js';

/** A table of `capacity` slots of `stride` words with entries `[slot, hash]` (hash in word 0). */
function table(capacity: number, stride: number, entries: [number, number][]): Int32Array {
  const words = new Int32Array(capacity * stride);
  for (const [slot, h] of entries) words[slot * stride] = h;
  return words;
}

describe('probing', () => {
  it('sizes a table to its count, at most 3/4 full, and grows it by half', () => {
    expect([0, 1, 12, 13, 24, 25, 768, 769, 1_000_000].map(capacityFor)).toEqual([MIN_CAPACITY, 16, 16, 18, 32, 34, 1024, 1026, 1_333_334]);
    for (const n of [13, 25, 769, 1_000_000]) expect([overfull(n, capacityFor(n)), overfull(n + 1, capacityFor(n) - 1)]).toEqual([false, true]);
    expect([overfull(12, 16), overfull(13, 16)]).toEqual([false, true]);
    expect([grownCapacity(16), grownCapacity(17), grownCapacity(1_333_334)]).toEqual([24, 26, 2_000_001]);
  });

  it('maps a hash to a slot by its high bits, below the capacity, for any capacity', () => {
    for (const cap of [16, 17, 1000, 1_333_334, 2 ** 21, 2 ** 21 + 1, 2 ** 26 + 3]) {
      expect(homeSlot(0, cap)).toBe(0);
      expect(homeSlot(-1, cap)).toBe(cap - 1);
      expect(homeSlot(0x80000000 | 0, cap)).toBe(Math.floor(cap / 2));
      for (const h of [1, 0x7fffffff, -2, 0x12345678, -0x12345678]) {
        const s = homeSlot(h, cap);
        expect(s >= 0 && s < cap && Number.isInteger(s)).toBe(true);
      }
    }
  });

  it('reseeds only past MAX_PROBE, and at most once per size/2 inserts', () => {
    expect(needsReseed(MAX_PROBE, 100, 100)).toBe(false);
    expect(needsReseed(MAX_PROBE + 1, 50, 100)).toBe(true);
    expect(needsReseed(MAX_PROBE + 1, 49, 100)).toBe(false);
  });

  /** A hash whose home slot in a table of `cap` slots is `slot` (the lowest such). */
  const hashAt = (slot: number, cap: number): number => (Math.ceil((slot * 2 ** 32) / cap) | 0) || 1;

  it('finds the first free slot of a run, wrapping around, and its distance from home', () => {
    for (const [cap, stride] of [[8, 2], [8, 16], [11, 2], [11, 16]]) {
      const last = cap - 1;
      expect([hashAt(last - 1, cap), hashAt(last, cap), hashAt(3, cap)].map((h) => homeSlot(h, cap))).toEqual([last - 1, last, 3]);
      const words = table(cap, stride, [[last - 1, hashAt(last - 1, cap)], [last, hashAt(last - 1, cap)], [0, hashAt(last, cap)]]);
      expect(freeSlot(words, stride, cap, hashAt(last - 1, cap))).toBe(1);
      expect(probeDistance(1, hashAt(last - 1, cap), cap)).toBe(3);
      expect(freeSlot(words, stride, cap, hashAt(3, cap))).toBe(3);
      expect(probeDistance(3, hashAt(3, cap), cap)).toBe(0);
    }
  });

  it('shifts back only entries whose home is not between the hole and them', () => {
    for (const cap of [8, 13]) {
      const at = (slot: number) => hashAt(slot, cap);
      // Slot 2: hole. Slot 3 is home (3), slot 4 homes at 2, slot 5 homes at 1; slot 6 is free.
      const words = table(cap, 2, [[3, at(3)], [4, at(2)], [5, at(1)]]);
      expect(nextShift(words, 2, cap, 2)).toBe(4);
      // After moving 4 into 2, the hole is 4: slot 5 (home 1) may move, slot 3 stays.
      expect(nextShift(words, 2, cap, 4)).toBe(5);
      expect(nextShift(words, 2, cap, 5)).toBe(-1);
      // Wrapping: hole at the last slot, entry at 0 whose home is the one before moves; one whose home is 0 does not.
      expect(nextShift(table(cap, 16, [[0, at(cap - 2)]]), 16, cap, cap - 1)).toBe(0);
      expect(nextShift(table(cap, 16, [[0, at(0)]]), 16, cap, cap - 1)).toBe(-1);
    }
    expect([mayShiftBack(2, 4, 3), mayShiftBack(2, 4, 2), mayShiftBack(7, 1, 0), mayShiftBack(7, 1, 6)]).toEqual([false, true, false, true]);
  });
});
