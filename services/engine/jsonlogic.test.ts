import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import fc from 'fast-check';
import jsonLogic from 'json-logic-js';
import { describe, expect, it } from 'vitest';
import { CONDITION_MAX_OPERATIONS, DECISION_MAX_OPERATIONS, DecisionBudget } from './budget.js';
import {
  JSON_LOGIC_MAX_ARRAY_LENGTH,
  JSON_LOGIC_MAX_DEPTH,
  JSON_LOGIC_MAX_OBJECT_KEYS,
  applyJsonLogic,
  conditionOutcome,
  conditionPasses,
  estimateJsonLogic,
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

// --- the budget ------------------------------------------------------------------------------

/** The reported rule: three nested `some` over 330-element literal arrays (~2 KB). */
function reportedRule(n = 330): unknown {
  const arr = () => Array.from({ length: n }, () => 0);
  return { some: [arr(), { some: [arr(), { some: [arr(), { '==': [{ var: '' }, 1] }] }] }] };
}

/** Operations a rule spends against `data`: what is left of a fresh decision budget, subtracted. */
function spent(rule: unknown, data: unknown): { used: number; result: ReturnType<typeof applyJsonLogic> } {
  const b = new DecisionBudget();
  const result = applyJsonLogic(rule, data, b);
  return { used: DECISION_MAX_OPERATIONS - b.left, result };
}

describe('JSON Logic write-time bounds', () => {
  it('refuses the reported rule, naming the smallest part that can never fit, in milliseconds', () => {
    const rule = reportedRule();
    expect(JSON.stringify(rule).length).toBeLessThan(2_100);
    const t0 = performance.now();
    const err = validateJsonLogic(rule);
    expect(performance.now() - t0).toBeLessThan(100);
    // The middle `some` alone costs 330 × (its inner `some`); the outer one is not named.
    expect(err).toBe(`rule.some[1]: costs up to 545492 operations over its literal data alone; a condition may spend at most ${CONDITION_MAX_OPERATIONS}`);
  });

  it('estimates exactly what a rule over literal arrays spends when nothing stops early', () => {
    for (const n of [3, 8, 12]) {
      const rule = reportedRule(n);
      const { used, result } = spent(rule, {});
      expect(result).toEqual({ ok: true, value: false });
      expect(estimateJsonLogic(rule)).toBe(used);
    }
  });

  it('counts the costliest path through an if, not every branch', () => {
    const heavy = { some: [Array.from({ length: 900 }, (_, i) => i), { '==': [{ var: '' }, -1] }] }; // ~4,500
    expect(validateJsonLogic({ if: [{ var: 'a' }, heavy, heavy] })).toBeNull();
    expect(validateJsonLogic({ and: [heavy, heavy, heavy] })).toMatch(/^rule: costs up to \d+ operations/);
  });

  it('leaves arrays read from the data to the run-time budget', () => {
    expect(validateJsonLogic({ some: [{ var: 'xs' }, { some: [{ var: 'ys' }, { '==': [{ var: '' }, 1] }] }] })).toBeNull();
    // ...but a literal loop inside one still counts once per pass.
    const inner = { some: [Array.from({ length: 200 }, () => 0), { some: [Array.from({ length: 200 }, () => 0), true] }] };
    expect(validateJsonLogic({ some: [{ var: 'xs' }, inner] })).toMatch(/^rule\.some\[1\]: costs up to/);
  });

  it(`refuses arrays longer than ${JSON_LOGIC_MAX_ARRAY_LENGTH}, literal or arguments, naming the path`, () => {
    const list = (n: number) => Array.from({ length: n }, (_, i) => `v${i}`);
    expect(validateJsonLogic({ in: [{ var: 'x' }, list(JSON_LOGIC_MAX_ARRAY_LENGTH)] })).toBeNull();
    expect(validateJsonLogic({ and: [true, { in: [{ var: 'x' }, list(1_001)] }] })).toBe('rule.and[1].in[1]: an array of 1001 elements; at most 1000 are allowed');
    expect(validateJsonLogic({ or: Array.from({ length: 1_001 }, () => false) })).toBe('rule.or: an array of 1001 elements; at most 1000 are allowed');
  });

  it('accepts a realistic `in` list (the 249 country codes) and evaluates it', () => {
    const codes = Array.from({ length: 249 }, (_, i) => String.fromCharCode(65 + (i % 26), 65 + Math.floor(i / 26)));
    const rule = { in: [{ var: 'country' }, codes] };
    expect(validateJsonLogic(rule)).toBeNull();
    expect(conditionPasses(rule, { country: codes[200] })).toBe(true);
    expect(conditionPasses(rule, { country: 'zz' })).toBe(false);
  });

  it(`refuses literal objects with more than ${JSON_LOGIC_MAX_OBJECT_KEYS} keys (each evaluation enumerates them)`, () => {
    const obj = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));
    expect(validateJsonLogic({ '==': [{ var: 'x' }, obj(JSON_LOGIC_MAX_OBJECT_KEYS)] })).toBeNull();
    expect(validateJsonLogic({ '==': [{ var: 'x' }, obj(33)] })).toBe('rule.==[1]: a literal object with 33 keys; at most 32 are allowed');
  });
});

