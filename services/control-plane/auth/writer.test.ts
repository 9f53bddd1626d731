import { describe, expect, it } from 'vitest';
import { DomainError } from '../../common/errors.js';
import { changeReason, MAX_REASON, writerOf } from './writer.js';

/** A header value as Node hands it over: the UTF-8 bytes, one character each. */
const wire = (text: string) => Buffer.from(text, 'utf8').toString('latin1');

const refused = (value: string) => {
  try {
    changeReason(value);
  } catch (err) {
    return err instanceof DomainError && err.kind === 'invalid' && err.field === 'x-change-reason' ? err.message : `wrong error: ${String(err)}`;
  }
  return 'accepted';
};

describe('x-change-reason', () => {
  it('is absent when the header is missing or empty', () => {
    expect(changeReason(undefined)).toBeNull();
    expect(changeReason(null)).toBeNull();
    expect(changeReason('')).toBeNull();
  });

  it('reads UTF-8 and counts characters, not bytes', () => {
    expect(changeReason(wire('incident 42: révoquer ✓'))).toBe('incident 42: révoquer ✓');
    expect(changeReason(wire('é'.repeat(MAX_REASON)))).toBe('é'.repeat(MAX_REASON));
    expect(refused(wire('é'.repeat(MAX_REASON + 1)))).toContain(`at most ${MAX_REASON}`);
    expect(refused('x'.repeat(MAX_REASON + 1))).toContain(`at most ${MAX_REASON}`);
    expect(changeReason('x'.repeat(MAX_REASON))).toHaveLength(MAX_REASON);
  });

  it('refuses bytes that are not UTF-8, and NUL', () => {
    expect(refused(String.fromCharCode(0xff, 0xfe, 0x41))).toContain('UTF-8');
    expect(refused('a\u0000b')).toContain('NUL');
    expect(refused(wire('é\u0000'))).toContain('NUL');
  });

  it('makes the writer of a principal', () => {
    expect(writerOf({ keyId: 'apk_1', subjectId: 'subject_1', kind: 'user', tenantId: 't' }, 'why')).toEqual({ keyId: 'apk_1', subjectId: 'subject_1', reason: 'why' });
  });
});
