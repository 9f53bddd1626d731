/**
 * A hash table from string ids to values whose lookups touch one cache line on a large table.
 *
 * Why not a `Map`: in V8 a `Map.get` on a million string keys walks a bucket, a chain entry
 * and the stored key string, then the caller reads the value object: four or five dependent
 * trips to DRAM, each with a TLB miss on a gigabyte heap (about 0.8 µs per resource lookup
 * measured on the benchmark tenant). Here every slot is 64 bytes of one typed array holding
 * the key's hash, a few int32 "hot words" the caller keeps there (a copy of what a check reads
 * about the value), the value's number when values are numbered, and the key's characters, so
 * a lookup that needs only the hot words reads one slot, found by linear probing. Values stay
 * outside the slots, read only when the caller needs more than the hot words: in a plain array
 * by slot, or (with {@link IdTableOptions.byNum}) in the caller's own array by number, so the
 * table keeps no value array at all (8 bytes a slot less).
 *
 * Keys of up to {@link INLINE_KEY_CHARS} characters in U+0000..U+00FE (every id the service
 * issues or accepts) are compared against the slot's bytes; any other key is marked in its
 * slot and compared as a string. Each table hashes with its own random seed, and an insert
 * whose probe run grows past `MAX_PROBE` rebuilds the table with a fresh seed, so a
 * tenant choosing ids cannot make lookups degrade for long (probing.ts, shared with NumTable).
 * The table is sized to the count it is made for (any number of slots, at most 3/4 full) and
 * grows by half when full.
 *
 * Slot numbers move when the table grows, is rebuilt or deletes (backward-shift deletion keeps
 * probe runs short without tombstones): callers must not keep them across writes.
 */

import { MIN_CAPACITY, capacityFor, freeSlot, grownCapacity, hashId, homeSlot, needsReseed, nextShift, overfull, probeDistance, randomSeed } from './probing.js';

/** Bytes per slot: one cache line. */
const SLOT_BYTES = 64;
const SLOT_WORDS = SLOT_BYTES / 4;
/** Hot words per slot (after the hash word) that the caller sets. */
export const HOT_WORDS = 2;
/** Word of a slot holding the value's number (with {@link IdTableOptions.byNum}; else 0). */
const NUM_WORD = 1 + HOT_WORDS;
/** Byte offset, inside a slot, of the key length; the key's characters follow it. */
const KEY_AT = 4 * (NUM_WORD + 1);
/** Longest key kept in the slot itself. */
export const INLINE_KEY_CHARS = SLOT_BYTES - KEY_AT - 1;
/** Key-length byte of a key kept only as a string (too long, or a character above U+00FE). */
const OUT_OF_LINE = 255;
/** {@link IdTable}'s remembered slot when the remembered key was not looked up yet. */
const NO_SLOT = -2;

/** Where an {@link IdTable} finds keys and values that it does not keep itself. */
export interface IdTableOptions<V> {
  /**
   * An entry's key, read from its value (which must not change while the entry is in the
   * table): the table then keeps no key array, 8 bytes a slot less.
   */
  keyOf?: (value: V) => string;
  /**
   * An entry's number (≥ 0, fixed while the entry is in the table), kept in its slot, and the
   * value under a number, from the caller's own array (which must hold it from before `set`
   * until after `delete`): the table then keeps no value array, 8 bytes a slot less. Both or neither.
   */
  numOf?: (value: V) => number;
  byNum?: (num: number) => V;
}

export class IdTable<V> {
  // Set by allocate(), which the constructor calls.
  private words!: Int32Array;
  private bytes!: Uint8Array;
  /** Keys by slot; undefined when `keyOf` gives them (the values hold their keys). */
  private keys: (string | undefined)[] | undefined;
  /** Values by slot; undefined when `byNum` gives them (the slot holds the value's number). */
  private vals: (V | undefined)[] | undefined;
  /** Slots (any number: see probing.ts). */
  private cap!: number;
  private seed!: number;
  private _size = 0;
  /** Inserts since the last rebuild: a reseed waits for enough of them to stay amortised O(1). */
  private inserts = 0;
  /** Rebuilds forced by long probe runs (for tests and diagnostics). */
  reseeds = 0;
  /**
   * The last key hashed, its hash, and its slot (-1: absent; {@link NO_SLOT}: not looked up):
   * an index change looks one id up several times in a row (is it there, insert it, set its
   * hot words), and hashing a 50-character id costs more than the probe.
   */
  private memoKey: string | undefined;
  private memoHash = 0;
  private memoSlot = NO_SLOT;
  private readonly keyOf: ((value: V) => string) | undefined;
  private readonly numOf: ((value: V) => number) | undefined;
  private readonly byNum: ((num: number) => V) | undefined;

