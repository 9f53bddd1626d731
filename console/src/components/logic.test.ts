import { describe, expect, it } from 'vitest';
import { formatLogic } from './logic.js';

const v = (path: string) => ({ var: path });

describe('formatLogic', () => {
  it('reads the seeded policy condition as a comparison of a path with a string', () => {
    expect(formatLogic({ '==': [v('subject.meta.employment'), 'contractor'] })).toBe('subject.meta.employment == "contractor"');
  });

  it('writes the example of the console: two comparisons joined by and', () => {
    expect(formatLogic({ and: [{ '==': [v('context.deviceType'), 'managed'] }, { '>=': [v('resource.attributes.level'), 3] }] }))
      .toBe('context.deviceType == "managed" and resource.attributes.level >= 3');
  });

  describe('literals', () => {
    it('writes scalars as JSON does', () => {
      expect(formatLogic(3)).toBe('3');
      expect(formatLogic(-1.5)).toBe('-1.5');
      expect(formatLogic(true)).toBe('true');
      expect(formatLogic(false)).toBe('false');
      expect(formatLogic(null)).toBe('null');
      expect(formatLogic('x')).toBe('"x"');
    });

    it('escapes quotes and backslashes inside strings', () => {
      expect(formatLogic({ '==': [v('a'), 'say "hi"'] })).toBe('a == "say \\"hi\\""');
      expect(formatLogic('back\\slash')).toBe('"back\\\\slash"');
      expect(formatLogic("it's")).toBe('"it\'s"');
    });

    it('writes arrays element by element, rules inside them included', () => {
      expect(formatLogic([1, 'a', null])).toBe('[1, "a", null]');
      expect(formatLogic([v('x'), { '+': [1, 2] }])).toBe('[x, 1 + 2]');
      expect(formatLogic([])).toBe('[]');
    });

    it('keeps an object that is not a single-key operation as JSON', () => {
      expect(formatLogic({})).toBe('{}');
      expect(formatLogic({ a: 1, b: 2 })).toBe('{"a":1,"b":2}');
    });
  });

  describe('var', () => {
    it('writes a path as it is, and a number as an index', () => {
      expect(formatLogic(v('subject.meta.level'))).toBe('subject.meta.level');
      expect(formatLogic({ var: 0 })).toBe('0');
    });

    it('accepts the array form and spells out a default', () => {
      expect(formatLogic({ var: ['a.b'] })).toBe('a.b');
      expect(formatLogic({ var: ['a.b', 3] })).toBe('a.b (default 3)');
      expect(formatLogic({ var: ['a', 'none'] })).toBe('a (default "none")');
      expect(formatLogic({ '>=': [{ var: ['level', 0] }, 2] })).toBe('level (default 0) >= 2');
    });

    it('calls the whole data "data", and a computed path var(…)', () => {
      expect(formatLogic({ var: '' })).toBe('data');
      expect(formatLogic({ var: [] })).toBe('data');
      expect(formatLogic({ var: { cat: ['a.', v('k')] } })).toBe('var(cat("a.", k))');
    });
  });

  describe('comparisons', () => {
    it.each([
      ['==', '=='], ['===', '==='], ['!=', '!='], ['!==', '!=='], ['<', '<'], ['<=', '<='], ['>', '>'], ['>=', '>='],
    ])('writes %s infix', (op, symbol) => {
      expect(formatLogic({ [op]: [v('a'), 1] })).toBe(`a ${symbol} 1`);
    });

    it('writes the three-argument between form of < and <=', () => {
      expect(formatLogic({ '<': [0, v('x'), 10] })).toBe('0 < x < 10');
      expect(formatLogic({ '<=': [0, v('x'), 10] })).toBe('0 <= x <= 10');
    });

    it('keeps parentheses around a comparison compared again', () => {
      expect(formatLogic({ '==': [{ '==': [v('a'), 1] }, true] })).toBe('(a == 1) == true');
      expect(formatLogic({ '!=': [false, { '<': [v('a'), v('b')] }] })).toBe('false != (a < b)');
    });

    it('falls back to JSON for a wrong number of operands', () => {
      expect(formatLogic({ '==': [1] })).toBe('{"==":[1]}');
      expect(formatLogic({ '>': [1, 2, 3] })).toBe('{">":[1,2,3]}');
    });
  });

  describe('in', () => {
    it('tests membership in an array or a substring', () => {
      expect(formatLogic({ in: [v('subject.meta.team'), ['eng', 'legal']] })).toBe('subject.meta.team in ["eng", "legal"]');
      expect(formatLogic({ in: ['@example.com', v('subject.externalId')] })).toBe('"@example.com" in subject.externalId');
    });

    it('falls back to JSON for a wrong number of operands', () => {
      expect(formatLogic({ in: ['a'] })).toBe('{"in":["a"]}');
    });
  });

  describe('and, or, not', () => {
    it('joins any number of operands, and unwraps a single one', () => {
      expect(formatLogic({ or: [v('a'), v('b'), v('c')] })).toBe('a or b or c');
      expect(formatLogic({ and: [v('a')] })).toBe('a');
      expect(formatLogic({ and: [] })).toBe('{"and":[]}');
    });

    it('parenthesises or inside and, and (for clarity) and inside or', () => {
      expect(formatLogic({ and: [{ or: [v('a'), v('b')] }, v('c')] })).toBe('(a or b) and c');
      expect(formatLogic({ or: [{ and: [v('a'), v('b')] }, v('c')] })).toBe('(a and b) or c');
    });

    it('flattens the same operator nested', () => {
      expect(formatLogic({ and: [v('a'), { and: [v('b'), v('c')] }] })).toBe('a and b and c');
    });

    it('writes ! as not, parenthesising anything but a single value', () => {
      expect(formatLogic({ '!': v('a') })).toBe('not a');
      expect(formatLogic({ '!': [v('a')] })).toBe('not a');
      expect(formatLogic({ '!': { '==': [v('a'), 1] } })).toBe('not (a == 1)');
      expect(formatLogic({ '!': { and: [v('a'), v('b')] } })).toBe('not (a and b)');
      expect(formatLogic({ '!': { '!': v('a') } })).toBe('not (not a)');
      expect(formatLogic({ and: [{ '!': v('a') }, v('b')] })).toBe('not a and b');
      expect(formatLogic({ '==': [{ '!': v('a') }, false] })).toBe('(not a) == false');
    });

    it('writes !! as truthy(…)', () => {
      expect(formatLogic({ '!!': [v('a')] })).toBe('truthy(a)');
      expect(formatLogic({ '!!': { missing: ['a'] } })).toBe('truthy(missing(a))');
    });
  });

  describe('if', () => {
    it('writes if … then … else …', () => {
      expect(formatLogic({ if: [v('a'), 1, 2] })).toBe('if a then 1 else 2');
      expect(formatLogic({ '?:': [v('a'), 1, 2] })).toBe('if a then 1 else 2');
    });

    it('chains else if, and leaves out a missing else', () => {
      expect(formatLogic({ if: [{ '<': [v('t'), 0] }, 'freezing', { '<': [v('t'), 100] }, 'liquid', 'gas'] }))
        .toBe('if t < 0 then "freezing" else if t < 100 then "liquid" else "gas"');
      expect(formatLogic({ if: [v('a'), 1] })).toBe('if a then 1');
    });

    it('reads a lone argument as that value, and none as null', () => {
      expect(formatLogic({ if: [v('a')] })).toBe('a');
      expect(formatLogic({ if: [] })).toBe('null');
    });

    it('parenthesises an if used as an operand, or nested in a branch', () => {
      expect(formatLogic({ and: [{ if: [v('a'), true, false] }, v('b')] })).toBe('(if a then true else false) and b');
      expect(formatLogic({ if: [v('a'), { if: [v('b'), 1, 2] }, 3] })).toBe('if a then (if b then 1 else 2) else 3');
      expect(formatLogic({ if: [{ or: [v('a'), v('b')] }, 1, 2] })).toBe('if a or b then 1 else 2');
    });
  });

  describe('arithmetic', () => {
    it('writes + and * over any number of operands, and unary + as number(…)', () => {
      expect(formatLogic({ '+': [1, 2, 3] })).toBe('1 + 2 + 3');
      expect(formatLogic({ '*': [v('a'), 2] })).toBe('a * 2');
      expect(formatLogic({ '+': ['3'] })).toBe('number("3")');
    });

    it('writes binary - / % and unary minus', () => {
      expect(formatLogic({ '-': [v('a'), 1] })).toBe('a - 1');
      expect(formatLogic({ '-': [v('a')] })).toBe('-a');
      expect(formatLogic({ '/': [v('a'), 2] })).toBe('a / 2');
      expect(formatLogic({ '%': [v('a'), 2] })).toBe('a % 2');
      expect(formatLogic({ '-': [{ '+': [v('a'), 1] }] })).toBe('-(a + 1)');
    });

    it('parenthesises by precedence and left to right', () => {
      expect(formatLogic({ '*': [{ '+': [v('a'), 1] }, 2] })).toBe('(a + 1) * 2');
      expect(formatLogic({ '+': [{ '*': [v('a'), 2] }, 1] })).toBe('a * 2 + 1');
      expect(formatLogic({ '-': [{ '-': [v('a'), 1] }, 2] })).toBe('a - 1 - 2');
      expect(formatLogic({ '-': [v('a'), { '-': [1, 2] }] })).toBe('a - (1 - 2)');
      expect(formatLogic({ '/': [v('a'), { '*': [2, 3] }] })).toBe('a / (2 * 3)');
      expect(formatLogic({ '>': [{ '+': [v('a'), v('b')] }, 10] })).toBe('a + b > 10');
    });

    it('falls back to JSON where the operand count means nothing', () => {
      expect(formatLogic({ '/': [1] })).toBe('{"/":[1]}');
      expect(formatLogic({ '-': [1, 2, 3] })).toBe('{"-":[1,2,3]}');
      expect(formatLogic({ '*': [] })).toBe('{"*":[]}');
    });
  });

  describe('some, all, none, filter, map, reduce', () => {
    it('writes quantifiers over the current item', () => {
      expect(formatLogic({ some: [v('subject.meta.groups'), { '==': [{ var: '' }, 'admins'] }] }))
        .toBe('some item in subject.meta.groups: item == "admins"');
      expect(formatLogic({ all: [v('resource.attributes.parts'), { '>=': [v('qty'), 1] }] }))
        .toBe('every item in resource.attributes.parts: item.qty >= 1');
      expect(formatLogic({ none: [[1, 2], { '<': [{ var: '' }, 0] }] })).toBe('no item in [1, 2]: item < 0');
    });

    it('parenthesises a quantifier used as an operand, and reads nested items from the inner one', () => {
      expect(formatLogic({ and: [{ some: [v('xs'), v('ok')] }, v('b')] })).toBe('(some item in xs: item.ok) and b');
      expect(formatLogic({ some: [v('teams'), { some: [v('members'), { '==': [{ var: '' }, 'alice'] }] }] }))
        .toBe('some item in teams: some item in item.members: item == "alice"');
    });

    it('writes filter, map and reduce as calls', () => {
      expect(formatLogic({ filter: [v('xs'), { '>': [{ var: '' }, 2] }] })).toBe('filter(xs, item > 2)');
      expect(formatLogic({ map: [v('xs'), { '*': [{ var: '' }, 2] }] })).toBe('map(xs, item * 2)');
      expect(formatLogic({ reduce: [v('xs'), { '+': [v('current'), v('accumulator')] }, 0] })).toBe('reduce(xs, current + accumulator, 0)');
    });

    it('falls back to JSON without their two operands', () => {
      expect(formatLogic({ some: [v('xs')] })).toBe('{"some":[{"var":"xs"}]}');
    });
  });

  describe('missing, missing_some and string functions', () => {
    it('writes the keys of missing as paths', () => {
      expect(formatLogic({ missing: ['a', 'b.c'] })).toBe('missing(a, b.c)');
      expect(formatLogic({ missing: 'a' })).toBe('missing(a)');
      expect(formatLogic({ '!': { missing: ['subject.meta.team'] } })).toBe('not missing(subject.meta.team)');
      expect(formatLogic({ missing_some: [1, ['a', 'b']] })).toBe('missing_some(1, [a, b])');
    });

    it('writes cat, substr, min, max and merge as calls', () => {
      expect(formatLogic({ cat: ['Hello, ', v('name')] })).toBe('cat("Hello, ", name)');
      expect(formatLogic({ substr: [v('s'), 0, 3] })).toBe('substr(s, 0, 3)');
      expect(formatLogic({ min: [1, v('x')] })).toBe('min(1, x)');
      expect(formatLogic({ max: [1, 2] })).toBe('max(1, 2)');
      expect(formatLogic({ merge: [[1], v('xs')] })).toBe('merge([1], xs)');
    });
  });

  describe('unknown operators', () => {
    it('shows an unknown operation as its JSON, also inside a known one', () => {
      expect(formatLogic({ method: [v('s'), 'toUpperCase'] })).toBe('{"method":[{"var":"s"},"toUpperCase"]}');
      expect(formatLogic({ and: [{ geo_within: [v('loc'), 'EU'] }, v('b')] })).toBe('{"geo_within":[{"var":"loc"},"EU"]} and b');
    });
  });
});
