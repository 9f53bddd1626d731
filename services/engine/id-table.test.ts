import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HOT_WORDS, INLINE_KEY_CHARS, IdTable } from './id-table.js';
import { MAX_PROBE, capacityFor, hashId, homeSlot } from './probing.js';

/** Keys that exercise every comparison path: short, inline limit, too long, above U+00FE. */
const keyArb = fc.oneof(
  fc.constantFrom('a', 'b', 'ab', 'ba', '', 'resource_1', 'resource_10', 'ÿ', 'Ā', 'x'.repeat(INLINE_KEY_CHARS), 'x'.repeat(INLINE_KEY_CHARS + 1)),
  fc.string({ maxLength: 70 }),
  fc.integer({ min: 0, max: 300 }).map((n) => `resource_${n}`),
);

type Op = { op: 'set'; key: string; value: number } | { op: 'delete'; key: string } | { op: 'words'; key: string; w0: number; w1: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant('set' as const), key: keyArb, value: fc.integer() }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('delete' as const), key: keyArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('words' as const), key: keyArb, w0: fc.integer(), w1: fc.integer() }) },
);

describe('IdTable', () => {
  it('behaves like a Map (with hot words) under any sequence of writes', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 400 }), fc.integer(), (ops, seed) => {
        const table = new IdTable<number>(16, seed);
        const model = new Map<string, { value: number; words: number[] }>();
        for (const o of ops) {
          if (o.op === 'set') {
            table.set(o.key, o.value);
            const prev = model.get(o.key);
            model.set(o.key, { value: o.value, words: prev ? prev.words : new Array<number>(HOT_WORDS).fill(0) });
          } else if (o.op === 'delete') {
            expect(table.delete(o.key)).toBe(model.delete(o.key));
          } else if (model.has(o.key)) {
            table.setWords(o.key, o.w0, o.w1);
            model.get(o.key)!.words = [o.w0, o.w1];
          }
          expect(table.size).toBe(model.size);
        }
        for (const [k, { value, words }] of model) {
          const slot = table.slotOf(k);
          expect(slot).toBeGreaterThanOrEqual(0);
          expect(table.valueAt(slot)).toBe(value);
          for (let w = 0; w < HOT_WORDS; w++) expect(table.word(slot, w)).toBe(words[w] | 0);
        }
        for (const o of ops) if (!model.has(o.key)) expect(table.get(o.key)).toBeUndefined();
        expect(new Map(table.entries())).toEqual(new Map([...model].map(([k, v]) => [k, v.value])));
      }),
      { numRuns: 300 },
    );
  });

  it('behaves like a Map when values hold their keys (keyOf, no key array), through growth, deletes and reseeds', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 400 }), fc.integer(), (ops, seed) => {
        type Entry = { key: string; value: number };
        const table = new IdTable<Entry>(16, seed, { keyOf: (e) => e.key });
        const model = new Map<string, number>();
        for (const o of ops) {
          if (o.op === 'set') {
            // A value's key never changes: a new value per set.
            table.set(o.key, { key: o.key, value: o.value });
            model.set(o.key, o.value);
          } else if (o.op === 'delete') expect(table.delete(o.key)).toBe(model.delete(o.key));
          expect(table.size).toBe(model.size);
        }
        for (const [k, value] of model) expect(table.get(k)?.value).toBe(value);
        for (const o of ops) if (!model.has(o.key)) expect(table.get(o.key)).toBeUndefined();
        expect(new Map([...table.entries()].map(([k, e]) => [k, e.value]))).toEqual(model);
      }),
      { numRuns: 300 },
    );
  });

  /** Two keys `prefix + n` of one length whose hashes under `seed` are equal (birthday search). */
  function collidingPair(seed: number, prefix: string): [string, string] {
    const seen = new Map<number, string>();
    for (let n = 1_000_000; ; n++) {
      const k = prefix + n;
      const h = hashId(k, seed);
      const other = seen.get(h);
      if (other !== undefined) return [other, k];
      seen.set(h, k);
    }
  }

  it('tells apart different keys of one length and one hash, inline and out of line', () => {
    for (const prefix of ['resource_', 'x'.repeat(INLINE_KEY_CHARS)]) {
      const [a, b] = collidingPair(7, prefix);
      expect([a.length, hashId(a, 7)]).toEqual([b.length, hashId(b, 7)]);
      const t = new IdTable<string>(16, 7);
      t.set(a, 'a');
      expect(t.get(b)).toBeUndefined();
      t.set(b, 'b');
      expect([t.get(a), t.get(b), t.size]).toEqual(['a', 'b', 2]);
      t.delete(a);
      expect([t.get(a), t.get(b)]).toEqual([undefined, 'b']);
    }
  });

  it('compares characters above U+00FE as strings', () => {
    const t = new IdTable<string>(16, 7);
    for (const k of ['Āb', 'Āc', 'ÿ']) t.set(k, k);
    for (const k of ['Āb', 'Āc', 'ÿ']) expect(t.get(k)).toBe(k);
    expect(t.get('Ād')).toBeUndefined();
  });

  it('rehashes with a new seed when keys pile up in one probe run, and stays correct', () => {
    // Keys chosen to share a home slot under the table's seed (what an attacker who knew the
    // seed would send): the run passes MAX_PROBE, the table reseeds and the pile-up is gone.
    const seed = 12345;
    const capacity = 4096;
    const t = new IdTable<number>(capacity * 0.7, seed);
    const slots = capacityFor(capacity * 0.7);
    expect(t.capacity).toBe(slots);
    const colliding: string[] = [];
    for (let n = 0; colliding.length < MAX_PROBE + 10; n++) {
      const k = `resource_${n}`;
      if (homeSlot(hashId(k, seed), slots) === slots - 1) colliding.push(k);
    }
    colliding.forEach((k, i) => t.set(k, i));
    expect(t.reseeds).toBeGreaterThanOrEqual(1);
    colliding.forEach((k, i) => expect(t.get(k)).toBe(i));
    expect(t.size).toBe(colliding.length);
  });

  it('holds the same entries and hot words whatever size it was made for (too small, right, too large)', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 400 }), fc.integer(), fc.constantFrom(0, 1, 13, 16, 100, 101, 300, 5000), (ops, seed, size) => {
        const grown = new IdTable<number>(16, seed);
        const sized = new IdTable<number>(size, seed);
        for (const o of ops) {
          for (const t of [grown, sized]) {
            if (o.op === 'set') t.set(o.key, o.value);
            else if (o.op === 'delete') t.delete(o.key);
            else if (t.get(o.key) !== undefined) t.setWords(o.key, o.w0, o.w1);
          }
          expect(sized.size).toBe(grown.size);
        }
        const content = (t: IdTable<number>) => new Map([...t.entries()].map(([k, v]) => [k, [v, t.word(t.slotOf(k), 0), t.word(t.slotOf(k), 1)]]));
        expect(content(sized)).toEqual(content(grown));
        for (const o of ops) expect(sized.get(o.key)).toBe(grown.get(o.key));
      }),
      { numRuns: 200 },
    );
  });

  it('keeps hot words and values through growth and deletes', () => {
    const t = new IdTable<number>();
    for (let i = 0; i < 5000; i++) {
      t.set(`k${i}`, i);
      t.setWords(`k${i}`, i * 3, -i);
    }
    for (let i = 0; i < 5000; i += 2) t.delete(`k${i}`);
    for (let i = 1; i < 5000; i += 2) {
      const s = t.slotOf(`k${i}`);
      expect([t.valueAt(s), t.word(s, 0), t.word(s, 1)]).toEqual([i, i * 3, -i]);
    }
    expect(t.size).toBe(2500);
    expect(t.slotOf('k0')).toBe(-1);
  });
  it('behaves like a Map when values are found by number (numOf/byNum, no value array), through growth, deletes and reseeds', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 400 }), fc.integer(), fc.constantFrom(0, 7, 100), (ops, seed, size) => {
        type Entry = { key: string; num: number; value: number };
        // The caller's array by number; numbers are reused after deletes, as ResourceNodes does.
        const byNum: (Entry | undefined)[] = [];
        const free: number[] = [];
        const table = new IdTable<Entry>(size, seed, { keyOf: (e) => e.key, numOf: (e) => e.num, byNum: (n) => byNum[n] as Entry });
        const model = new Map<string, number>();
        for (const o of ops) {
          if (o.op === 'set') {
            const old = table.get(o.key);
            if (old !== undefined) old.value = o.value;
            else {
              const e = { key: o.key, num: free.pop() ?? byNum.length, value: o.value };
              byNum[e.num] = e;
              table.set(o.key, e);
            }
            model.set(o.key, o.value);
          } else if (o.op === 'delete') {
            const old = table.get(o.key);
            expect(table.delete(o.key)).toBe(model.delete(o.key));
            if (old !== undefined) {
              byNum[old.num] = undefined;
              free.push(old.num);
            }
          } else if (model.has(o.key)) table.setWords(o.key, o.w0, o.w1);
          expect(table.size).toBe(model.size);
        }
        for (const [k, value] of model) expect(table.get(k)?.value).toBe(value);
        for (const o of ops) if (!model.has(o.key)) expect(table.get(o.key)).toBeUndefined();
        expect(new Map([...table.entries()].map(([k, e]) => [k, e.value]))).toEqual(model);
      }),
      { numRuns: 300 },
    );
  });

  it('sizes itself to the count asked for (not a power of two) and grows by half when full', () => {
    const t = new IdTable<number>(1000, 3);
    expect(t.capacity).toBe(1334);
    for (let i = 0; i < 1000; i++) t.set(`resource_${i}`, i);
    expect(t.capacity).toBe(1334);
    for (let i = 1000; i < 1001 + 1334 / 4; i++) t.set(`resource_${i}`, i);
    expect(t.capacity).toBe(2001);
    for (let i = 0; i < 1001 + 1334 / 4; i += 3) t.delete(`resource_${i}`);
    for (let i = 0; i < 1001 + 1334 / 4; i++) expect(t.get(`resource_${i}`)).toBe(i % 3 === 0 ? undefined : i);
    expect(() => new IdTable<number>(16, 1, { numOf: () => 0 })).toThrow(/go together/);
  });

  it('wraps probe runs past the last slot, and deletes across the wrap', () => {
    // Keys whose home is one of the last two slots of a 19-slot table: their run wraps to slot 0.
    const seed = 5;
    const t = new IdTable<number>(14, seed);
    expect(t.capacity).toBe(19);
    const cap = t.capacity;
    const keys: string[] = [];
    for (let n = 0; keys.length < 6; n++) if (homeSlot(hashId(`k${n}`, seed), cap) >= cap - 2) keys.push(`k${n}`);
    keys.forEach((k, i) => t.set(k, i));
    expect(keys.map((k) => t.slotOf(k)).filter((s) => s < cap - 2).length).toBeGreaterThanOrEqual(4);
    for (let d = 0; d < keys.length; d++) {
      t.delete(keys[d]);
      keys.forEach((k, i) => expect(t.get(k)).toBe(i <= d ? undefined : i));
    }
    expect(t.size).toBe(0);
  });
});
