/**
 * Keeps an open Watch stream tied to the key that opened it: a stream carries a whole tenant for
 * as long as it lives (hours, for a sidecar), so checking the key once at the start is not
 * enough. A stream's key is verified again when a key of its prefix is written (the `authz_keys`
 * NOTIFY that also invalidates the key cache), when notifications resume after a gap (any may
 * have been missed), and every `periodMs` (expiry is a matter of the clock, not of a write).
 * A key found revoked, expired or gone ends its streams with `unauthenticated`; the sidecar then
 * stays up, not ready, and retries (contract §2).
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

interface Guarded {
  secret: string;
  keyId: string;
  prefix: string;
  end: (err: Error) => void;
  checking: boolean;
}

export class KeyGuard {
  private readonly guarded = new Set<Guarded>();
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
    const g: Guarded = { secret, keyId: principal.keyId, prefix: prefixOf(secret), end, checking: false };
    this.guarded.add(g);
    if (this.timer === undefined && this.periodMs > 0) {
      this.timer = setInterval(() => this.check(() => true), this.periodMs);
      this.timer.unref();
    }
    return () => this.release(g);
  }

  get size(): number {
    return this.guarded.size;
  }

  close(): void {
    for (const u of this.unsubscribe) u();
    this.guarded.clear();
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  private release(g: Guarded): void {
    this.guarded.delete(g);
    if (this.guarded.size === 0 && this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private check(pick: (g: Guarded) => boolean): void {
    for (const g of this.guarded) {
      if (g.checking || !pick(g)) continue;
      g.checking = true;
      Promise.resolve()
        .then(() => this.verifier.verify(g.secret))
        .then(
          (p) => {
            if (!this.guarded.has(g)) return;
            if (p === null || p.keyId !== g.keyId) {
              this.release(g);
              g.end(unauthenticated('the API key of this Watch stream was revoked or has expired'));
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