describe('JSON Logic run-time budget', () => {
  const xs = (n: number) => Array.from({ length: n }, (_, i) => i);

  it('a rule stored before the bounds errors at evaluation instead of running', () => {
    const t0 = performance.now();
    const r = applyJsonLogic(reportedRule(), {});
    expect(performance.now() - t0).toBeLessThan(100);
    expect(r).toMatchObject({ ok: false, error: expect.stringMatching(/^rule\.some\[1\]: costs up to 545492 operations/) });
    expect(conditionOutcome(reportedRule(), {})).toBe('error');
  });

  it('every node visited counts, elements of data arrays included', () => {
    // `some` 1, `{var: "xs"}` and its argument 2, then per element `==`, `var`, its argument, -1.
    const rule = { some: [{ var: 'xs' }, { '==': [{ var: '' }, -1] }] };
    for (const n of [0, 10, 1_000]) expect(spent(rule, { xs: xs(n) }).used).toBe(3 + 4 * n);
    expect(spent(rule, { xs: xs(100_000) })).toMatchObject({
      used: CONDITION_MAX_OPERATIONS,
      result: { ok: false, error: 'evaluation budget exhausted: the condition took more than 10000 operations' },
    });
  });

  it.each([
    ['in over an array', { in: [-1, { var: 'big' }] }, { big: xs(200_000) }],
    ['in over a string', { in: ['y', { var: 's' }] }, { s: 'x'.repeat(200_000) }],
    ['== converting an array', { '==': [{ var: 'big' }, 'x'] }, { big: xs(20_000) }],
    ['== of long strings', { '==': [{ var: 's' }, { var: 't' }] }, { s: 'x'.repeat(200_000), t: 'x'.repeat(200_000) }],
    ['< converting nested arrays', { '<': [{ var: 'big' }, 1] }, { big: xs(5_000).map((i) => [i, [i]]) }],
    ['+ converting an array', { '+': [{ var: 'big' }, 1] }, { big: xs(20_000) }],
    ['min over an array', { min: [{ var: 'big' }, 1] }, { big: xs(20_000) }],
    ['cat of an array', { cat: [{ var: 'big' }] }, { big: xs(20_000) }],
    ['substr of a long string', { substr: [{ var: 's' }, 1] }, { s: 'x'.repeat(200_000) }],
    ['var with a computed path', { var: { var: 'p' } }, { p: 'a.'.repeat(20_000) }],
    ['map allocating its result', { map: [{ var: 'big' }, 1] }, { big: xs(200_000) }],
    ['reduce over every element', { reduce: [{ var: 'big' }, { var: 'current' }, 0] }, { big: xs(20_000) }],
    ['missing over many keys', { missing: { var: 'keys' } }, { keys: xs(20_000).map(String) }],
  ])('%s is charged its size, not one operation', (_name, rule, data) => {
    expect(validateJsonLogic(rule)).toBeNull();
    const t0 = performance.now();
    expect(spent(rule, data).result).toEqual({ ok: false, error: 'evaluation budget exhausted: the condition took more than 10000 operations' });
    expect(performance.now() - t0).toBeLessThan(200);
  });

  it('draws at most what the decision has left, and says so', () => {
    const rule = { some: [{ var: 'xs' }, { '==': [{ var: '' }, -1] }] };
    const b = new DecisionBudget();
    b.left = 100;
    expect(applyJsonLogic(rule, { xs: xs(1_000) }, b)).toEqual({ ok: false, error: "evaluation budget exhausted: the decision's 30000 operations are spent" });
    expect(b.left).toBe(0);
    // With nothing left, even a constant errors, without running.
    expect(applyJsonLogic({ '==': [1, 1] }, {}, b)).toEqual({ ok: false, error: "evaluation budget exhausted: the decision's 30000 operations are spent" });
  });

  it('meters alike when the module is evaluated twice in one process (a test runner sharing modules)', async () => {
    // @ts-expect-error: a query makes the module loader evaluate the file again, as a second copy.
    const again = (await import('./jsonlogic.js?again')) as typeof import('./jsonlogic.js');
    expect(again.applyJsonLogic).not.toBe(applyJsonLogic);
    const rule = { in: [-1, { var: 'big' }] };
    const exhausted = { ok: false, error: 'evaluation budget exhausted: the condition took more than 10000 operations' };
    for (const apply of [applyJsonLogic, again.applyJsonLogic, applyJsonLogic]) {
      expect(apply(rule, { big: xs(200_000) })).toEqual(exhausted);
      expect(apply(rule, { big: xs(10) })).toEqual({ ok: true, value: false });
    }
  });

  it('meters nothing outside applyJsonLogic', () => {
    const rule = { some: [{ var: 'xs' }, { '==': [{ var: '' }, -1] }] };
    expect(jsonLogic.apply(rule as never, { xs: xs(100_000) })).toBe(false);
  });

  it('missing and missing_some never evaluate a key taken from the data as a rule', () => {
    // The stock `missing` would run `{"merge": …}` read from the request context.
    const data = { keys: [{ merge: [[1], [2]] }, 'a'], a: 1 };
    expect(applyJsonLogic({ missing: { var: 'keys' } }, data)).toEqual({ ok: true, value: [{ merge: [[1], [2]] }] });
    expect(applyJsonLogic({ missing_some: [1, { var: 'keys' }] }, data)).toEqual({ ok: true, value: [] });
  });
});

