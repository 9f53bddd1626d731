import { describe, expect, it } from 'vitest';
import { newId, uuidv7 } from './ids.js';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('uuidv7', () => {
  it('is unique, versioned and sorted in creation order across many pool refills', () => {
    const ids = Array.from({ length: 20_000 }, () => uuidv7());
    for (const id of ids) expect(id).toMatch(V7);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });

  it('carries the millisecond and counts up within it', () => {
    const ms = Date.now() + 10_000; // later than any id made so far
    const a = uuidv7(ms);
    const b = uuidv7(ms);
    expect(parseInt(a.replace(/-/g, '').slice(0, 12), 16)).toBe(ms);
    expect(parseInt(b.slice(15, 18), 16)).toBe(parseInt(a.slice(15, 18), 16) + 1);
  });

  it('draws fresh random bits for every id (no two ids share their random tail)', () => {
    const tails = new Set(Array.from({ length: 5_000 }, () => uuidv7().slice(19)));
    expect(tails.size).toBe(5_000);
  });

  it('prefixes the namespace', () => {
    expect(newId('scope')).toMatch(/^scope_[0-9a-f-]{36}$/);
  });
});
