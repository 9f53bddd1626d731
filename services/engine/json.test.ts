import { describe, expect, it } from 'vitest';
import { isPlainObject } from './json.js';

describe('isPlainObject', () => {
  it('accepts object literals and null-prototype objects, nothing else', () => {
    expect([{}, { a: 1 }, Object.create(null), JSON.parse('{"__proto__":{}}')].map(isPlainObject)).toEqual([true, true, true, true]);
    class Box {}
    const rejected = [null, undefined, 0, 'x', true, [], [1], new Date(0), new Box(), new Map(), Object(1), Object.create({})];
    expect(rejected.map(isPlainObject)).toEqual(rejected.map(() => false));
  });
});
