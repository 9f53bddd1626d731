import { describe, expect, it } from 'vitest';
import { DomainError } from '../common/errors.js';
import { checkJsonValue } from './guard.js';
import { MAX_JSON_DEPTH } from './request-limits.js';

/** What checkJsonValue refuses a value with: `kind field: message`, or 'ok'. */
function refusal(value: unknown, path = 'attributes'): string {
  try {
    checkJsonValue(value, path);
    return 'ok';
  } catch (e) {
    const err = e as DomainError;
    return `${err.kind} ${err.field}: ${err.message}`;
  }
}

describe('checkJsonValue', () => {
  it('names the value it refuses by its JSON path', () => {
    expect(refusal({ a: [1, { b: 'nul \u0000' }] })).toBe('invalid attributes.a[1].b: attributes.a[1].b: must not contain a NUL character (U+0000)');
    expect(refusal({ a: 'lone \ud800' })).toBe('invalid attributes.a: attributes.a: must be valid Unicode (it holds a lone surrogate)');
    expect(refusal({ 'key \udc00': 1 })).toBe('invalid attributes.key \udc00: attributes.key \udc00: must be valid Unicode (it holds a lone surrogate)');
    expect(refusal({ a: 'paired 😀', b: [true, null, 1.5] })).toBe('ok');
  });

  it('refuses an object\'s keys before its values, and its values last key first', () => {
    expect(refusal({ first: '\u0000', second: '\u0000' })).toContain('attributes.second:');
    expect(refusal({ first: '\u0000', ['k\u0000']: 1 })).toContain('attributes.k\u0000:');
    expect(refusal([{ x: '\u0000' }, '\u0000'])).toContain('attributes[0].x:');
  });

  it('clips long paths level by level, and names the whole value when it nests too deep', () => {
    const long = 'k'.repeat(120);
    const msg = refusal({ [long]: { [long]: '\u0000' } });
    // 'attributes.' + 120 k (131, kept whole), then + '.' + 120 k (252: its first 100 and last 50).
    expect(msg).toContain(`attributes.${'k'.repeat(89)}…${'k'.repeat(50)}: must not contain`);
    let deep: unknown = 'x';
    for (let i = 0; i <= MAX_JSON_DEPTH; i++) deep = [deep];
    expect(refusal(deep)).toBe(`limit attributes: attributes: nests deeper than ${MAX_JSON_DEPTH} levels`);
  });
});
