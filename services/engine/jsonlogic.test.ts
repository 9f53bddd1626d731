import jsonLogic from 'json-logic-js';
import { describe, expect, it } from 'vitest';
import {
  JSON_LOGIC_MAX_DEPTH,
  applyJsonLogic,
  conditionPasses,
  missingVariables,
  ownProp,
  validateJsonLogic,
} from './jsonlogic.js';

function nestedNot(depth: number): unknown {
  let rule: unknown = true;
  for (let i = 0; i < depth; i++) rule = { '!': rule };
  return rule;
}

describe('JSON Logic depth limit', () => {
  it('accepts 32 nested operations', () => {
    expect(validateJsonLogic(nestedNot(JSON_LOGIC_MAX_DEPTH))).toBeNull();
    expect(applyJsonLogic(nestedNot(32), {})).toEqual({ ok: true, value: true });
  });

  it('rejects 33 nested operations before evaluating', () => {
    expect(validateJsonLogic(nestedNot(33))).toMatch(/nested deeper than 32/);
    expect(conditionPasses(nestedNot(34), {})).toBe(false);
  });

  it('counts literal arrays and objects as levels too', () => {
    let arr: unknown = 1;
    for (let i = 0; i < 33; i++) arr = [arr];
    expect(validateJsonLogic({ '==': [arr, 1] })).toMatch(/nested deeper/);
  });

  it('stops early on absurdly deep input instead of overflowing the stack', () => {
    expect(validateJsonLogic(nestedNot(100_000))).toMatch(/nested deeper/);
  });
});

describe('JSON Logic data access', () => {
  const data = { subject: { meta: { dept: 'eng', tags: ['a', 'b'] } }, s: 'text' };

  it('reads own properties of plain data', () => {
    expect(conditionPasses({ '==': [{ var: 'subject.meta.dept' }, 'eng'] }, data)).toBe(true);
    expect(applyJsonLogic({ var: 'subject.meta.tags.1' }, data)).toEqual({ ok: true, value: 'b' });
    expect(applyJsonLogic({ var: ['subject.meta.nope', 'dflt'] }, data)).toEqual({ ok: true, value: 'dflt' });
  });

  it('refuses literal __proto__, constructor and prototype paths at validation', () => {
    for (const path of ['__proto__', 'constructor', 'subject.constructor.name', 'subject.meta.__proto__.polluted', 'x.prototype']) {
      expect(validateJsonLogic({ var: path })).toMatch(/forbidden property/);
      expect(conditionPasses({ '!!': { var: path } }, data)).toBe(false);
    }
    expect(validateJsonLogic({ missing: ['a', 'constructor'] })).toMatch(/forbidden/);
  });

  it('guards computed paths at run time', () => {
    const rule = { '!!': { var: { cat: ['subject.constr', 'uctor'] } } };
    expect(validateJsonLogic(rule)).toBeNull();
    expect(conditionPasses(rule, data)).toBe(false);
    expect(applyJsonLogic({ var: { cat: ['__pro', 'to__'] } }, data)).toEqual({ ok: true, value: null });
  });

  it('never reads through the prototype chain', () => {
    expect(applyJsonLogic({ var: 'toString' }, data)).toEqual({ ok: true, value: null });
    expect(applyJsonLogic({ var: 'subject.hasOwnProperty' }, data)).toEqual({ ok: true, value: null });
    expect(applyJsonLogic({ var: 's.length' }, data)).toEqual({ ok: true, value: null });
    expect(applyJsonLogic({ var: 'subject.meta.tags.length' }, data)).toEqual({ ok: true, value: null });
    expect(ownProp(Object.create({ inherited: 1 }), 'inherited')).toBeUndefined();
    expect(ownProp(new Date(), 'getTime')).toBeUndefined();
  });

  it('does not run getters', () => {
    let called = false;
    const tricky = { get x() {
      called = true;
      return 1;
    } };
    expect(applyJsonLogic({ var: 'x' }, tricky)).toEqual({ ok: true, value: null });
    expect(called).toBe(false);
  });
});

