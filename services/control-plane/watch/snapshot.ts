/**
 * A tenant's decision data at one revision, as Watch snapshot chunks: every engine row of the
 * tenant at one revision R (tenant-rows.ts: one repeatable-read transaction, a plain-SQL cursor
 * per kind read in batches, the next batch read while the current one is converted and sent), converted to the
 * same proto JSON as the ORM route (snapshot.test.ts compares both over every kind) and cut into
 * chunks of at most `chunkBytes`. Memory is at most two batches of rows plus the chunks in flight,
 * whatever the tenant's size.
 *
 * A chunk's entities are encoded here, by hand, as they are added (see ChunkEntities): protobuf-es
 * encoding them one message at a time cost more than reading and converting the rows.
 */
import { create, type UnknownField } from '@bufbuild/protobuf';
import { WireType } from '@bufbuild/protobuf/wire';
import type { EntityKind } from '../../engine/mod.js';
import type { Database } from '../../store/db.js';
import { KINDS, changeDataText, messageToChangeData, type KindDef, type Row } from '../../store/kinds.js';
import { EntitySchema, SnapshotChunkSchema, type Entity, type SnapshotChunk } from '../../../gen/authz/v1/snapshot_service_pb.js';
import { tenantRows } from '../../store/tenant-rows.js';
import { ENGINE_STORE_KINDS, STORE_KIND } from '../engine-kinds.js';
import { ChunkRowBlocks } from './row-blocks.js';
import { varintBytes, writeVarint } from './wire.js';

/** The wire limit of one message of the stream (proto comment): 4 MiB. */
export const MAX_CHUNK_BYTES = 4 * 1024 * 1024;

export interface SnapshotOptions {
  /** Rows read per batch of a kind's cursor. */
  batchRows: number;
  /** Most bytes of one chunk (encoded, estimated from above); at most MAX_CHUNK_BYTES. */
  chunkBytes: number;
  /** The control plane's gate, carried by every chunk. */
  gate: string;
  /** Rows as RowBlocks (the client set `accept_row_blocks`), else one Entity each. */
  rowBlocks?: boolean;
  /**
   * Entities as `Entity` messages in `entities` instead of pre-encoded (ChunkEntities), and no
   * row blocks: for a call in JSON, whose serializer writes no unknown fields (pre-encoded rows
   * would vanish from its chunks).
   */
  entityMessages?: boolean;
}

/** A kind's JSON field names in message order, and each one's position (a RowBlock's `fields`). */
const blockFields = new Map<string, { fields: readonly string[]; index: ReadonlyMap<string, number> }>();
export function fieldsOfKind(kind: string): { fields: readonly string[]; index: ReadonlyMap<string, number> } {
  let f = blockFields.get(kind);
  if (f === undefined) {
    const fields = (KINDS[STORE_KIND[kind as EntityKind]] as KindDef).message.fields.map((d) => d.jsonName);
    blockFields.set(kind, (f = { fields, index: new Map(fields.map((name, i) => [name, i])) }));
  }
  return f;
}

/** Bytes of a string in UTF-8 (an upper bound is enough: the estimate must not undercount). */
const utf8 = (s: string) => Buffer.byteLength(s, 'utf8');

/** Encoded size of an entity inside a chunk, from above: its three strings plus tags and lengths. */
export function entityBytes(e: { kind: string; id: string; json: string }): number {
  return utf8(e.kind) + utf8(e.id) + utf8(e.json) + 24;
}

/** The snapshot entity of a row: its proto JSON, every field present. */
export function rowEntity(kind: EntityKind, row: Row): Entity {
  const d = KINDS[STORE_KIND[kind]] as KindDef;
  return { $typeName: 'authz.v1.Entity', kind, id: row.id as string, json: JSON.stringify(messageToChangeData(d, row)) };
}

/** Tags of Entity's fields (kind = 1, id = 2, json = 3; all strings, wire type LEN). */
const KIND_TAG = (1 << 3) | WireType.LengthDelimited;
const ID_TAG = (2 << 3) | WireType.LengthDelimited;
const JSON_TAG = (3 << 3) | WireType.LengthDelimited;
/** SnapshotChunk.entities. */
const ENTITIES_FIELD = 5;

/**
 * The entities of one chunk, encoded as they are added, carried as the chunk's `$unknown`
 * fields. protobuf-es (v2) keeps the fields it does not know of a message it decoded in
 * `$unknown` as `{ no, wireType, data }` (data: the bytes after the tag) and `toBinary` writes
 * them back unchanged (`writeUnknownFields`, on by default, and connect-node does not turn it
 * off). An entry numbered 5 whose data is a length-prefixed encoded Entity is therefore on the
 * wire exactly an element of `repeated Entity entities = 5`: a client decodes it into
 * `entities` like any other. The bytes are those protobuf-es would write for the same Entity
 * (snapshot.test.ts compares them), written straight into one buffer per chunk instead of
 * through a message object and its writer per entity (about 8 µs a row here, more than
 * reading and converting the row). So a chunk made here has `entities` empty: read it back
 * with `fromBinary(SnapshotChunkSchema, toBinary(...))`, as a client does.
 */
