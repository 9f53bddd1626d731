import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { newId } from '../common/ids.js';
import { PACKED, packId, unpackId } from './packed-id.js';

const unpacked = (prefix: string) => unpackId(prefix, PACKED[0], PACKED[1], PACKED[2], PACKED[3]);

describe('packed ids', () => {
  it('packs every id the service issues and unpacks it to the same string', () => {
    for (let i = 0; i < 2000; i++) {
      const id = newId('ownership_grant');
      expect(packId(id, 'ownership_grant_')).toBe(true);
      expect(unpacked('ownership_grant_')).toBe(id);
    }
  });

  it('packs a canonical lowercase UUID with any hex digits, words of either sign', () => {
    const hex = (n: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${n}}$`));
    fc.assert(
      fc.property(hex(8), hex(4), hex(4), hex(4), hex(12), (a, b, c, d, e) => {
        const id = `p_${a}-${b}-${c}-${d}-${e}`;
        expect(packId(id, 'p_')).toBe(true);
        expect(unpacked('p_')).toBe(id);
      }),
    );
    expect(packId('p_ffffffff-ffff-ffff-ffff-ffffffffffff', 'p_')).toBe(true);
    expect([...PACKED]).toEqual([-1, -1, -1, -1]);
  });

  it('leaves as strings the ids that would not unpack to themselves', () => {
    const u = '0192f3a4-b5c6-7d8e-9f00-a1b2c3d4e5f6';
    for (const id of [
      `ownership_grant_${u.toUpperCase()}`, // capitals: unpacking gives lowercase
      `ownership_grant_${u.slice(0, 8)}0${u.slice(9)}`, // a dash made a digit
      `ownership_grant_${u.slice(0, 23)}0${u.slice(24)}`,
      `ownership_grant_${u.replace(/-/g, '')}`,
      `ownership_grant_${u}0`,
      `ownership_grant_${u.slice(0, -1)}`,
      `ownership_grant_${u.slice(0, -1)}g`,
      `ownership_grant_${u.slice(0, -1)}\u00e9`,
      `resource_${u}`, // another prefix
      `ownership_grant_x${u.slice(1)}`,
      'ownership_grant_1',
      '',
    ]) {
      expect(packId(id, 'ownership_grant_'), id).toBe(false);
    }
  });

  it('never packs two different ids into the same words', () => {
    fc.assert(
      fc.property(fc.uuid(), fc.uuid(), (a, b) => {
        fc.pre(a !== b);
        const ok = packId(`g_${a}`, 'g_');
        const wa = [...PACKED];
        if (!ok || !packId(`g_${b}`, 'g_')) return;
        expect([...PACKED]).not.toEqual(wa);
      }),
    );
  });
});
