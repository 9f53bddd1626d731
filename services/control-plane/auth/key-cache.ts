/**
 * API-key verification from memory, so that a decision needs no SQL, kept exact by the
 * database's NOTIFY wake-ups and failing closed when they may have been missed.
 *
 * What is cached: per `prefix`, the stored keys with that prefix (hash, status, expiry,
 * principal), only for prefixes that exist, at most `maxEntries` prefixes (least recently
 * used dropped first). A call is answered from the cache only when a cached key of the prefix
 * matches the secret's hash (constant-time, every candidate compared) and is active and unexpired
 * by the clock now. Anything else (an unknown prefix or secret, a revoked or expired match, a
 * stale or missing entry) asks the database, so refusals and newly created keys never depend on
 * the cache, and nothing an attacker sends adds an entry that a real key did not.
 *
 * How it stays exact: every write of a key NOTIFYs `authz_keys` with its prefix inside the
 * writing transaction (a trigger; this process's own writes are delivered at commit by
 * runWrite), and the entry is dropped. The cache is trusted only while the process's one
 * LISTEN connection is live: while it is down every call asks the database, and when it comes
 * back (`onResync`) the cache is emptied, since notifications may have been missed. A result
 * read from the database is stored only if no notification and no reconnect happened while it
 * was being read. As a last guard against a connection that died silently, an entry is
 * trusted for `maxAgeMs` at most.
 */
import type { Database } from '../../store/db.js';
import { KEY_CHANNEL } from '../../store/notifications.js';
import { candidatesWithPrefix, matchKey, matchKeyId, plausibleSecret, prefixOf, secretDigest, type KeyCandidate } from './key-store.js';
import type { KeyVerifier, Principal } from './principal.js';

export interface KeyCacheOptions {
  /** Prefixes held at most; default 10,000. */
  maxEntries?: number;
  /** How long an entry is trusted without any notification, ms; default 10,000. */
  maxAgeMs?: number;
  /** The clock (epoch ms); tests move it. */
  now?: () => number;
}

interface Entry {
  candidates: readonly KeyCandidate[];
  /** When it was read from the database (epoch ms). */
  readAt: number;
}

/** What the cache did, for metrics: answered from memory, read the database, or bypassed it (notifications down). */
export interface KeyCacheStats {
  hits: number;
  misses: number;
  bypasses: number;
  size: number;
}

export class CachedKeyVerifier implements KeyVerifier {
  private readonly entries = new Map<string, Entry>();
  /** The prefix stored or used last: the last of `entries`. */
  private newest: string | undefined;
  /** Database reads in flight per prefix, shared by concurrent misses of one generation. */
  private readonly reading = new Map<string, Promise<readonly KeyCandidate[]>>();
  /** Moves on every invalidation: a read that saw it move does not store what it read. */
  private generation = 0;
  private readonly maxEntries: number;
  private readonly maxAgeMs: number;
  private readonly now: () => number;
  private readonly unsubscribe: (() => void)[];
  hits = 0;
  misses = 0;
  bypasses = 0;

  constructor(private readonly db: Database, opts: KeyCacheOptions = {}) {
    this.maxEntries = opts.maxEntries ?? 10_000;
    this.maxAgeMs = opts.maxAgeMs ?? 10_000;
    this.now = opts.now ?? Date.now;
    const n = db.notifications;
    this.unsubscribe = [
      n.subscribe(KEY_CHANNEL, (prefix) => (prefix === '*' ? this.clear() : this.invalidate(prefix))),
      n.onResync(() => this.clear()),
    ];
  }

  get stats(): KeyCacheStats {
    return { hits: this.hits, misses: this.misses, bypasses: this.bypasses, size: this.entries.size };
  }

  /** The key's principal; null for an unknown, revoked or expired secret. Synchronous on a hit. */
  verify(secret: string): Principal | null | Promise<Principal | null> {
    if (!plausibleSecret(secret)) return null;
    const digest = secretDigest(secret);
    return this.find(prefixOf(secret), (candidates, now) => matchKey(candidates, digest, now));
  }

  /**
   * The principal of the key with this id and prefix when it is active and unexpired, else null:
   * the same cache, kept exact the same way, answering by id instead of by secret (a session
   * verifies the key it was opened with on every request; sessions.ts).
   */
  verifyKeyId(prefix: string, keyId: string): Principal | null | Promise<Principal | null> {
    return this.find(prefix, (candidates, now) => matchKeyId(candidates, keyId, now));
  }

  /** The key `match` picks among the prefix's stored keys: from the cache when it holds it, else read. */
  private find(prefix: string, match: (candidates: readonly KeyCandidate[], now: number) => Principal | null): Principal | null | Promise<Principal | null> {
    if (!this.db.notifications.live) {
      this.bypasses++;
      return this.read(prefix, false).then((c) => match(c, this.now()));
    }
    const entry = this.entries.get(prefix);
    if (entry !== undefined) {
      const now = this.now();
      if (now - entry.readAt < this.maxAgeMs) {
        const found = match(entry.candidates, now);
        if (found) {
          this.hits++;
          // Most recently used last (already, for a caller calling again: most calls).
          if (this.newest !== prefix) {
            this.entries.delete(prefix);
            this.entries.set(prefix, entry);
            this.newest = prefix;
          }
          return found;
        }
      }
    }
    this.misses++;
    return this.read(prefix, true).then((c) => match(c, this.now()));
  }

  /** Forgets a prefix (a key with it was written). */
  invalidate(prefix: string): void {
    this.generation++;
    this.entries.delete(prefix);
    this.reading.delete(prefix);
    if (this.newest === prefix) this.newest = undefined;
  }

  /** Forgets everything (notifications may have been missed). */
  clear(): void {
    this.generation++;
    this.entries.clear();
    this.reading.clear();
    this.newest = undefined;
  }

  close(): void {
    for (const u of this.unsubscribe) u();
    this.clear();
  }

  /**
   * The prefix's keys from the database. With `store`, concurrent reads are shared and the result
   * is cached, provided notifications stayed live and no invalidation came while it was read
   * (the read may predate the write that invalidated).
   */
  private read(prefix: string, store: boolean): Promise<readonly KeyCandidate[]> {
    if (!store) return candidatesWithPrefix(this.db, prefix);
    const shared = this.reading.get(prefix);
    if (shared) return shared;
    const generation = this.generation;
    const epoch = this.db.notifications.epoch;
    const startedAt = this.now();
    const p = candidatesWithPrefix(this.db, prefix).then(
      (candidates) => {
        if (this.reading.get(prefix) === p) this.reading.delete(prefix);
        const n = this.db.notifications;
        if (candidates.length > 0 && generation === this.generation && n.live && n.epoch === epoch) this.put(prefix, candidates, startedAt);
        return candidates;
      },
      (err: unknown) => {
        if (this.reading.get(prefix) === p) this.reading.delete(prefix);
        throw err;
      },
    );
    this.reading.set(prefix, p);
    return p;
  }

  private put(prefix: string, candidates: readonly KeyCandidate[], readAt: number): void {
    this.entries.delete(prefix);
    this.entries.set(prefix, { candidates, readAt });
    this.newest = prefix;
    while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
  }
}
