/**
 * Keeps an open Watch stream tied to the key that opened it: a stream carries a whole tenant for
 * as long as it lives (hours, for a sidecar), so checking the key once at the start is not
 * enough. A stream's key is verified again when a key of its prefix is written (the `authz_keys`
 * NOTIFY that also invalidates the key cache), when notifications resume after a gap (any may
 * have been missed), and every `periodMs` (expiry is a matter of the clock, not of a write).
 * A key found revoked, expired or gone ends its streams with `unauthenticated`; the sidecar then
 * stays up, not ready, and retries (contract §2). The streams of one key (the sidecars of a
 * deployment share their secret) are checked together: one verification per key and check.
 */
import type { Principal } from '../auth/principal.js';
import { prefixOf } from '../auth/key-store.js';
import { unauthenticated } from '../../common/errors.js';
import type { Notifications } from '../../store/notifications.js';
import { KEY_CHANNEL } from '../../store/notifications.js';

/** What the guard needs of the key verifier: the principal of a secret, or null when no longer valid. */
export interface SecretVerifier {
  verify(secret: string): Principal | null | Promise<Principal | null>;
}

/** The streams opened with one secret (as one key). */
interface Guarded {
  secret: string;
  keyId: string;
  prefix: string;
  ends: Set<(err: Error) => void>;
  checking: boolean;
}

export class KeyGuard {
  /** By secret and key id. */
  private readonly guarded = new Map<string, Guarded>();
  private streams = 0;
  private readonly unsubscribe: (() => void)[];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly verifier: SecretVerifier,
    notifications: Notifications,
    private readonly periodMs = 1_000,
    private readonly onError: (err: unknown) => void = () => {},
  ) {
    // Deferred: the key cache drops the prefix on the same notification, and the check must
    // not be answered from the entry it is about to drop.
    const later = (pick: (g: Guarded) => boolean) => setImmediate(() => this.check(pick));
    this.unsubscribe = [
      notifications.subscribe(KEY_CHANNEL, (prefix) => later((g) => prefix === '*' || g.prefix === prefix)),
      notifications.onResync(() => later(() => true)),
    ];
  }

  /** Guards one stream until the returned function is called; `end` is called at most once. */
  guard(secret: string, principal: Principal, end: (err: Error) => void): () => void {
    const id = `${principal.keyId}\n${secret}`;
    let g = this.guarded.get(id);
    if (g === undefined) this.guarded.set(id, (g = { secret, keyId: principal.keyId, prefix: prefixOf(secret), ends: new Set(), checking: false }));
    // Its own function, so that one stream guarded twice is released once per guard.
    const own = (err: Error) => end(err);
    g.ends.add(own);
    this.streams++;
    if (this.timer === undefined && this.periodMs > 0) {
      this.timer = setInterval(() => this.check(() => true), this.periodMs);
      this.timer.unref();
    }
    const guarded = g;
    return () => this.release(id, guarded, own);
  }

  /** Streams guarded now. */
  get size(): number {
    return this.streams;
  }

  /** Keys whose streams are guarded now (each verified once per check). */
  get keys(): number {
    return this.guarded.size;
  }

  close(): void {
    for (const u of this.unsubscribe) u();
    this.guarded.clear();
    this.streams = 0;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  private release(id: string, g: Guarded, end: (err: Error) => void): void {
    if (!g.ends.delete(end)) return;
    this.streams--;
    if (g.ends.size === 0 && this.guarded.get(id) === g) this.guarded.delete(id);
    if (this.guarded.size === 0 && this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private check(pick: (g: Guarded) => boolean): void {
    for (const [id, g] of this.guarded) {
      if (g.checking || !pick(g)) continue;
      g.checking = true;
      Promise.resolve()
        .then(() => this.verifier.verify(g.secret))
        .then(
          (p) => {
            if (this.guarded.get(id) !== g) return;
            if (p === null || p.keyId !== g.keyId) {
              this.guarded.delete(id);
              const ends = [...g.ends];
              g.ends.clear();
              this.streams -= ends.length;
              if (this.guarded.size === 0 && this.timer !== undefined) {
                clearInterval(this.timer);
                this.timer = undefined;
              }
              for (const end of ends) end(unauthenticated('the API key of this Watch stream was revoked or has expired'));
            }
          },
          // The database is unreachable: the stream itself cannot read either; the next check
          // (or the stream's own failure) decides.
          (err: unknown) => this.onError(err),
        )
        .finally(() => {
          g.checking = false;
        });
    }
  }
}