export class ChunkEntities {
  /** Made on the first add: a snapshot of row blocks adds no entity, and an unused 4 MiB buffer per chunk started full collections (V8 counts Buffers as external memory). */
  private buf: Buffer | undefined;
  private used = 0;
  private entries: UnknownField[] = [];
  /** Encoded bytes of the entries (what they add to the chunk, tags included). */
  bytes = 0;

  constructor(private readonly capacity: number) {}

  get count(): number {
    return this.entries.length;
  }

  add(kind: string, id: string, json: string): void {
    const k = Buffer.byteLength(kind, 'utf8');
    const i = Buffer.byteLength(id, 'utf8');
    const j = Buffer.byteLength(json, 'utf8');
    // proto3: an empty string is not written (as protobuf-es does).
    const field = (n: number) => (n === 0 ? 0 : 1 + varintBytes(n) + n);
    const len = field(k) + field(i) + field(j);
    const need = varintBytes(len) + len;
    if (this.buf === undefined || this.used + need > this.buf.length) {
      // A new chunk's first entity, or a single entity larger than the chunk; earlier entries keep the old buffer.
      this.buf = Buffer.allocUnsafe(Math.max(this.capacity, need));
      this.used = 0;
    }
    const buf = this.buf;
    const start = this.used;
    let at = writeVarint(buf, start, len);
    const put = (tag: number, s: string, n: number) => {
      if (n === 0) return;
      buf[at++] = tag;
      at = writeVarint(buf, at, n);
      at += buf.write(s, at, n, 'utf8');
    };
    put(KIND_TAG, kind, k);
    put(ID_TAG, id, i);
    put(JSON_TAG, json, j);
    this.used = at;
    this.entries.push({ no: ENTITIES_FIELD, wireType: WireType.LengthDelimited, data: buf.subarray(start, at) });
    this.bytes += 1 + need;
  }

  /** The entries added so far; the next ones go to a fresh buffer (the chunk keeps these). */
  take(): UnknownField[] {
    const out = this.entries;
    this.entries = [];
    this.bytes = 0;
    this.buf = undefined;
    this.used = 0;
    return out;
  }
}

/**
 * Yields the snapshot's chunks in order (index from 0, the last marked `last`; chunk 0 with the
 * number of resources), their entities pre-encoded (see ChunkEntities). The transaction stays open until the generator ends or is
 * returned (rolled back: it only read). `not_found` for an unknown tenant.
 */
export async function* snapshotChunks(db: Database, tenantId: string, opts: SnapshotOptions): AsyncGenerator<SnapshotChunk> {
  let revision = 0n;
  let resourceCount = 0n;
  const limit = Math.min(opts.chunkBytes, MAX_CHUNK_BYTES);
  const base = utf8(tenantId) + utf8(opts.gate) + 32;
  let index = 0;
  const entities = new ChunkEntities(limit);
  let messages: Entity[] = [];
  const blocks = opts.rowBlocks && !opts.entityMessages ? new ChunkRowBlocks(fieldsOfKind) : undefined;
  // Bytes of the chunk but for its blocks (which count their own, exactly).
  let bytes = base;
  const chunk = (last: boolean) => {
    // The count on chunk 0 only (see the proto): a client sizes its index once, from the start.
    const c = create(SnapshotChunkSchema, { tenantId, revision, index, last, resourceScopeGate: opts.gate, resourceCount: index === 0 ? resourceCount : 0n });
    index++;
    c.$unknown = blocks ? [...entities.take(), ...blocks.take()] : entities.take();
    c.entities = messages;
    messages = [];
    return c;
  };
  for await (const { kind, def, columns, texts } of tenantRows(db, tenantId, ENGINE_STORE_KINDS, { rows: opts.batchRows }, (r) => (revision = BigInt(r)), (n) => (resourceCount = BigInt(n)))) {
    for (const text of texts) {
      const id = columns.id(text);
      let data: ReturnType<typeof messageToChangeData> | undefined;
      let bound: number | undefined;
      if (blocks) {
        bound = blocks.boundFilled(kind, changeDataText, columns, text);
        if (bound === undefined) bound = blocks.bound(kind, (data = messageToChangeData(def, columns.row(text))));
      }
      if (blocks && bound !== undefined) {
        if (entities.count + blocks.count > 0 && bytes + blocks.bytes + bound > limit) {
          yield chunk(false);
          bytes = base;
        }
        blocks.add(kind);
        continue;
      }
      const json = JSON.stringify(data ?? messageToChangeData(def, columns.row(text)));
      // The same estimate as ever (an upper bound), so chunks are cut where they were.
      const size = utf8(kind) + utf8(id) + utf8(json) + 24;
      if (entities.count + messages.length + (blocks?.count ?? 0) > 0 && bytes + (blocks?.bytes ?? 0) + size > limit) {
        yield chunk(false);
        bytes = base;
      }
      if (opts.entityMessages) messages.push(create(EntitySchema, { kind, id, json }));
      else entities.add(kind, id, json);
      bytes += size;
    }
  }
  yield chunk(true);
}

/** Estimated encoded bytes of a chunk (what the stream's buffer bound counts). */
export function chunkBytes(c: SnapshotChunk): number {
  let n = utf8(c.tenantId) + utf8(c.resourceScopeGate) + 32;
  for (const e of c.entities) n += entityBytes(e);
  // Pre-encoded entities (ChunkEntities): their exact size.
  for (const u of c.$unknown ?? []) n += u.data.length + 2;
  return n;
}
