import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { HOT_WORDS, INLINE_KEY_CHARS, IdTable } from './id-table.js';
import { PACKED, packId } from './packed-id.js';
import { MAX_PROBE, capacityFor, hashId, hashWords, homeSlot } from './probing.js';

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


type NumberedEntry = { key: string; num: number; value: number };

/**
 * The caller's side of a table whose values are found by number (numOf/byNum): entries in an
 * array by number, numbers reused after deletes, as ResourceNodes keeps them.
 */
class NumberedEntries {
  readonly byNum: (NumberedEntry | undefined)[] = [];
  private readonly free: number[] = [];
  readonly options = { keyOf: (e: NumberedEntry) => e.key, numOf: (e: NumberedEntry) => e.num, byNum: (n: number) => this.byNum[n] as NumberedEntry };

  /** Sets `key` to `value`, numbering a new entry; true when the key was new. */
  set(table: IdTable<NumberedEntry>, key: string, value: number): boolean {
    const old = table.get(key);
    if (old !== undefined) {
      old.value = value;
      return false;
    }
    const e = { key, num: this.free.pop() ?? this.byNum.length, value };
    this.byNum[e.num] = e;
    table.set(key, e);
    return true;
  }

  /** Deletes `key` from the table, freeing its number; what `table.delete` answered. */
  delete(table: IdTable<NumberedEntry>, key: string): boolean {
    const old = table.get(key);
    const deleted = table.delete(key);
    if (old !== undefined) {
      this.byNum[old.num] = undefined;
      this.free.push(old.num);
    }
    return deleted;
  }
}

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
        const entries = new NumberedEntries();
        const table = new IdTable<NumberedEntry>(size, seed, entries.options);
        const model = new Map<string, number>();
        for (const o of ops) {
          if (o.op === 'set') {
            entries.set(table, o.key, o.value);
            model.set(o.key, o.value);
          } else if (o.op === 'delete') {
            expect(entries.delete(table, o.key)).toBe(model.delete(o.key));
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

describe('IdTable, packed layout (packPrefix)', () => {
  const PREFIX = 'resource_';
  const hex = (n: number, digits: number) => (n >>> 0).toString(16).padStart(8, '0').slice(8 - digits);
  /** A canonical lowercase UUID from four words (every digit of each varies with them). */
  const uuid = (a: number, b: number, c: number, d: number) => `${hex(a, 8)}-${hex(b >>> 16, 4)}-${hex(b, 4)}-${hex(c >>> 16, 4)}-${hex(c, 4)}${hex(d, 8)}`;
  /** The packed words of the n-th key that packs: spread over all 32 bits, digits a-f included. */
  const wordsOf = (n: number): [number, number, number, number] => [Math.imul(n + 1, 0x9e3779b1), Math.imul(n + 7, 0x85ebca6b), Math.imul(n + 3, 0xc2b2ae35), Math.imul(n + 5, 0x27d4eb2f)];
  const packing = (n: number) => PREFIX + uuid(...wordsOf(n));

  /** Ids one edit away from packing: each must be kept, found and told apart as any other string. */
  const nearMisses = (id: string): string[] => {
    const u = id.slice(PREFIX.length);
    const letter = u.search(/[a-f]/);
    return [
      PREFIX + u.toUpperCase(), // capitals
      letter >= 0 ? PREFIX + u.slice(0, letter) + u[letter].toUpperCase() + u.slice(letter + 1) : PREFIX + 'A' + u.slice(1), // one capital
      'resourcf_' + u, // wrong prefix, same length
      'Resource_' + u,
      'subject_' + u,
      u, // no prefix
      id.slice(0, -1), // too short
      id + '0', // too long
      PREFIX + u.slice(0, 7) + '-' + u[7] + u.slice(9), // dash one place early
      PREFIX + u.slice(0, 8) + u[9] + '-' + u.slice(10), // dash one place late
      PREFIX + u.replace(/-/g, '_'), // not dashes
      PREFIX + u.slice(0, 35) + 'g', // not a hex digit
      PREFIX + '{' + u.slice(1), // just past the digits
      PREFIX + u.replace(/-/g, '') + '0000', // right length, no dashes
      'resource_my-doc',
      '',
    ];
  };

  it('packs exactly the prefix and a canonical lowercase UUID', () => {
    for (let n = 0; n < 100; n++) {
      expect(packId(packing(n), PREFIX)).toBe(true);
      expect([...PACKED]).toEqual(wordsOf(n).map((w) => w | 0));
    }
    const t = new IdTable<number>(16, 1, { packPrefix: PREFIX });
    t.set(packing(1), 1);
    expect(t.packed).toBe(true);
    // A key that does not pack is absent without a probe (a trip to DRAM on a large table).
    const probes = vi.spyOn(t as unknown as { findPacked(h: number): number }, 'findPacked');
    expect([t.get('resource_my-doc'), t.get(packing(1).toUpperCase()), t.slotOf('x')]).toEqual([undefined, undefined, -1]);
    expect(probes).not.toHaveBeenCalled();
    expect(t.get(packing(1))).toBe(1);
    expect(probes).toHaveBeenCalledTimes(1);
    probes.mockRestore();
    for (const miss of nearMisses(packing(1))) {
      expect(t.get(miss)).toBeUndefined();
      // A lookup or delete of a key that does not pack leaves the layout alone.
      expect(t.delete(miss)).toBe(false);
      expect(t.packed).toBe(true);
      const u = new IdTable<number>(16, 1, { packPrefix: PREFIX });
      u.set(packing(1), 1);
      u.set(miss, 2);
      expect([u.packed, u.get(miss), u.get(packing(1)), u.size]).toEqual([false, 2, 1, 2]);
    }
  });

  it('takes 32-byte slots while every key packs, 64 after the first that does not', () => {
    const t = new IdTable<number>(1000, 3, { packPrefix: PREFIX });
    // No layout before the first key: a small wide table, the capacity it was made for still due.
    expect([t.packed, t.capacity]).toEqual([false, 1334]);
    for (let i = 0; i < 900; i++) t.set(packing(i), i);
    expect([t.packed, t.byteLength]).toEqual([true, 1334 * 32]);
    t.set('resource_my-doc', -1);
    expect([t.packed, t.capacity, t.byteLength]).toEqual([false, 1334, 1334 * 64]);
    // And stays wide once every such key is gone.
    t.delete('resource_my-doc');
    t.set(packing(2000), 2000);
    expect(t.packed).toBe(false);
    expect(new IdTable<number>(1000, 3).byteLength).toBe(1334 * 64);
  });

  it('is wide from the start when its first key does not pack, and never packs', () => {
    const t = new IdTable<number>(1000, 3, { packPrefix: PREFIX });
    expect(t.get(packing(1))).toBeUndefined();
    t.set('resource_my-doc', -1);
    expect([t.packed, t.capacity, t.byteLength]).toEqual([false, 1334, 1334 * 64]);
    for (let i = 0; i < 900; i++) t.set(packing(i), i);
    expect([t.packed, t.size, t.get('resource_my-doc'), t.get(packing(899))]).toEqual([false, 901, -1, 899]);
    // Emptied and filled again: the layout stays what the first key chose.
    t.delete('resource_my-doc');
    for (let i = 0; i < 900; i++) t.delete(packing(i));
    t.set(packing(5), 5);
    expect([t.packed, t.get(packing(5))]).toEqual([false, 5]);
  });

  /** Packing keys from a small pool (so sets, deletes and lookups meet), now and then one that does not pack. */
  const packedKeyArb = fc.oneof(
    { weight: 12, arbitrary: fc.integer({ min: 0, max: 200 }).map(packing) },
    { weight: 2, arbitrary: fc.uuid().map((u) => PREFIX + u) },
    { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 0, max: 200 }), fc.nat()).map(([n, k]) => { const m = nearMisses(packing(n)); return m[k % m.length]; }) },
  );
  const opsOf = (key: fc.Arbitrary<string>): fc.Arbitrary<Op> =>
    fc.oneof(
      { weight: 5, arbitrary: fc.record({ op: fc.constant('set' as const), key, value: fc.integer() }) },
      { weight: 3, arbitrary: fc.record({ op: fc.constant('delete' as const), key }) },
      { weight: 2, arbitrary: fc.record({ op: fc.constant('words' as const), key, w0: fc.integer(), w1: fc.integer() }) },
    );
  /** Writes of packing keys only (lookups and deletes now and then of one that does not), then of any key. */
  const packedOpsArb = fc
    .tuple(fc.array(opsOf(packedKeyArb).filter((o) => o.op !== 'set' || packId(o.key, PREFIX)), { maxLength: 300 }), fc.array(opsOf(packedKeyArb), { maxLength: 300 }))
    .map(([packedPhase, anyPhase]) => [...packedPhase, ...anyPhase]);

  it('behaves like a Map (values by number, hot words) in either layout and through the switch, growth, deletes and reseeds', () => {
    fc.assert(
      fc.property(packedOpsArb, fc.integer(), fc.constantFrom(0, 7, 100), fc.boolean(), (ops, seed, size, numbered) => {
        const entries = new NumberedEntries();
        const table = new IdTable<NumberedEntry>(size, seed, numbered ? { packPrefix: PREFIX, ...entries.options } : { packPrefix: PREFIX });
        const model = new Map<string, { value: number; words: number[] }>();
        let widened = false;
        let inserted = false;
        for (const o of ops) {
          if (o.op === 'set') {
            if (entries.set(table, o.key, o.value)) {
              widened ||= !packId(o.key, PREFIX);
              inserted = true;
            }
            model.set(o.key, { value: o.value, words: model.get(o.key)?.words ?? [0, 0] });
          } else if (o.op === 'delete') {
            expect(entries.delete(table, o.key)).toBe(model.delete(o.key));
          } else if (model.has(o.key)) {
            table.setWords(o.key, o.w0, o.w1);
            model.get(o.key)!.words = [o.w0, o.w1];
          }
          expect(table.size).toBe(model.size);
          // The first key inserted chooses the layout; a key that does not pack widens it for good.
          expect(table.packed).toBe(inserted && !widened);
        }
        for (const [k, { value, words }] of model) {
          const slot = table.slotOf(k);
          expect(slot).toBeGreaterThanOrEqual(0);
          expect(table.valueAt(slot).value).toBe(value);
          expect([table.word(slot, 0), table.word(slot, 1)]).toEqual(words.map((w) => w | 0));
        }
        for (const o of ops) if (!model.has(o.key)) expect(table.get(o.key)).toBeUndefined();
        expect(new Map([...table.entries()].map(([k, e]) => [k, e.value]))).toEqual(new Map([...model].map(([k, v]) => [k, v.value])));
      }),
      { numRuns: 300 },
    );
  });

  it('keeps values, numbers and hot words through the switch, then agrees with a Map through growth and deletes', () => {
    type Entry = { key: string; num: number };
    const byNum: (Entry | undefined)[] = [];
    const t = new IdTable<Entry>(100, 11, { packPrefix: PREFIX, keyOf: (e) => e.key, numOf: (e) => e.num, byNum: (n) => byNum[n] as Entry });
    const model = new Map<string, [number, number, number]>();
    const add = (key: string, num: number) => {
      byNum[num] = { key, num };
      t.set(key, byNum[num] as Entry);
      t.setWords(key, num * 3, ~num);
      model.set(key, [num, num * 3, ~num]);
    };
    const drop = (key: string) => {
      expect(t.delete(key)).toBe(model.delete(key));
    };
    const agrees = () => {
      expect(t.size).toBe(model.size);
      for (const [k, v] of model) {
        const s = t.slotOf(k);
        expect([t.valueAt(s).num, t.word(s, 0), t.word(s, 1)]).toEqual(v);
      }
      expect(new Set([...t.entries()].map(([k]) => k))).toEqual(new Set(model.keys()));
    };
    for (let i = 0; i < 500; i++) add(packing(i), i);
    for (let i = 0; i < 500; i += 3) drop(packing(i));
    expect(t.packed).toBe(true);
    agrees();
    const capacity = t.capacity;
    add(PREFIX + packing(9).slice(PREFIX.length).toUpperCase(), 500);
    expect([t.packed, t.capacity]).toEqual([false, capacity]);
    agrees();
    for (let i = 501; i < 3000; i++) add(i % 2 ? packing(i) : `resource_doc-${i}`, i);
    for (let i = 0; i < 3000; i += 5) drop(i % 2 ? packing(i) : `resource_doc-${i}`);
    expect(t.capacity).toBeGreaterThan(capacity);
    agrees();
    for (let i = 0; i < 3000; i++) if (!model.has(packing(i))) expect(t.get(packing(i))).toBeUndefined();
  });

  it('switches and grows in one rebuild when the key that does not pack fills it', () => {
    const t = new IdTable<number>(12, 2, { packPrefix: PREFIX });
    expect(t.capacity).toBe(16);
    for (let i = 0; i < 12; i++) t.set(packing(i), i);
    t.set('x', 12);
    expect([t.packed, t.capacity]).toEqual([false, 24]);
    for (let i = 0; i < 12; i++) expect(t.get(packing(i))).toBe(i);
    expect(t.get('x')).toBe(12);
  });

  it('tells apart packed keys of one hash', () => {
    // Keys that differ in their last two words, two with one hash (birthday search; keys that
    // differ in one word only never share a hash: each FNV step is a bijection).
    const seed = 7;
    const key = (n: number) => PREFIX + uuid(0x0192f3a4, 0x7abc8def, n, ~n);
    const seen = new Map<number, number>();
    let pair: [number, number] | undefined;
    for (let n = 0; !pair; n++) {
      const h = hashWords(0x0192f3a4, 0x7abc8def, n, ~n, seed);
      const other = seen.get(h);
      if (other !== undefined) pair = [other, n];
      else seen.set(h, n);
    }
    const [a, b] = pair.map(key);
    const t = new IdTable<string>(16, seed, { packPrefix: PREFIX });
    t.set(a, 'a');
    expect(t.get(b)).toBeUndefined();
    t.set(b, 'b');
    expect([t.packed, t.get(a), t.get(b), t.size]).toEqual([true, 'a', 'b', 2]);
    t.delete(a);
    expect([t.get(a), t.get(b)]).toEqual([undefined, 'b']);
  });

  it('rehashes with a new seed in the packed layout when keys pile up in one probe run, keeping hot words and numbers', () => {
    const seed = 12345;
    const type = { packPrefix: PREFIX, keyOf: (e: { key: string; num: number }) => e.key, numOf: (e: { key: string; num: number }) => e.num, byNum: (n: number) => byNum[n] };
    const byNum: { key: string; num: number }[] = [];
    const t = new IdTable<{ key: string; num: number }>(4096 * 0.7, seed, type);
    const slots = t.capacity;
    const colliding: string[] = [];
    for (let n = 0; colliding.length < MAX_PROBE + 10; n++) if (homeSlot(hashWords(...wordsOf(n), seed), slots) === slots - 1) colliding.push(packing(n));
    for (const k of colliding) expect(packId(k, PREFIX)).toBe(true);
    colliding.forEach((key, num) => {
      byNum[num] = { key, num };
      t.set(key, byNum[num]);
      t.setWords(key, num, ~num);
    });
    expect(t.reseeds).toBeGreaterThanOrEqual(1);
    expect([t.packed, t.capacity, t.size]).toEqual([true, slots, colliding.length]);
    colliding.forEach((k, num) => {
      const s = t.slotOf(k);
      expect([t.valueAt(s).num, t.word(s, 0), t.word(s, 1)]).toEqual([num, num, ~num]);
    });
    // A switch after the reseed keeps them too.
    t.set('resource_my-doc', (byNum[colliding.length] = { key: 'resource_my-doc', num: colliding.length }));
    expect(t.packed).toBe(false);
    colliding.forEach((k, num) => expect(t.get(k)?.num).toBe(num));
  });

  it('answers from the memo of the last key in either layout, and forgets it when slots move', () => {
    const t = new IdTable<number>(16, 9, { packPrefix: PREFIX });
    const miss = 'resource_my-doc';
    expect(t.slotOf(miss)).toBe(-1);
    expect(t.slotOf(miss)).toBe(-1);
    for (let i = 0; i < 40; i++) {
      expect(t.get(packing(i))).toBeUndefined();
      t.set(packing(i), i);
      expect(t.get(packing(i))).toBe(i);
    }
    // Looked up as absent in the packed layout, then inserted: the memo's "absent" must not outlive the switch.
    expect(t.get(miss)).toBeUndefined();
    t.set(miss, -1);
    expect([t.get(miss), t.get(packing(0))]).toEqual([-1, 0]);
    t.delete(packing(0));
    expect([t.get(packing(0)), t.get(miss)]).toEqual([undefined, -1]);
  });
});