describe('the metered operations answer as the stock json-logic-js', () => {
  // A second, untouched copy of the package (the one jsonlogic.ts imports is patched): its
  // source run again in a module object of its own.
  const source = readFileSync(createRequire(import.meta.url).resolve('json-logic-js'), 'utf8');
  const mod = { exports: {} as unknown };
  new Function('module', 'exports', 'define', source)(mod, mod.exports, undefined);
  const stock = mod.exports as typeof jsonLogic;

  const scalar = fc.oneof(fc.integer({ min: -5, max: 5 }), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom('', '0', '1', '2.5', 'a', 'ab', 'b', 'x.y', 'a,b', '1,2'), fc.boolean(), fc.constant(null));
  const value = fc.oneof(scalar, fc.array(scalar, { maxLength: 4 }), fc.array(fc.array(scalar, { maxLength: 3 }), { maxLength: 3 }), fc.constant({}));
  const OPS = ['==', '!=', '>', '>=', '<', '<=', '%', '-', '/', '+', '*', 'min', 'max', 'substr', 'merge', 'cat', 'in', 'missing', 'missing_some', 'var'];
  const run = (lib: typeof jsonLogic, rule: unknown, data: unknown): { value: unknown } | { threw: true } => {
    try {
      return { value: lib.apply(rule as never, data) };
    } catch {
      return { threw: true };
    }
  };

  it('is a pristine copy', () => {
    expect(stock.apply).not.toBe(jsonLogic.apply);
    // The stock `missing` evaluates a key from the data as a rule: `{var: "a"}` reads "a".
    const data = { keys: [{ var: 'a' }], a: 'a' };
    expect(stock.apply({ missing: { var: 'keys' } } as never, data)).toEqual([]);
    expect(applyJsonLogic({ missing: { var: 'keys' } }, data)).toEqual({ ok: true, value: [{ var: 'a' }] });
  });

  it('on generated arguments', () => {
    fc.assert(
      fc.property(fc.constantFrom(...OPS), fc.array(value, { maxLength: 4 }), fc.dictionary(fc.constantFrom('a', 'b', '0', '1', 'x'), value), (op, args, data) => {
        const rule = { [op]: args };
        const want = run(stock, rule, data);
        const got = applyJsonLogic(rule, data);
        if ('threw' in want) expect(got.ok).toBe(false);
        else expect(got).toEqual({ ok: true, value: want.value });
      }),
      // A case a random run found: nothing is "in" the empty string.
      { numRuns: 5_000, examples: [['in', [[], ''], {}], ['in', ['', ''], {}]] },
    );
  });
});
