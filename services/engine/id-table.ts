/**
 * A hash table from string ids to values whose lookups touch one cache line on a large table.
 *
 * Why not a `Map`: in V8 a `Map.get` on a million string keys walks a bucket, a chain entry
 * and the stored key string, then the caller reads the value object: four or five dependent
 * trips to DRAM, each with a TLB miss on a gigabyte heap (about 0.8 µs per resource lookup
 * measured on the benchmark tenant). Here every slot is 64 or 32 bytes (below) of one typed
 * array holding the key's hash, a few int32 "hot words" the caller keeps there (a copy of what
 * a check reads about the value), the value's number when values are numbered, and the key, so
 * a lookup that needs only the hot words reads one slot, found by linear probing. Values stay
 * outside the slots, read only when the caller needs more than the hot words: in a plain array
 * by slot, or (with {@link IdTableOptions.byNum}) in the caller's own array by number, so the
 * table keeps no value array at all (8 bytes a slot less).
 *
 * Two layouts. A table made with {@link IdTableOptions.packPrefix} whose first key packs takes
 * 32-byte slots (two to a cache line) whose key is four int32 words: every key it holds is that
 * prefix and a canonical UUID (the service's own ids, packed-id.ts), so the slot needs no length
 * or characters and the hash is taken over the 16 bytes instead of the string. The first key that
 * does not pack turns the table, once and for good, into the wide layout below (a rebuild):
 * switching back would need a count of the keys that do not pack, and a tenant that chose one
 * id usually chooses them all. Until then a key that does not pack is absent without a probe.
 *
 * Wide layout: keys of up to {@link INLINE_KEY_CHARS} characters in U+0000..U+00FE (every id
 * the service issues or accepts) are compared against the slot's bytes; any other key is marked
 * in its slot and compared as a string. Each table hashes with its own random seed, and an insert
 * whose probe run grows past `MAX_PROBE` rebuilds the table with a fresh seed, so a
 * tenant choosing ids cannot make lookups degrade for long (probing.ts, shared with NumTable).
 * The table is sized to the count it is made for (any number of slots, at most 3/4 full) and
 * grows by half when full.
 *
 * Slot numbers move when the table grows, is rebuilt or deletes (backward-shift deletion keeps
 * probe runs short without tombstones): callers must not keep them across writes.
 */

import { PACKED, packId } from './packed-id.js';
import { MIN_CAPACITY, capacityFor, freeSlot, grownCapacity, hashId, hashWords, homeSlot, needsReseed, nextShift, overfull, probeDistance, randomSeed } from './probing.js';

/**
 * Words per slot in the packed layout: hash, hot words, number, the key's four words (32
 * bytes). Both layouts share the first four words, so the hot words and the number are read
 * the same way in either, at a stride the table keeps.
 */
const PACKED_WORDS = 8;
/** Words per slot in the wide layout: one cache line (64 bytes). */
const WIDE_WORDS = 16;
/** Hot words per slot (after the hash word) that the caller sets. */
export const HOT_WORDS = 2;
/** Word of a slot holding the value's number (with {@link IdTableOptions.byNum}; else 0). */
const NUM_WORD = 1 + HOT_WORDS;
/** Word of a packed slot holding the first of the key's four words. */
const KEY_WORD = NUM_WORD + 1;
/** Byte offset, inside a wide slot, of the key length; the key's characters follow it. */
const KEY_AT = 4 * KEY_WORD;
/** Longest key kept in a wide slot itself. */
export const INLINE_KEY_CHARS = 4 * WIDE_WORDS - KEY_AT - 1;
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
  /**
   * Start in the packed layout (32-byte slots) for keys that are this prefix and a canonical
   * lowercase UUID; the first other key inserted switches the table to the wide layout.
   */
  packPrefix?: string;
}

