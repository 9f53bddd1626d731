/** Protobuf varints, for the snapshot's hand-encoded entities and row blocks. */

/** Bytes of a varint (of a non-negative 32-bit number). */
export const varintBytes = (n: number) => (n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5);

/** Writes `n` as a varint at `at`; returns the offset after it. */
export function writeVarint(buf: Buffer, at: number, n: number): number {
  while (n >= 0x80) {
    buf[at++] = (n & 0x7f) | 0x80;
    n >>>= 7;
  }
  buf[at++] = n;
  return at;
}
