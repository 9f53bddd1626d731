/**
 * A snapshot chunk's rows as `RowBlock`s (see the proto), for a client that asked for them: per
 * kind, each row's proto JSON values as numbers into the block's values, so a value the rows
 * share (tenant, type, scope, creator, timestamp, `{}`) is written once per chunk and the
 * client decodes no JSON text per row. A 1M-resource + 1M-grant tenant: about a quarter of the
 * bytes of one JSON `Entity` per row (see the README, Snapshot scale).
 *
 * Encoded by hand as rows are added, like ChunkEntities, and carried the same way: as the chunk's
 * `$unknown` entries numbered 8, which protobuf-es writes back unchanged and a client decodes
 * into `row_blocks` (row-blocks.test.ts compares the bytes with protobuf-es's).
 */
import type { JsonObject } from '@bufbuild/protobuf';
import { WireType } from '@bufbuild/protobuf/wire';
import { varintBytes, writeVarint } from './wire.js';

/** SnapshotChunk.row_blocks. */
const ROW_BLOCKS_FIELD = 8;
const KIND_TAG = (1 << 3) | WireType.LengthDelimited;
const FIELDS_TAG = (2 << 3) | WireType.LengthDelimited;
const STRINGS_TAG = (3 << 3) | WireType.LengthDelimited;
const JSON_VALUES_TAG = (4 << 3) | WireType.LengthDelimited;
const CELLS_TAG = (5 << 3) | WireType.LengthDelimited;

/** New values a field's look-ups may find before sharing is dropped for it, unless most were found. */
const SHARING_TRIAL = 64;
const fieldBytes = (n: number) => 1 + varintBytes(n) + n;

/**
 * Buffers a chunk's blocks are done with, for the next chunk's blocks: new ones per chunk (each
 * grown by doubling) were most of a snapshot's Buffer allocations, and V8 counts Buffers as
 * external memory and starts full collections for them (`--trace-incremental-marking`: "external
 * memory pressure"). At most `KEPT` of each are kept, so what is held between chunks is about what
 * one chunk used.
 */
class BufferPool {
  private static readonly KEPT = 8;
  private readonly bytes: Buffer[] = [];
  private readonly cells: Uint32Array[] = [];

  buffer(): Buffer {
    return this.bytes.pop() ?? Buffer.allocUnsafe(4096);
  }

  cellArray(): Uint32Array {
    return this.cells.pop() ?? new Uint32Array(1024);
  }

  give(buf: Buffer, cells?: Uint32Array): void {
    if (this.bytes.length < BufferPool.KEPT) this.bytes.push(buf);
    if (cells && this.cells.length < BufferPool.KEPT) this.cells.push(cells);
  }
}

/**
 * One of a block's value lists (its strings, or its JSON values): a growing buffer of encoded
 * length-delimited fields of one tag, each value numbered in order, and the numbers of the
 * values written so far that may be shared.
 */
class ValueList {
  buf: Buffer;
  used = 0;
  count = 0;
  readonly shared = new Map<string, number>();

  constructor(
    private readonly tag: number,
    pool: BufferPool,
  ) {
    this.buf = pool.buffer();
  }

  /** Writes a value; returns its number. */
  put(s: string): number {
    const n = Buffer.byteLength(s, 'utf8');
    const need = this.used + 1 + 5 + n;
    if (need > this.buf.length) {
      const bigger = Buffer.allocUnsafe(Math.max(need, this.buf.length * 2));
      this.buf.copy(bigger, 0, 0, this.used);
      this.buf = bigger;
    }
    this.buf[this.used] = this.tag;
    const at = writeVarint(this.buf, this.used + 1, n);
    this.used = at + (n === 0 ? 0 : this.buf.write(s, at, n, 'utf8'));
    return this.count++;
  }
}

/** One kind's rows of the chunk being made. */
class Block {
  readonly strings: ValueList;
  readonly jsonValues: ValueList;
  /** Per field, the last value written and its cell: consecutive rows often repeat one (tenant, type, creator). */
  private readonly lastValue: (string | undefined)[];
  private readonly lastRef: number[];
  cells: Uint32Array;
  cellCount = 0;
  cellBytes = 0;
  /** Encoded bytes of kind and fields. */
  readonly head: number;
  /** Per field: whether its values are looked up to be shared, and how often that paid off. */
  private readonly sharing: boolean[];
  private readonly hits: number[];
  private readonly misses: number[];