  /** `capacity`: entries expected (the table takes 4/3 as many slots and grows past them). */
  constructor(capacity = MIN_CAPACITY, seed = randomSeed(), options: IdTableOptions<V> = {}) {
    this.keyOf = options.keyOf;
    this.numOf = options.numOf;
    this.byNum = options.byNum;
    if ((this.numOf === undefined) !== (this.byNum === undefined)) throw new Error('IdTable: numOf and byNum go together');
    this.allocate(capacityFor(capacity), seed);
  }

  /** Fresh, empty storage for `capacity` slots, hashed with `seed`. */
  private allocate(capacity: number, seed: number): void {
    this.cap = capacity;
    this.seed = seed;
    this.words = new Int32Array(capacity * SLOT_WORDS);
    this.bytes = new Uint8Array(this.words.buffer);
    this.keys = this.keyOf ? undefined : new Array<string | undefined>(capacity).fill(undefined);
    this.vals = this.byNum ? undefined : new Array<V | undefined>(capacity).fill(undefined);
    this.inserts = 0;
    // Slots move and the seed may change.
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
    const h = hashId(key, this.seed);
    this.memoKey = key;
    this.memoHash = h;
    this.memoSlot = NO_SLOT;
    return h;
  }

  /** The slot holding `key`, or -1. Valid until the next write. */
  slotOf(key: string): number {
    const h = this.hash(key);
    if (this.memoSlot !== NO_SLOT) return this.memoSlot;
    return (this.memoSlot = this.find(key, h));
  }

  private find(key: string, h: number): number {
    const words = this.words;
    const bytes = this.bytes;
    const cap = this.cap;
    const len = key.length;
    for (let i = homeSlot(h, cap); ; i = i + 1 === cap ? 0 : i + 1) {
      const base = i * SLOT_WORDS;
      const stored = words[base];
      if (stored === 0) return -1;
      if (stored !== h) continue;
      const at = i * SLOT_BYTES + KEY_AT;
      const kl = bytes[at];
      if (kl === OUT_OF_LINE) {
        if (this.keyAt(i) === key) return i;
      } else if (kl === len) {
        let c = 0;
        while (c < len && bytes[at + 1 + c] === key.charCodeAt(c)) c++;
        if (c === len) return i;
      }
    }
  }

  private keyAt(slot: number): string {
    return (this.keys !== undefined ? this.keys[slot] : (this.keyOf as (value: V) => string)(this.valueAt(slot))) as string;
  }

  get(key: string): V | undefined {
    const i = this.slotOf(key);
    return i < 0 ? undefined : this.valueAt(i);
  }

  /** The value in a slot returned by {@link slotOf}. */
  valueAt(slot: number): V {
    const vals = this.vals;
    return vals !== undefined ? (vals[slot] as V) : (this.byNum as (num: number) => V)(this.words[slot * SLOT_WORDS + NUM_WORD]);
  }

  /** Hot word `k` (0 ≤ k < HOT_WORDS) of a slot. */
  word(slot: number, k: number): number {
    return this.words[slot * SLOT_WORDS + 1 + k];
  }

  /** Sets the hot words of the entry for `key` (which must be present). */
  setWords(key: string, w0: number, w1: number): void {
    const i = this.slotOf(key);
    if (i < 0) throw new Error(`IdTable.setWords: no entry ${key}`);
    this.words[i * SLOT_WORDS + 1] = w0;
    this.words[i * SLOT_WORDS + 2] = w1;
  }

  /** Inserts or replaces; a new entry's hot words start at 0. */
  set(key: string, value: V): this {
    const found = this.slotOf(key);
    if (found >= 0) {
      this.store(found, value);
      return this;
    }
    const h = this.memoHash;
    if (overfull(this._size + 1, this.cap)) this.rebuild(grownCapacity(this.cap), this.seed);
    const distance = this.place(key, h, value, 0, 0);
    this._size++;
    this.inserts++;
    if (needsReseed(distance, this.inserts, this._size)) this.rebuild(this.cap, randomSeed(), true);
    return this;
  }

