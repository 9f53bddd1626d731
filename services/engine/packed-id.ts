/**
 * Server-issued ids (`{namespace}_{uuidv7}`, services/common/ids.ts) as four int32 words.
 *
 * Why: a grant id of 52 characters is a 72-byte string in V8 (a 16-byte header, a byte a
 * character, rounded up), and the index holds one for every ownership grant: a third of a
 * grant's memory. Four 32-bit integers stored in an array take 8 bytes each and no heap object
 * (V8 keeps them as small integers on Node's 64-bit builds, which have no pointer compression),
 * and the string is made again only when a row is asked for.
 *
 * Packing is exact or not done: only `prefix` followed by a UUID in the canonical lowercase
 * form (8-4-4-4-12 hex digits) packs, since that is the only form that unpacks to the same
 * string. Any other id (a client-chosen suffix, capitals) stays a string.
 */

/** Characters of a canonical UUID. */
const UUID_CHARS = 36;
/** Offsets of the four 8-digit groups of hex digits inside a UUID (dashes at 8, 13, 18, 23). */
const DASHES = [8, 13, 18, 23];

/** Char code → hex digit value for `0-9a-f`; -1 for anything else (capitals included). */
const DIGIT = new Int8Array(128).fill(-1);
for (let c = 0; c < 16; c++) DIGIT[c.toString(16).charCodeAt(0)] = c;

/** Byte → its two lowercase hex digits. */
const HEX2 = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));

/** The words of the last id packed by {@link packId}. */
export const PACKED = new Int32Array(4);

/** 8 hex digits of `id` from `at`, skipping a dash at `skip` (or -1): their value, or undefined. */
function word(id: string, at: number, skip: number): number | undefined {
  let w = 0;
  for (let i = at, n = 0; n < 8; i++) {
    if (i === skip) continue;
    const c = id.charCodeAt(i);
    const d = c < 128 ? DIGIT[c] : -1;
    if (d < 0) return undefined;
    w = (w << 4) | d;
    n++;
  }
  return w | 0;
}

/**
 * Whether `id` is `prefix` and a canonical lowercase UUID; when it is, its four words are in
 * {@link PACKED} until the next call.
 */
export function packId(id: string, prefix: string): boolean {
  const p = prefix.length;
  if (id.length !== p + UUID_CHARS || !id.startsWith(prefix)) return false;
  for (const d of DASHES) if (id.charCodeAt(p + d) !== 45 /* - */) return false;
  const w0 = word(id, p, -1);
  const w1 = word(id, p + 9, p + 13);
  const w2 = word(id, p + 19, p + 23);
  const w3 = word(id, p + 28, -1);
  if (w0 === undefined || w1 === undefined || w2 === undefined || w3 === undefined) return false;
  PACKED[0] = w0;
  PACKED[1] = w1;
  PACKED[2] = w2;
  PACKED[3] = w3;
  return true;
}

function hex8(w: number): string {
  return HEX2[(w >>> 24) & 255] + HEX2[(w >>> 16) & 255] + HEX2[(w >>> 8) & 255] + HEX2[w & 255];
}

/** The id that packed into these words with this prefix. */
export function unpackId(prefix: string, w0: number, w1: number, w2: number, w3: number): string {
  const b = hex8(w1);
  const c = hex8(w2);
  return `${prefix}${hex8(w0)}-${b.slice(0, 4)}-${b.slice(4)}-${c.slice(0, 4)}-${c.slice(4)}${hex8(w3)}`;
}