  constructor(
    readonly kind: string,
    readonly fields: readonly string[],
    private readonly pool: BufferPool,
  ) {
    this.strings = new ValueList(STRINGS_TAG, pool);
    this.jsonValues = new ValueList(JSON_VALUES_TAG, pool);
    this.cells = pool.cellArray();
    let head = fieldBytes(Buffer.byteLength(kind, 'utf8'));
    for (const f of fields) head += fieldBytes(Buffer.byteLength(f, 'utf8'));
    this.head = head;
    // An id is every row's own: never worth a look-up.
    this.sharing = fields.map((f) => f !== 'id');
    this.hits = fields.map(() => 0);
    this.misses = fields.map(() => 0);
    this.lastValue = fields.map(() => undefined);
    this.lastRef = fields.map(() => 0);
  }

  /** Encoded bytes of the block's content (what follows its tag and length). */
  get length(): number {
    return this.head + this.strings.used + this.jsonValues.used + (this.cellCount === 0 ? 0 : fieldBytes(this.cellBytes));
  }

  /** Encoded bytes of the block as a field of the chunk. */
  get bytes(): number {
    return fieldBytes(this.length);
  }

  add(values: (string | undefined)[], isString: boolean[]): void {
    const width = this.fields.length;
    if (this.cellCount + width > this.cells.length) {
      const bigger = new Uint32Array(this.cells.length * 2);
      bigger.set(this.cells);
      this.cells = bigger;
    }
    for (let f = 0; f < width; f++) {
      const v = values[f];
      let cell = 0;
      if (v !== undefined) {
        // The previous row's value again (and of the same type: odd cells are strings): its
        // number, without hashing the value. Any value of the block may be reused.
        if (v === this.lastValue[f] && (this.lastRef[f] & 1) === (isString[f] ? 1 : 0)) {
          cell = this.lastRef[f];
          this.hits[f]++;
        } else {
          cell = isString[f] ? 2 * this.ref(this.strings, v, f) + 1 : 2 * this.ref(this.jsonValues, v, f) + 2;
          this.lastValue[f] = v;
          this.lastRef[f] = cell;
        }
      }
      this.cells[this.cellCount++] = cell;
      this.cellBytes += varintBytes(cell);
    }
  }

  /**
   * The number of a value in its list: the one it was written under when the field's values are
   * shared and it was, else a new one. A field whose values seldom repeat (ids, external ids, a
   * grant's resource, a resource's own attributes) stops being looked up: a map entry per unique
   * value cost more than writing the value (~5 µs a row); those that do (the tenant, `{}`) stay shared.
   */
  private ref(list: ValueList, v: string, f: number): number {
    if (this.sharing[f]) {
      const known = list.shared.get(v);
      if (known !== undefined) {
        this.hits[f]++;
        return known;
      }
      list.shared.set(v, list.count);
      if (++this.misses[f] >= SHARING_TRIAL && this.hits[f] < this.misses[f]) this.sharing[f] = false;
    }
    return list.put(v);
  }

  /** The block as a chunk field's data: its length, then kind, fields, strings, JSON values, cells. */
  encode(): Buffer {
    const len = this.length;
    const out = Buffer.allocUnsafe(varintBytes(len) + len);
    let at = writeVarint(out, 0, len);
    const put = (tag: number, s: string) => {
      const n = Buffer.byteLength(s, 'utf8');
      out[at++] = tag;
      at = writeVarint(out, at, n);
      at += out.write(s, at, n, 'utf8');
    };
    put(KIND_TAG, this.kind);
    for (const f of this.fields) put(FIELDS_TAG, f);
    at += this.strings.buf.copy(out, at, 0, this.strings.used);
    at += this.jsonValues.buf.copy(out, at, 0, this.jsonValues.used);
    if (this.cellCount > 0) {
      out[at++] = CELLS_TAG;
      at = writeVarint(out, at, this.cellBytes);
      for (let i = 0; i < this.cellCount; i++) at = writeVarint(out, at, this.cells[i]);
    }
    if (at !== out.length) throw new Error(`row-blocks: encoded ${at} bytes of ${out.length}`);
    return out;
  }

