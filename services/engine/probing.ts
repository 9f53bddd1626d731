/**
 * What {@link IdTable} and {@link NumTable} share: open addressing with linear probing over an
 * `Int32Array` of fixed-size slots whose first word is the key's hash (0 marks a free slot),
 * a seeded hash, a capacity of any size (not only a power of two) kept at most 3/4 full, a
 * rebuild with a fresh seed when an insert probes too far, and backward-shift deletion (no
 * tombstones).
 *
 * A hash's home slot is `floor(hash × capacity / 2^32)` (a multiply-high, "fastrange"), so a
 * table can be sized to its count: 1M resources take 1,333,334 slots where the next power of
 * two took 2^21. Probe runs wrap from the last slot to slot 0.
 *
 * Plain functions over the words array and the slot's stride in words: each table calls them
 * with its own constant stride, so the loops stay monomorphic and no closure is made per call.
 */

/** An insert probing further than this rebuilds the table with a new seed. */
export const MAX_PROBE = 64;
/** Fewest slots a table has. */
export const MIN_CAPACITY = 16;
/** How much a full table grows by (from 3/4 full to 1/2 full). */
export const GROWTH = 1.5;

/** 2^-32: scales a product of a 32-bit hash and a capacity down to a slot. */
const TWO_NEG_32 = 1 / 4294967296;

/** A table's hash seed: random, so that a tenant choosing ids cannot aim at its slots. */
export function randomSeed(): number {
  return (Math.random() * 0x100000000) | 0;
}

/** Seeded FNV-1a with a murmur3 finaliser (spreads the bits the home slot is taken from); never 0. */
export function hashId(key: string, seed: number): number {
  let h = seed ^ 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return finish(h);
}

/**
 * {@link hashId}'s hash over the 16 bytes of four int32 words (a packed id, packed-id.ts), high
 * byte first: 16 steps where the id's string takes 45. Byte by byte, not a word per step: a
 * word's flipped top bit passes a multiply unchanged, so flipping it in two words would collide
 * under every seed.
 */
export function hashWords(w0: number, w1: number, w2: number, w3: number, seed: number): number {
  let h = seed ^ 0x811c9dc5;
  h = fnvWord(h, w0);
  h = fnvWord(h, w1);
  h = fnvWord(h, w2);
  return finish(fnvWord(h, w3));
}

function fnvWord(h: number, w: number): number {
  h = Math.imul(h ^ (w >>> 24), 0x01000193);
  h = Math.imul(h ^ ((w >>> 16) & 255), 0x01000193);
  h = Math.imul(h ^ ((w >>> 8) & 255), 0x01000193);
  return Math.imul(h ^ (w & 255), 0x01000193);
}

/** The murmur3 finaliser; never 0 (0 marks a free slot). */
function finish(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h === 0 ? 1 : h;
}

/**
 * The home slot of hash `h` in a table of `capacity` slots: the high part of the unsigned hash
 * times the capacity. Exact below 2^21 slots; above, the product rounds, the same way for the
 * same hash, and stays below `capacity`.
 */
export function homeSlot(h: number, capacity: number): number {
  return ((h >>> 0) * capacity * TWO_NEG_32) | 0;
}

/** Slots for `entries` entries: at least {@link MIN_CAPACITY}, at most 3/4 full, no more. */
export function capacityFor(entries: number): number {
  return Math.max(MIN_CAPACITY, Math.ceil((entries * 4) / 3));
}

/** Slots a table of `capacity` slots grows to when full. */
export function grownCapacity(capacity: number): number {
  return Math.ceil(capacity * GROWTH);
}

/** Whether `entries` entries fill more than 3/4 of `capacity` slots (then the table grows). */
export function overfull(entries: number, capacity: number): boolean {
  return entries * 4 > capacity * 3;
}

/**
 * Whether an insert that probed `distance` slots rebuilds the table with another seed: a long
 * run under a fresh seed means crafted or unlucky keys. At most once per size/2 inserts since
 * the last rebuild, so that keys colliding under every seed still cost O(1) each, amortised.
 */
export function needsReseed(distance: number, insertsSinceRebuild: number, size: number): boolean {
  return distance > MAX_PROBE && insertsSinceRebuild * 2 >= size;
}

/**
 * The first free slot of the probe run that starts at the home slot of hash `h`. The table is
 * never full, so the run ends.
 */
export function freeSlot(words: Int32Array, stride: number, capacity: number, h: number): number {
  let i = homeSlot(h, capacity);
  while (words[i * stride] !== 0) if (++i === capacity) i = 0;
  return i;
}

/** How many slots past the home slot of hash `h` slot `slot` lies. */
export function probeDistance(slot: number, h: number, capacity: number): number {
  const d = slot - homeSlot(h, capacity);
  return d < 0 ? d + capacity : d;
}

/**
 * Backward-shift deletion (linear probing without tombstones): whether the entry in slot `j`,
 * whose home slot is `home`, may move into the hole at slot `i` before it in its probe run; it
 * may unless its home lies in (i, j], cyclically.
 */
export function mayShiftBack(i: number, j: number, home: number): boolean {
  return i <= j ? home <= i || home > j : home <= i && home > j;
}

/**
 * The slot after the hole at `hole`, in its probe run, whose entry moves into the hole next, or
 * -1 when the run ends first (then the hole stays free). A delete moves that entry into the hole,
 * takes its old slot as the new hole, and asks again.
 */
export function nextShift(words: Int32Array, stride: number, capacity: number, hole: number): number {
  for (let j = hole + 1 === capacity ? 0 : hole + 1; words[j * stride] !== 0; j = j + 1 === capacity ? 0 : j + 1) {
    if (mayShiftBack(hole, j, homeSlot(words[j * stride], capacity))) return j;
  }
  return -1;
}