  /** Puts `value` in slot `i`: in the value array, or its number in the slot. */
  private store(i: number, value: V): void {
    if (this.vals !== undefined) this.vals[i] = value;
    else this.words[i * SLOT_WORDS + NUM_WORD] = (this.numOf as (value: V) => number)(value);
  }

  /** Writes an entry into the first free slot of its run (remembered as the key's); returns the probe distance. */
  private place(key: string, h: number, value: V, w0: number, w1: number): number {
    const i = freeSlot(this.words, SLOT_WORDS, this.cap, h);
    this.memoKey = key;
    this.memoHash = h;
    this.memoSlot = i;
    const base = i * SLOT_WORDS;
    this.words[base] = h;
    this.words[base + 1] = w0;
    this.words[base + 2] = w1;
    if (this.keys !== undefined) this.keys[i] = key;
    this.store(i, value);
    const at = i * SLOT_BYTES + KEY_AT;
    let inline = key.length <= INLINE_KEY_CHARS;
    for (let c = 0; inline && c < key.length; c++) if (key.charCodeAt(c) >= OUT_OF_LINE) inline = false;
    if (inline) {
      this.bytes[at] = key.length;
      for (let c = 0; c < key.length; c++) this.bytes[at + 1 + c] = key.charCodeAt(c);
    } else this.bytes[at] = OUT_OF_LINE;
    return probeDistance(i, h, this.cap);
  }

  /** Writes old slot `from` of `oldWords` (with its key and value, when the table keeps them) into the first free slot of its run, unchanged. */
  private move(oldWords: Int32Array, from: number, key: string | undefined, value: V | undefined): void {
    const i = freeSlot(this.words, SLOT_WORDS, this.cap, oldWords[from * SLOT_WORDS]);
    // Word by word: a subarray per entry is an allocation, and most of the cost of a growth.
    const words = this.words;
    const src = from * SLOT_WORDS;
    const dst = i * SLOT_WORDS;
    for (let w = 0; w < SLOT_WORDS; w++) words[dst + w] = oldWords[src + w];
    if (this.keys !== undefined) this.keys[i] = key;
    if (this.vals !== undefined) this.vals[i] = value;
  }

  /** Re-places every entry into `capacity` slots, rehashing with `seed` when it changed. */
  private rebuild(capacity: number, seed: number, reseed = false): void {
    const { words, keys, vals, keyOf, byNum } = this;
    const oldCap = this.cap;
    const rehash = seed !== this.seed;
    this.allocate(capacity, seed);
    if (reseed) this.reseeds++;
    for (let i = 0; i < oldCap; i++) {
      const base = i * SLOT_WORDS;
      if (words[base] === 0) continue;
      if (!rehash) {
        // Same hash: the whole slot (hash, hot words, number, inline key) moves as it is.
        this.move(words, i, keys?.[i], vals?.[i]);
        continue;
      }
      const value = (vals !== undefined ? vals[i] : (byNum as (num: number) => V)(words[base + NUM_WORD])) as V;
      const key = (keys !== undefined ? keys[i] : (keyOf as (value: V) => string)(value)) as string;
      this.place(key, this.hash(key), value, words[base + 1], words[base + 2]);
    }
  }

  delete(key: string): boolean {
    let i = this.slotOf(key);
    if (i < 0) return false;
    // Entries of the run move.
    this.memoKey = undefined;
    // Backward-shift deletion: pull later entries of the run into the hole when their home
    // slot allows, so no tombstone is left behind.
    const cap = this.cap;
    const words = this.words;
    const { keys, vals } = this;
    for (let j = nextShift(words, SLOT_WORDS, cap, i); j >= 0; j = nextShift(words, SLOT_WORDS, cap, i)) {
      this.bytes.copyWithin(i * SLOT_BYTES, j * SLOT_BYTES, (j + 1) * SLOT_BYTES);
      if (keys !== undefined) keys[i] = keys[j];
      if (vals !== undefined) vals[i] = vals[j];
      i = j;
    }
    this.bytes.fill(0, i * SLOT_BYTES, (i + 1) * SLOT_BYTES);
    if (keys !== undefined) keys[i] = undefined;
    if (vals !== undefined) vals[i] = undefined;
    this._size--;
    return true;
  }

  *entries(): IterableIterator<[string, V]> {
    for (let i = 0; i < this.cap; i++) if (this.words[i * SLOT_WORDS] !== 0) yield [this.keyAt(i), this.valueAt(i)];
  }
}
