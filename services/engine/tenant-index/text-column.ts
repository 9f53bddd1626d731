/**
 * A column of optional strings by node number, their UTF-8 bytes kept end to end in one buffer.
 *
 * Why: a resource's display name is read only when its row is (rows, views, match definitions
 * naming `displayName`), never on the common decision path, yet as a JS string it takes a 16-byte
 * header and padding besides its characters, and a reference of 8 bytes: 56 bytes for a name of
 * 28 characters, where its bytes and two int32 here take 36. A value is made into a string again
 * when read. A string that would not come back the same from UTF-8 (a lone surrogate) is kept as
 * it is, in a map. Space freed by replaced values is reclaimed when it passes the live bytes.
 */

/** `lens` markers: the value is undefined, null, or a string kept in `others`. */
const UNDEFINED = -1;
const NULL = -2;
const OTHER = -3;

export class TextColumn {
  private bytes: Buffer;
  /** Bytes of `bytes` in use (live values and garbage). */
  private used = 0;
  /** Bytes of `bytes` no value points at any more. */
  private garbage = 0;
  private offsets: Int32Array;
  private lens: Int32Array;
  private readonly others = new Map<number, string>();

  constructor(room: number) {
    this.bytes = Buffer.allocUnsafe(Math.max(1024, room * 32));
    this.offsets = new Int32Array(room);
    this.lens = new Int32Array(room).fill(UNDEFINED);
  }

  get(n: number): string | null | undefined {
    const len = this.lens[n];
    if (len >= 0) {
      const at = this.offsets[n];
      return this.bytes.toString('utf8', at, at + len);
    }
    return len === UNDEFINED ? undefined : len === NULL ? null : this.others.get(n);
  }

  set(n: number, v: string | null | undefined): void {
    this.clear(n);
    if (v === undefined) return;
    if (v === null) {
      this.lens[n] = NULL;
      return;
    }
    // String.prototype.isWellFormed: Node 20's V8 has it, the TypeScript lib of this build (ES2022) not.
    if (!(v as unknown as { isWellFormed(): boolean }).isWellFormed()) {
      this.lens[n] = OTHER;
      this.others.set(n, v);
      return;
    }
    const len = Buffer.byteLength(v, 'utf8');
    if (this.used + len > this.bytes.length) this.makeRoom(len);
    this.bytes.write(v, this.used, len, 'utf8');
    this.offsets[n] = this.used;
    this.lens[n] = len;
    this.used += len;
  }

  /** Columns of `room` numbers (values past it are dropped). */
  resize(room: number): void {
    const keep = Math.min(room, this.lens.length);
    for (let n = keep; n < this.lens.length; n++) this.clear(n);
    const offsets = new Int32Array(room);
    offsets.set(this.offsets.subarray(0, keep));
    const lens = new Int32Array(room).fill(UNDEFINED);
    lens.set(this.lens.subarray(0, keep));
    this.offsets = offsets;
    this.lens = lens;
    // Once a build is done (`ResourceNodes.trim`): the live bytes and a little room.
    this.compact(this.used - this.garbage + 1024);
  }

  /** Bytes held for values (the buffer's whole length), for diagnostics. */
  get byteLength(): number {
    return this.bytes.length;
  }

  private clear(n: number): void {
    const len = this.lens[n];
    if (len > 0) this.garbage += len;
    else if (len === OTHER) this.others.delete(n);
    this.lens[n] = UNDEFINED;
  }

  /** Room for `len` more bytes: the garbage dropped when it is at least the live bytes, else a larger buffer. */
  private makeRoom(len: number): void {
    const need = this.used - this.garbage + len;
    this.compact(this.garbage >= this.used - this.garbage && need <= this.bytes.length ? this.bytes.length : Math.max(this.bytes.length * 2, need));
  }

  /** Copies the live values to the start of a buffer of `size` bytes (at least the live bytes), in number order. */
  private compact(size: number): void {
    const from = this.bytes;
    const to = Buffer.allocUnsafe(size);
    let at = 0;
    for (let n = 0; n < this.lens.length; n++) {
      const len = this.lens[n];
      if (len <= 0) continue;
      from.copy(to, at, this.offsets[n], this.offsets[n] + len);
      this.offsets[n] = at;
      at += len;
    }
    this.bytes = to;
    this.used = at;
    this.garbage = 0;
  }
}