export class IdTable<V> {
  // Set by allocate(), which the constructor calls.
  private words!: Int32Array;
  private bytes!: Uint8Array;
  /** Words per slot: {@link PACKED_WORDS} while every key packs, else {@link WIDE_WORDS}. */
  private stride!: number;
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
  /** 0 in the packed layout for a key that does not pack (no hash is 0). */
  private memoHash = 0;
  private memoSlot = NO_SLOT;
  /** The remembered key's packed words (packed layout): `PACKED` is overwritten by any other packing. */
  private memoP0 = 0;
  private memoP1 = 0;
  private memoP2 = 0;
  private memoP3 = 0;
  private readonly prefix: string | undefined;
  /** With a `packPrefix`, the slots to allocate once the first key decides the layout; then 0. */
  private undecidedCapacity = 0;
  private readonly keyOf: ((value: V) => string) | undefined;
  private readonly numOf: ((value: V) => number) | undefined;
  private readonly byNum: ((num: number) => V) | undefined;

  /** `capacity`: entries expected (the table takes 4/3 as many slots and grows past them). */
  constructor(capacity = MIN_CAPACITY, seed = randomSeed(), options: IdTableOptions<V> = {}) {
    this.keyOf = options.keyOf;
    this.numOf = options.numOf;
    this.byNum = options.byNum;
    this.prefix = options.packPrefix;
    if ((this.numOf === undefined) !== (this.byNum === undefined)) throw new Error('IdTable: numOf and byNum go together');
    if (this.prefix === undefined) this.allocate(capacityFor(capacity), seed, WIDE_WORDS);
    else {
      // The layout waits for the first key (see `decide`): a small wide table until then.
      this.allocate(MIN_CAPACITY, seed, WIDE_WORDS);
      this.undecidedCapacity = capacityFor(capacity);
    }
  }

  /**
   * Takes the layout of the first key inserted: packed when it packs, else wide from the start.
   * So a table whose keys never pack never runs the packed layout's code: V8's feedback for
   * these methods then holds one layout, and their compiled code stays as small (a table
   * switched after packed lookups checked a few percent slower on bench:engine's tenant).
   */
  private decide(key: string): void {
    const capacity = this.undecidedCapacity;
    this.undecidedCapacity = 0;
    if (this.prefix !== undefined && packId(key, this.prefix)) this.allocate(Math.max(capacity, this.cap), this.seed, PACKED_WORDS);
    else if (capacity > this.cap) this.allocate(capacity, this.seed, WIDE_WORDS);
  }

