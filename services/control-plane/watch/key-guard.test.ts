/**
 * KeyGuard with many streams of one key (the sidecars of a deployment share their secret): one
 * verification per key and check, whatever the number of streams, and a revoked key ends every
 * stream opened with it and none of another key's.
 */
import { describe, expect, it } from 'vitest';
import type { Notifications } from '../../store/notifications.js';
import type { Principal } from '../auth/principal.js';
import { KeyGuard, type SecretVerifier } from './key-guard.js';

/** Notifications as KeyGuard uses them: key notices by channel, and resyncs. */
function fakeNotifications() {
  const subs = new Map<string, (payload: string) => void>();
  const resyncs: (() => void)[] = [];
  return {
    n: {
      subscribe: (channel: string, fn: (payload: string) => void) => (subs.set(channel, fn), () => subs.delete(channel)),
      onResync: (fn: () => void) => (resyncs.push(fn), () => undefined),
    } as unknown as Notifications,
    notify: (channel: string, payload: string) => subs.get(channel)?.(payload),
  };
}

const principal = (keyId: string) => ({ keyId }) as unknown as Principal;
const SECRET_A = 'azk_aaaaaaaa_0123456789abcdef0123456789';
const SECRET_B = 'azk_bbbbbbbb_0123456789abcdef0123456789';
const settle = () => new Promise((r) => setTimeout(r, 20));

describe('KeyGuard', () => {
  it('verifies a key once per check for all of its streams, and ends all of them (and only them) when it is revoked', async () => {
    const valid = new Set([SECRET_A, SECRET_B]);
    const asked: string[] = [];
    const verifier: SecretVerifier = {
      verify: (secret) => {
        asked.push(secret);
        return valid.has(secret) ? principal(secret === SECRET_A ? 'apk_a' : 'apk_b') : null;
      },
    };
    const { n, notify } = fakeNotifications();
    const guard = new KeyGuard(verifier, n, 0);
    const ended: string[] = [];
    const releases: (() => void)[] = [];
    for (let i = 0; i < 500; i++) releases.push(guard.guard(SECRET_A, principal('apk_a'), () => ended.push(`a${i}`)));
    for (let i = 0; i < 3; i++) guard.guard(SECRET_B, principal('apk_b'), () => ended.push(`b${i}`));
    expect([guard.size, guard.keys]).toEqual([503, 2]);

    // A notice for any key ('*') checks every key once, not every stream.
    notify('authz_keys', '*');
    await settle();
    expect(asked.sort()).toEqual([SECRET_A, SECRET_B]);
    expect(ended).toEqual([]);

    // A stream released leaves the others guarded.
    releases[0]();
    releases[0]();
    expect(guard.size).toBe(502);

    valid.delete(SECRET_A);
    asked.length = 0;
    notify('authz_keys', '*');
    await settle();
    expect(asked.sort()).toEqual([SECRET_A, SECRET_B]);
    expect(ended).toHaveLength(499);
    expect(ended.every((e) => e.startsWith('a'))).toBe(true);
    expect([guard.size, guard.keys]).toEqual([3, 1]);
    guard.close();
  });
});
