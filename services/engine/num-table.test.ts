import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_PROBE, capacityFor, grownCapacity, hashId, homeSlot } from './probing.js';
import { NumTable, type NumTableOwner } from './num-table.js';

/** An owner as the index is one: entries by number, each holding a set of keys. */
class Owner implements NumTableOwner {
  readonly entries = new Map<number, Set<string>>();
  holdsCalls = 0;
  holds(num: number, key: string): boolean {
    this.holdsCalls++;
    return this.entries.get(num)?.has(key) ?? false;
  }
  eachKey(visit: (key: string, num: number) => void): void {
    for (const [num, keys] of this.entries) for (const k of keys) visit(k, num);
  }
}

const keyArb = fc.oneof(fc.string({ maxLength: 60 }), fc.integer({ min: 0, max: 300 }).map((n) => `grant_${n}`));
type Op = { op: 'put'; key: string; num: number } | { op: 'delete'; key: string } | { op: 'renumber'; key: string; num: number };
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant('put' as const), key: keyArb, num: fc.integer({ min: 0, max: 40 }) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('delete' as const), key: keyArb }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('renumber' as const), key: keyArb, num: fc.integer({ min: 0, max: 40 }) }) },
);

describe('NumTable', () => {
  it('behaves like a Map from keys to numbers under any sequence of writes, several keys per number', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 400 }), fc.integer(), fc.constantFrom(0, 13, 16, 300, 301), (ops, seed, size) => {
        const owner = new Owner();
        const table = new NumTable(owner, size, seed);
        const model = new Map<string, number>();
        const move = (key: string, from: number | undefined, to: number | undefined) => {
          if (from !== undefined) owner.entries.get(from)!.delete(key);
          if (to !== undefined) (owner.entries.get(to) ?? owner.entries.set(to, new Set()).get(to)!).add(key);
        };
        for (const o of ops) {
          const had = model.get(o.key);
          expect(table.get(o.key)).toBe(had ?? -1);
          if (o.op === 'put' && had === undefined) {
            // The owner holds the key before it is added (a reseed may list it).
            move(o.key, undefined, o.num);
            table.add(o.key, o.num);
            model.set(o.key, o.num);
          } else if (o.op === 'delete') {
            expect(table.delete(o.key)).toBe(had !== undefined);
            move(o.key, had, undefined);
            model.delete(o.key);
          } else if (o.op === 'renumber' && had !== undefined) {
            // Renumbered while the owner still holds it under the old number.
            table.renumber(o.key, had, o.num);
            move(o.key, had, o.num);
            model.set(o.key, o.num);
          }
          expect(table.size).toBe(model.size);
        }
        for (const [k, num] of model) expect(table.get(k)).toBe(num);
        for (const o of ops) if (!model.has(o.key)) expect(table.get(o.key)).toBe(-1);
      }),
      { numRuns: 300 },
    );
  });

  it('asks its owner only about slots whose full hash matches', () => {
    const owner = new Owner();
    const table = new NumTable(owner, 16, 99);
    for (let i = 0; i < 10_000; i++) {
      owner.entries.set(i, new Set([`k${i}`]));
      expect(table.get(`k${i}`)).toBe(-1);
      table.add(`k${i}`, i);
    }
    // Among 10,000 keys a 32-bit hash repeats about never: a miss or an add asks nothing.
    expect(owner.holdsCalls).toBeLessThan(5);
    owner.holdsCalls = 0;
    for (let i = 0; i < 10_000; i++) expect(table.get(`k${i}`)).toBe(i);
    expect(owner.holdsCalls).toBeGreaterThanOrEqual(10_000);
    expect(owner.holdsCalls).toBeLessThan(10_005);
  });

  it('tells apart keys of one hash through its owner', () => {
    const seed = 7;
    const seen = new Map<number, string>();
    let pair: [string, string] | undefined;
    for (let n = 0; !pair; n++) {
      const k = `grant_${n}`;
      const other = seen.get(hashId(k, seed));
      if (other !== undefined) pair = [other, k];
      else seen.set(hashId(k, seed), k);
    }
    const [a, b] = pair;
    const owner = new Owner();
    const table = new NumTable(owner, 16, seed);
    owner.entries.set(1, new Set([a]));
    table.add(a, 1);
    expect(table.get(b)).toBe(-1);
    owner.entries.set(2, new Set([b]));
    table.add(b, 2);
    expect([table.get(a), table.get(b)]).toEqual([1, 2]);
    table.delete(a);
    owner.entries.delete(1);
    expect([table.get(a), table.get(b), table.size]).toEqual([-1, 2, 1]);
  });

  it('rehashes every key from its owner with a new seed when keys pile up in one probe run', () => {
    // Keys chosen to share a home slot under the table's seed (what an attacker who knew the
    // seed would send): the run passes MAX_PROBE, the table reseeds and stays correct.
    const seed = 12345;
    const owner = new Owner();
    const table = new NumTable(owner, 4096 * 0.7, seed);
    const slots = table.capacity;
    const colliding: string[] = [];
    for (let n = 0; colliding.length < MAX_PROBE + 10; n++) {
      const k = `grant_${n}`;
      if (homeSlot(hashId(k, seed), slots) === 0) colliding.push(k);
    }
    colliding.forEach((k, i) => {
      owner.entries.set(i % 5, (owner.entries.get(i % 5) ?? new Set()).add(k));
      table.add(k, i % 5);
    });
    expect(table.reseeds).toBeGreaterThanOrEqual(1);
    colliding.forEach((k, i) => expect(table.get(k)).toBe(i % 5));
    expect(table.size).toBe(colliding.length);
  });

  it('refuses to rebuild from an owner that lists other keys than it holds', () => {
    const owner = new Owner();
    const table = new NumTable(owner, 16, 1);
    owner.entries.set(0, new Set(['a']));
    table.add('a', 0);
    owner.entries.set(0, new Set(['a', 'b']));
    // Forces a reseed through the private path, as a long run would.
    expect(() => (table as unknown as { reseed(): void }).reseed()).toThrow(/lists 2 keys, the table held 1/);
    // Far more keys than slots: refused as they come, not placed until the table is full.
    for (let i = 0; i < 100; i++) owner.entries.get(0)!.add(`k${i}`);
    expect(() => (table as unknown as { reseed(): void }).reseed()).toThrow(/lists 2 keys, the table held 1/);
    // Fewer keys than it held.
    owner.entries.set(0, new Set());
    expect(() => (table as unknown as { reseed(): void }).reseed()).toThrow(/lists 0 keys, the table held 1/);
  });
  it('is sized to the count asked for and grows by half, keeping every key', () => {
    const owner = new Owner();
    const table = new NumTable(owner, 100, 8);
    expect(table.capacity).toBe(capacityFor(100));
    for (let i = 0; i < 1000; i++) {
      const k = `grant_${i}`;
      owner.entries.set(i % 7, (owner.entries.get(i % 7) ?? new Set()).add(k));
      table.add(k, i % 7);
      expect(table.capacity * 3).toBeGreaterThanOrEqual(table.size * 4);
    }
    let cap = capacityFor(100);
    while (cap * 3 < 1000 * 4) cap = grownCapacity(cap);
    expect(table.capacity).toBe(cap);
    for (let i = 0; i < 1000; i++) expect(table.get(`grant_${i}`)).toBe(i % 7);
    for (let i = 0; i < 1000; i += 2) {
      // The owner holds a key until after its delete.
      expect(table.delete(`grant_${i}`)).toBe(true);
      owner.entries.get(i % 7)!.delete(`grant_${i}`);
    }
    for (let i = 0; i < 1000; i++) expect(table.get(`grant_${i}`)).toBe(i % 2 === 0 ? -1 : i % 7);
  });
});