  /** Fresh, empty storage for `capacity` slots of `stride` words, hashed with `seed`. */
  private allocate(capacity: number, seed: number, stride: number): void {
    this.cap = capacity;
    this.seed = seed;
    this.stride = stride;
    this.words = new Int32Array(capacity * stride);
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

  /** Slots allocated, or due once the first key chooses the layout (the table grows by half past 3/4 full). */
  get capacity(): number {
    return this.undecidedCapacity > 0 ? this.undecidedCapacity : this.cap;
  }

  /** Whether the table is in the packed layout (32-byte slots): every key it has held packs. */
  get packed(): boolean {
    return this.stride === PACKED_WORDS;
  }

  /** Bytes of its slots (outside the JS heap). */
  get byteLength(): number {
    return this.words.byteLength;
  }

  private hash(key: string): number {
    if (key === this.memoKey) return this.memoHash;
    this.memoKey = key;
    this.memoSlot = NO_SLOT;
    // The packed case in its own method: this one stays small enough to inline.
    return (this.memoHash = this.stride === WIDE_WORDS ? hashId(key, this.seed) : this.hashPacked(key));
  }

  /** The hash of `key` in the packed layout, its words remembered; 0 (and remembered absent) when it does not pack. */
  private hashPacked(key: string): number {
    if (!packId(key, this.prefix as string)) {
      // Every key of a packed table packs: this one is not there.
      this.memoSlot = -1;
      return 0;
    }
    const p0 = (this.memoP0 = PACKED[0]);
    const p1 = (this.memoP1 = PACKED[1]);
    const p2 = (this.memoP2 = PACKED[2]);
    const p3 = (this.memoP3 = PACKED[3]);
    return hashWords(p0, p1, p2, p3, this.seed);
  }

  /** The slot holding `key`, or -1. Valid until the next write. */
  slotOf(key: string): number {
    const h = this.hash(key);
    if (this.memoSlot !== NO_SLOT) return this.memoSlot;
    return (this.memoSlot = this.stride === PACKED_WORDS ? this.findPacked(h) : this.find(key, h));
  }

  /** The slot of the remembered key (packed layout), whose hash is `h`, or -1. */
  private findPacked(h: number): number {
    const words = this.words;
    const cap = this.cap;
    const p0 = this.memoP0;
    const p1 = this.memoP1;
    const p2 = this.memoP2;
    const p3 = this.memoP3;
    for (let i = homeSlot(h, cap); ; i = i + 1 === cap ? 0 : i + 1) {
      const base = i * PACKED_WORDS;
      const stored = words[base];
      if (stored === 0) return -1;
      if (stored === h && words[base + KEY_WORD] === p0 && words[base + KEY_WORD + 1] === p1 && words[base + KEY_WORD + 2] === p2 && words[base + KEY_WORD + 3] === p3) return i;
    }
  }

  private find(key: string, h: number): number {
    const words = this.words;
    const bytes = this.bytes;
    const cap = this.cap;
    const len = key.length;
    for (let i = homeSlot(h, cap); ; i = i + 1 === cap ? 0 : i + 1) {
      const base = i * WIDE_WORDS;
      const stored = words[base];
      if (stored === 0) return -1;
      if (stored !== h) continue;
      const at = 4 * base + KEY_AT;
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
    return vals !== undefined ? (vals[slot] as V) : (this.byNum as (num: number) => V)(this.words[slot * this.stride + NUM_WORD]);
  }

  /** The value's number in a slot returned by {@link slotOf} (a table with `byNum`). */
  numAt(slot: number): number {
    return this.words[slot * this.stride + NUM_WORD];
  }

  /** Hot word `k` (0 ≤ k < HOT_WORDS) of a slot. */
  word(slot: number, k: number): number {
    return this.words[slot * this.stride + 1 + k];
  }

  /** Sets the hot words of the entry for `key` (which must be present). */
  setWords(key: string, w0: number, w1: number): void {
    const i = this.slotOf(key);
    if (i < 0) throw new Error(`IdTable.setWords: no entry ${key}`);
    const base = i * this.stride;
    this.words[base + 1] = w0;
    this.words[base + 2] = w1;
  }

  /** Inserts or replaces; a new entry's hot words start at 0. */
  set(key: string, value: V): this {
    if (this.undecidedCapacity > 0) this.decide(key);
    const found = this.slotOf(key);
    if (found >= 0) {
      this.store(found, value);
      return this;
    }
    const grow = overfull(this._size + 1, this.cap);
    if (this.memoHash === 0) {
      // A key that does not pack, in the packed layout: the wide layout from now on (and the
      // growth this insert needs, in the same rebuild).
      this.rebuild(grow ? grownCapacity(this.cap) : this.cap, this.seed, false, WIDE_WORDS);
      this.hash(key);
    } else if (grow) this.rebuild(grownCapacity(this.cap), this.seed);
    const distance = this.place(key, this.memoHash, value, 0, 0);
    this._size++;
    this.inserts++;
    if (needsReseed(distance, this.inserts, this._size)) this.rebuild(this.cap, randomSeed(), true);
    return this;
  }

  /** Puts `value` in slot `i`: in the value array, or its number in the slot. */
  private store(i: number, value: V): void {
    if (this.vals !== undefined) this.vals[i] = value;
    else this.words[i * this.stride + NUM_WORD] = (this.numOf as (value: V) => number)(value);
  }

  /**
   * Writes an entry into the first free slot of its run (remembered as the key's); returns the
   * probe distance. In the packed layout `key` must be the remembered key (its packed words are
   * the memo's: `set` hashed it last, and a rebuild that keeps the layout does not hash).
   */
  private place(key: string, h: number, value: V, w0: number, w1: number): number {
    const stride = this.stride;
    const i = freeSlot(this.words, stride, this.cap, h);
    this.memoKey = key;
    this.memoHash = h;
    this.memoSlot = i;
    const base = i * stride;
    this.words[base] = h;
    this.words[base + 1] = w0;
    this.words[base + 2] = w1;
    if (this.keys !== undefined) this.keys[i] = key;
    this.store(i, value);
    if (stride === PACKED_WORDS) {
      this.words[base + KEY_WORD] = this.memoP0;
      this.words[base + KEY_WORD + 1] = this.memoP1;
      this.words[base + KEY_WORD + 2] = this.memoP2;
      this.words[base + KEY_WORD + 3] = this.memoP3;
      return probeDistance(i, h, this.cap);
    }
    const at = 4 * base + KEY_AT;
    let inline = key.length <= INLINE_KEY_CHARS;
    for (let c = 0; inline && c < key.length; c++) if (key.charCodeAt(c) >= OUT_OF_LINE) inline = false;
    if (inline) {
      this.bytes[at] = key.length;
      for (let c = 0; c < key.length; c++) this.bytes[at + 1 + c] = key.charCodeAt(c);
    } else this.bytes[at] = OUT_OF_LINE;
    return probeDistance(i, h, this.cap);
  }

  /**
   * Writes old slot `from` of `oldWords` (with its key and value, when the table keeps them) into
   * the first free slot of the run of hash `h`, with `h` as its hash and the rest of the slot
   * unchanged (same layout).
   */
  private move(oldWords: Int32Array, from: number, h: number, key: string | undefined, value: V | undefined): void {
    const stride = this.stride;
    const i = freeSlot(this.words, stride, this.cap, h);
    // Word by word: a subarray per entry is an allocation, and most of the cost of a growth.
    const words = this.words;
    const src = from * stride;
    const dst = i * stride;
    words[dst] = h;
    for (let w = 1; w < stride; w++) words[dst + w] = oldWords[src + w];
    if (this.keys !== undefined) this.keys[i] = key;
    if (this.vals !== undefined) this.vals[i] = value;
  }

  /**
   * Re-places every entry into `capacity` slots of `stride` words, rehashing with `seed` when it
   * changed. Only the packed → wide switch changes the stride.
   */
  private rebuild(capacity: number, seed: number, reseed = false, stride = this.stride): void {
    const { words, keys, vals, keyOf, byNum } = this;
    const oldCap = this.cap;
    const oldStride = this.stride;
    const rehash = seed !== this.seed;
    this.allocate(capacity, seed, stride);
    if (reseed) this.reseeds++;
    for (let i = 0; i < oldCap; i++) {
      const base = i * oldStride;
      if (words[base] === 0) continue;
      if (stride === oldStride && !rehash) {
        // Same hash: the whole slot (hash, hot words, number, key) moves as it is.
        this.move(words, i, words[base], keys?.[i], vals?.[i]);
      } else if (stride === PACKED_WORDS) {
        // A reseed in the packed layout: the key's words are in the slot, no string needed.
        const h = hashWords(words[base + KEY_WORD], words[base + KEY_WORD + 1], words[base + KEY_WORD + 2], words[base + KEY_WORD + 3], seed);
        this.move(words, i, h, keys?.[i], vals?.[i]);
      } else {
        // Into the wide layout (a reseed, or the switch): hashed and written from the key's string.
        const value = (vals !== undefined ? vals[i] : (byNum as (num: number) => V)(words[base + NUM_WORD])) as V;
        const key = (keys !== undefined ? keys[i] : (keyOf as (value: V) => string)(value)) as string;
        this.place(key, hashId(key, seed), value, words[base + 1], words[base + 2]);
      }
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
    const stride = this.stride;
    const { keys, vals } = this;
    for (let j = nextShift(words, stride, cap, i); j >= 0; j = nextShift(words, stride, cap, i)) {
      words.copyWithin(i * stride, j * stride, (j + 1) * stride);
      if (keys !== undefined) keys[i] = keys[j];
      if (vals !== undefined) vals[i] = vals[j];
      i = j;
    }
    words.fill(0, i * stride, (i + 1) * stride);
    if (keys !== undefined) keys[i] = undefined;
    if (vals !== undefined) vals[i] = undefined;
    this._size--;
    return true;
  }

  *entries(): IterableIterator<[string, V]> {
    for (let i = 0; i < this.cap; i++) if (this.words[i * this.stride] !== 0) yield [this.keyAt(i), this.valueAt(i)];
  }
}
