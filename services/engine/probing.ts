/**
 * What {@link IdTable} and {@link NumTable} share: open addressing with linear probing over an
 * `Int32Array` of fixed-size slots whose first word is the key's hash (0 marks a free slot),
 * a seeded hash, a power-of-two capacity kept at most 3/4 full, a rebuild with a fresh seed when
 * an insert probes too far, and backward-shift deletion (no tombstones).
 *
 * Plain functions over the words array and the slot's stride in words: each table calls them
 * with its own constant stride, so the loops stay monomorphic and no closure is made per call.
 */

/** An insert probing further than this rebuilds the table with a new seed. */
export const MAX_PROBE = 64;
/** Fewest slots a table has. */
export const MIN_CAPACITY = 16;

/** A table's hash seed: random, so that a tenant choosing ids cannot aim at its slots. */
export function randomSeed(): number {
  return (Math.random() * 0x100000000) | 0;
}

/** Seeded FNV-1a with a murmur3 finaliser (spreads the low bits a mask keeps); never 0. */
export function hashId(key: string, seed: number): number {
  let h = seed ^ 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h === 0 ? 1 : h;
}

/** Slots for `entries` entries: the smallest power of two, at least {@link MIN_CAPACITY}, at most 3/4 full. */
export function capacityFor(entries: number): number {
  let cap = MIN_CAPACITY;
  while (cap * 3 < entries * 4) cap *= 2;
  return cap;
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
export function freeSlot(words: Int32Array, stride: number, mask: number, h: number): number {
  let i = h & mask;
  while (words[i * stride] !== 0) i = (i + 1) & mask;
  return i;
}

/** How many slots past the home slot of hash `h` slot `slot` lies. */
export function probeDistance(slot: number, h: number, mask: number): number {
  return (slot - (h & mask)) & mask;
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
export function nextShift(words: Int32Array, stride: number, mask: number, hole: number): number {
  for (let j = (hole + 1) & mask; words[j * stride] !== 0; j = (j + 1) & mask) {
    if (mayShiftBack(hole, j, words[j * stride] & mask)) return j;
  }
  return -1;
}