  /** Hands its buffers to the pool: the block is encoded and not used again. */
  release(): void {
    this.pool.give(this.strings.buf, this.cells);
    this.pool.give(this.jsonValues.buf);
  }
}

/**
 * The row blocks of one chunk, by kind. `fieldsOf(kind)` gives a kind's JSON field names (the
 * block's `fields`, in that order).
 */
export class ChunkRowBlocks {
  private blocks = new Map<string, Block>();
  private readonly pool = new BufferPool();
  private readonly values: (string | undefined)[] = [];
  private readonly isString: boolean[] = [];
  /** Encoded bytes of the blocks as the chunk's fields (exact). */
  bytes = 0;
  /** Rows added since the last take(). */
  count = 0;

  constructor(private readonly fieldsOf: (kind: string) => { fields: readonly string[]; index: ReadonlyMap<string, number> }) {}

  /**
   * Bytes the chunk may grow by when `row` is added, from above (every value new, every cell five
   * bytes, the block's length growing), or undefined when the row cannot go in a block (a key
   * that is not one of its kind's fields): the caller sends it as an Entity.
   */
  bound(kind: string, row: JsonObject): number | undefined {
    const { fields, index } = this.fieldsOf(kind);
    const values = this.cleared(fields.length);
    const isString = this.isString;
    for (const key in row) {
      const f = index.get(key);
      const v = row[key];
      if (f === undefined) return undefined;
      // As JSON.stringify does: a key whose value is undefined is not there.
      if (v === undefined) continue;
      // A string goes as UTF-8. Rows come from PostgreSQL, whose text is valid Unicode, so this
      // is exact (a lone surrogate would become U+FFFD, where an Entity's JSON escapes it).
      const s = typeof v === 'string';
      values[f] = s ? v : JSON.stringify(v);
      isString[f] = s;
    }
    return this.measure(kind, fields);
  }

  /**
   * bound() for a row whose values `fill` writes itself (strings as they are, other values as
   * JSON text, at their field's place in `index`), with no JSON object made; undefined when
   * `fill` returns false (the caller then makes the object and calls bound()).
   */
  boundFilled<A, B>(
    kind: string,
    fill: (a: A, b: B, index: ReadonlyMap<string, number>, values: (string | undefined)[], isString: boolean[]) => boolean,
    a: A,
    b: B,
  ): number | undefined {
    const { fields, index } = this.fieldsOf(kind);
    return fill(a, b, index, this.cleared(fields.length), this.isString) ? this.measure(kind, fields) : undefined;
  }

  private cleared(width: number): (string | undefined)[] {
    const values = this.values;
    values.length = width;
    this.isString.length = width;
    values.fill(undefined);
    return values;
  }

  /** The bound of the values just filled. */
  private measure(kind: string, fields: readonly string[]): number {
    let bound = 10;
    // UTF-16 units to UTF-8 bytes: at most three each.
    for (const text of this.values) if (text !== undefined) bound += 3 * text.length + 6 + 5;
    if (!this.blocks.has(kind)) bound += 16 + 3 * kind.length + fields.reduce((n, f) => n + 6 + 3 * f.length, 0);
    return bound;
  }

  /** Adds the row that the last bound() or boundFilled() measured (and accepted). */
  add(kind: string): void {
    let block = this.blocks.get(kind);
    if (block === undefined) {
      this.blocks.set(kind, (block = new Block(kind, this.fieldsOf(kind).fields, this.pool)));
    } else this.bytes -= block.bytes;
    block.add(this.values, this.isString);
    this.bytes += block.bytes;
    this.count++;
  }

  /** The blocks as the chunk's `$unknown` entries; the next rows start new blocks. */
  take(): { no: number; wireType: WireType; data: Uint8Array }[] {
    const out = [...this.blocks.values()].map((b) => {
      const data = b.encode();
      b.release();
      return { no: ROW_BLOCKS_FIELD, wireType: WireType.LengthDelimited, data };
    });
    this.blocks = new Map();
    this.bytes = 0;
    this.count = 0;
    return out;
  }
}