describe('JSON Logic operations that could call or explode', () => {
  it('forbids method', () => {
    const rule = { method: ['abc', 'toUpperCase'] };
    expect(validateJsonLogic(rule)).toMatch(/forbidden operator "method"/);
    expect(conditionPasses({ '==': [rule, 'ABC'] }, {})).toBe(false);
    // Removed from the shared json-logic-js table as well, for anyone calling it directly.
    expect(() => jsonLogic.apply({ method: ['abc', 'toUpperCase'] } as never, {})).toThrow(/Unrecognized operation/);
  });

  it('forbids log and dotted operator names', () => {
    expect(validateJsonLogic({ log: 'x' })).toMatch(/forbidden operator/);
    expect(validateJsonLogic({ 'var.call': ['x'] })).toMatch(/forbidden operator/);
    expect(() => jsonLogic.apply({ log: 1 } as never, {})).toThrow();
  });

  it('fails closed instead of building huge values', () => {
    // Small rules whose values double at every step: 2^40 items or characters without the caps.
    const xs = Array.from({ length: 40 }, (_, i) => i);
    const merge = { reduce: [{ var: 'xs' }, { merge: [{ var: 'accumulator' }, { var: 'accumulator' }] }, [1]] };
    expect(applyJsonLogic(merge, { xs })).toMatchObject({ ok: false, error: 'merge result too large' });
    const cat = { reduce: [{ var: 'xs' }, { cat: [{ var: 'accumulator' }, { var: 'accumulator' }] }, 'ab'] };
    expect(applyJsonLogic(cat, { xs })).toMatchObject({ ok: false, error: 'cat result too long' });
  });

  it('bounds validation work on rules that share sub-objects', () => {
    let shared: unknown = { var: 'x' };
    for (let i = 0; i < 30; i++) shared = { '+': [shared, shared] }; // 2^30 paths, 31 objects
    expect(validateJsonLogic(shared)).toMatch(/more than 100000 nodes/);
  });

  it('rejects non-JSON rules', () => {
    expect(validateJsonLogic({ '==': [() => 1, 1] })).toMatch(/not JSON/);
    expect(validateJsonLogic({ '==': [new Date(), 1] })).toMatch(/not JSON/);
    expect(validateJsonLogic(Number.NaN)).toMatch(/finite/);
  });

  it('turns evaluation errors into a failed condition', () => {
    expect(conditionPasses({ in: ['a', { var: 'obj' }] }, { obj: { a: 1 } })).toBe(false);
    expect(conditionPasses({ unknown_op: [1] }, {})).toBe(false);
  });

  it('still evaluates ordinary rules', () => {
    expect(conditionPasses({ and: [{ '<': [9, { var: 'time.hour' }, 18] }, { in: ['FR', ['FR', 'DE']] }] }, { time: { hour: 10 } })).toBe(true);
    expect(conditionPasses({ some: [{ var: 'xs' }, { '>': [{ var: '' }, 2] }] }, { xs: [1, 3] })).toBe(true);
    expect(conditionPasses({ in: ['ell', 'hello'] }, {})).toBe(true);
    expect(applyJsonLogic({ cat: ['a', 1, null] }, {})).toEqual({ ok: true, value: 'a1' });
    expect(applyJsonLogic({ merge: [[1], 2, [3]] }, {})).toEqual({ ok: true, value: [1, 2, 3] });
  });
});

describe('missingVariables', () => {
  it('names absent top-level variables, not those read inside map/filter', () => {
    const rule = { and: [{ '==': [{ var: 'ip' }, '1'] }, { some: [{ var: 'items' }, { '==': [{ var: 'price' }, 1] }] }, { var: 'time.hour' }] };
    expect(missingVariables(rule, { time: { hour: 3 } }).sort()).toEqual(['ip', 'items']);
  });
});
