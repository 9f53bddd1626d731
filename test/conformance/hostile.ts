/**
 * Hostile request bodies, shared by the wire tests (test/e2e/wire.test.ts) and the hardening
 * benchmark (bench/hardening.ts): the shapes that cost seconds of CPU before bodies were bounded,
 * malformed protobuf, malformed UTF-8.
 */

export const varint = (n: number): number[] => {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
};
export const field = (no: number, bytes: Uint8Array | number[]): Buffer => Buffer.from([...varint((no << 3) | 2), ...varint(bytes.length), ...bytes]);

/** The hostile shapes of the report, each ~2–4 MB. */
export const shapes = {
  /** EvaluateBatch / BatchCreateSubjects: 2,000,000 empty items (hex 0a00 repeated). */
  emptyItems: () => Buffer.alloc(4_000_000, Buffer.from([0x0a, 0x00])),
  /** Evaluate whose `context` Struct holds 200,000 keys (binary). */
  structKeys: () => {
    const entries = Array.from({ length: 200_000 }, (_, i) => field(1, [...field(1, Buffer.from(`k${i}`)), 0x12, 0x02, 0x08, 0x00]));
    return Buffer.concat([field(2, Buffer.from('scope_x')), field(3, Buffer.from('read')), field(5, Buffer.concat(entries))]);
  },
  /** Evaluate with 2,000,000 fields its type does not declare (field 15, varint 0). */
  unknownFields: () => Buffer.alloc(4_000_000, Buffer.from([0x78, 0x00])),
  /** A JSON Evaluate whose context has 200,000 keys. */
  jsonKeys: () => Buffer.from(`{"actor":{"subjectId":"s"},"scopeId":"scope_x","action":"read","context":{${Array.from({ length: 200_000 }, (_, i) => `"k${i}":0`).join(',')}}}`),
  /** A JSON Evaluate whose context holds an array of 1,000,000 zeros. */
  jsonZeros: () => Buffer.from(`{"actor":{"subjectId":"s"},"scopeId":"scope_x","action":"read","context":{"a":[${Array(1_000_000).fill('0').join(',')}]}}`),
};

/** Evaluate bodies that are malformed protobuf (each a field in the wrong wire type, or a varint of 11 bytes). */
export const MALFORMED: [string, string, string][] = [
  ['1005', 'scopeId', 'scope_id sent as a varint'],
  ['0801', 'actor', 'actor sent as a varint'],
  ['1d01020304', 'action', 'action sent as a fixed32'],
  ['3a0c08ffffffffffffffffffff01', 'consistency.minRevision', 'an 11-byte varint in consistency.minRevision'],
];

/** JSON text with a malformed UTF-8 sequence in `action`: raw 0xFF, overlong C0 80, CESU-8 ED A0 80. */
export const BAD_UTF8: [string, number[]][] = [['0xFF', [0xff]], ['overlong C0 80', [0xc0, 0x80]], ['CESU-8 ED A0 80', [0xed, 0xa0, 0x80]]];
export const jsonWith = (scopeId: string, bytes: number[]) =>
  Buffer.concat([Buffer.from(`{"actor":{"subjectId":"s"},"scopeId":"${scopeId}","action":"re`), Buffer.from(bytes), Buffer.from('ad"}')]);

