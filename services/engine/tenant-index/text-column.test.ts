/** The text column: values read back as set, through replacement, growth, compaction and resizing. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TextColumn } from './text-column.js';

describe('TextColumn', () => {
  it('reads back every value as set (undefined, null, any string, lone surrogates included) through replacements, growth and resizes', () => {
    const value = fc.oneof(
      fc.constant(undefined),
      fc.constant(null),
      fc.string({ maxLength: 40 }),
      fc.string({ unit: 'binary', maxLength: 20 }),
      fc.constantFrom('\ud800', 'a\udc00b', 'é', '名前', ''),
    );
    const op = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), n: fc.integer({ min: 0, max: 299 }), v: value }),
      fc.record({ kind: fc.constant('resize' as const), room: fc.integer({ min: 1, max: 300 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 400 }), (ops) => {
        let room = 300;
        const col = new TextColumn(room);
        const model = new Map<number, string | null>();
        for (const o of ops) {
          if (o.kind === 'set') {
            if (o.n >= room) continue;
            col.set(o.n, o.v);
            if (o.v === undefined) model.delete(o.n);
            else model.set(o.n, o.v);
          } else {
            col.resize(o.room);
            for (const n of [...model.keys()]) if (n >= o.room) model.delete(n);
            room = o.room;
          }
        }
        for (let n = 0; n < room; n++) expect(col.get(n)).toBe(model.has(n) ? model.get(n) : undefined);
      }),
      { numRuns: 300 },
    );
  });

  it('reclaims the space of replaced values instead of growing without bound', () => {
    const col = new TextColumn(100);
    const start = col.byteLength;
    for (let round = 0; round < 1000; round++) for (let n = 0; n < 100; n++) col.set(n, `name ${round} of ${n}`);
    expect(col.byteLength).toBeLessThanOrEqual(Math.max(start, 8 * 1024));
    for (let n = 0; n < 100; n++) expect(col.get(n)).toBe(`name 999 of ${n}`);
  });
});
