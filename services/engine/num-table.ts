/**
 * A hash table from string keys to numbers that keeps no keys: each slot is two int32 words, the
 * key's hash and the number the key maps to (8 bytes a slot, where a `Map` entry costs about 30
 * and a lookup that misses it reads a bucket, a chain entry and the stored key: three trips to
 * DRAM on a large table, against one here). The key itself stays with its owner, which says
 * whether the entry under a number holds a key ({@link NumTableOwner.holds}); a lookup asks it
 * only for a slot whose full hash matches, so a miss never leaves the table.
 *
 * Keys are unique (a key maps to one number); several keys may map to the same number (an owner
 * entry may hold many keys). Hashing, probing, the per-table random seed and the rebuild with a
 * fresh seed after a long probe run are those of `IdTable` (probing.ts); the rebuild re-adds every key
 * the owner lists, since the table cannot recompute a hash it has no key for.
 */
import { MIN_CAPACITY, capacityFor, freeSlot, grownCapacity, hashId, homeSlot, needsReseed, nextShift, overfull, probeDistance, randomSeed } from './probing.js';

/** What a {@link NumTable} asks of the structure that keeps its keys. */
export interface NumTableOwner {
  /** Whether the owner's entry under `num` holds `key` (it must, from before add() to after delete()). */
  holds(num: number, key: string): boolean;
  /** Calls `visit` with every key of the table and its number (for a rebuild with a new seed). */
  eachKey(visit: (key: string, num: number) => void): void;
}

/** Words per slot: the hash, then the number. */
const SLOT_WORDS = 2;

export class NumTable {
  /** `[hash, num]` per slot; hash 0 marks a free slot (hashId never returns 0). */
  private words!: Int32Array;
  /** Slots (any number: see probing.ts). */
  private cap!: number;
  private seed!: number;
  private _size = 0;
  /** Adds since the last rebuild: a reseed waits for enough of them to stay amortised O(1). */
  private adds = 0;
  /** Rebuilds forced by long probe runs (for tests and diagnostics). */
  reseeds = 0;
  /** The last key hashed and its hash: a lookup is usually followed by an add or delete of the same key. */
  private memoKey: string | undefined;
  private memoHash = 0;

  constructor(
    private readonly owner: NumTableOwner,
    capacity = MIN_CAPACITY,
    seed = randomSeed(),
  ) {
    this.allocate(capacityFor(capacity), seed);
  }

  private allocate(capacity: number, seed: number): void {
    this.words = new Int32Array(capacity * SLOT_WORDS);
    this.cap = capacity;
    this.seed = seed;
    this.adds = 0;
    this.memoKey = undefined;
  }

  get size(): number {
    return this._size;
  }

  /** Slots allocated (the table grows by half past 3/4 full). */
  get capacity(): number {
    return this.cap;
  }

  private hash(key: string): number {
    if (key === this.memoKey) return this.memoHash;
    this.memoKey = key;
    return (this.memoHash = hashId(key, this.seed));
  }

  /** The slot of `key`, or -1. */
  private find(key: string): number {
    const h = this.hash(key);
    const words = this.words;
    const cap = this.cap;
    for (let i = homeSlot(h, cap); ; i = i + 1 === cap ? 0 : i + 1) {
      const stored = words[SLOT_WORDS * i];
      if (stored === 0) return -1;
      if (stored === h && this.owner.holds(words[SLOT_WORDS * i + 1], key)) return i;
    }
  }

  /** The number `key` maps to, or -1. */
  get(key: string): number {
    const i = this.find(key);
    return i < 0 ? -1 : this.words[SLOT_WORDS * i + 1];
  }

  /** Maps a key that is not in the table (the caller looked) to `num` (≥ 0). */
  add(key: string, num: number): void {
    if (overfull(this._size + 1, this.cap)) this.grow();
    const distance = this.place(this.hash(key), num);
    this._size++;
    this.adds++;
    if (needsReseed(distance, this.adds, this._size)) this.reseed();
  }

  /**
   * Maps `key`, which maps to `from`, to `to` instead; the owner still holds it under `from`
   * (it may hold it under `to` already).
   */
  renumber(key: string, from: number, to: number): void {
    const h = this.hash(key);
    const words = this.words;
    const cap = this.cap;
    for (let i = homeSlot(h, cap); words[SLOT_WORDS * i] !== 0; i = i + 1 === cap ? 0 : i + 1) {
      if (words[SLOT_WORDS * i] === h && words[SLOT_WORDS * i + 1] === from && this.owner.holds(from, key)) {
        words[SLOT_WORDS * i + 1] = to;
        return;
      }
    }
    throw new Error(`NumTable.renumber: no entry ${key} → ${from}`);
  }

  /** Writes an entry into the first free slot of its run; returns the probe distance. */
  private place(h: number, num: number): number {
    const i = freeSlot(this.words, SLOT_WORDS, this.cap, h);
    this.words[SLOT_WORDS * i] = h;
    this.words[SLOT_WORDS * i + 1] = num;
    return probeDistance(i, h, this.cap);
  }

  /** Half again the slots, same seed: entries move by their stored hash, no key is needed. */
  private grow(): void {
    const old = this.words;
    this.allocate(grownCapacity(this.cap), this.seed);
    for (let i = 0; i < old.length; i += SLOT_WORDS) if (old[i] !== 0) this.place(old[i], old[i + 1]);
  }

  /** Same slots, a new seed: every key is hashed again, from the owner's list. */
  private reseed(): void {
    this.allocate(this.cap, randomSeed());
    this.reseeds++;
    let n = 0;
    const mismatch = () => new Error(`NumTable: the owner lists ${n} keys, the table held ${this._size}`);
    this.owner.eachKey((key, num) => {
      // Checked as it goes: a table filled past its keys would have no free slot to stop a probe.
      if (++n > this._size) throw mismatch();
      this.place(hashId(key, this.seed), num);
    });
    if (n !== this._size) throw mismatch();
  }

  /** Removes `key`; false when it was not there. */
  delete(key: string): boolean {
    let i = this.find(key);
    if (i < 0) return false;
    // Backward-shift deletion (as IdTable): later entries of the run move into the hole when
    // their home slot allows, so no tombstone is left.
    const words = this.words;
    const cap = this.cap;
    for (let j = nextShift(words, SLOT_WORDS, cap, i); j >= 0; j = nextShift(words, SLOT_WORDS, cap, i)) {
      words[SLOT_WORDS * i] = words[SLOT_WORDS * j];
      words[SLOT_WORDS * i + 1] = words[SLOT_WORDS * j + 1];
      i = j;
    }
    words[SLOT_WORDS * i] = 0;
    words[SLOT_WORDS * i + 1] = 0;
    this._size--;
    return true;
  }
}
