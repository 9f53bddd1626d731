/**
 * Resource nodes: everything a check reads about one resource, as columns by the node's number
 * (a {@link ResourceNode} is that number). The node's id sits in an {@link IdTable} whose slot
 * also holds the resource's facts ({@link FACT_FLAGS}) and the node's number, so the common check
 * reads one cache line (half of one while every resource id is the service's own: the table's
 * packed layout) and no column. A check that needs more reads the node's hot words (flags, type,
 * parent: one cache line) and the columns it needs. Around the nodes: their numbers (reused after
 * deletes) with the plain-node bitmap and the `createdAt` column, the type slots, the external-id
 * table, and the count of permissions naming each id. Resource types live here too: a type slot
 * carries its type's key.
 *
 * Why columns and not an object per node: a node object of 11 fields took 112 bytes and its
 * reference in a by-number array 8 more; the columns take 16 bytes of hot words, four
 * references and the display name's offset and length, 56 bytes, and a tenant's million
 * resources are a million fewer objects to trace.
 */
import { IdTable } from '../id-table.js';
import type { JsonObject, Policy, Resource, ResourceScopeLink, TagAssignment } from '../model.js';
import { NumTable } from '../num-table.js';
import { PACKED, packId, unpackId } from '../packed-id.js';
import { bagAdd, bagDelete, bagIds, type Multi, type MutableRowBag } from './bags.js';
import { RowTable } from './row-table.js';
import { TextColumn } from './text-column.js';
import {
  F_EXISTS,
  F_LINKS,
  F_NAMED,
  F_POLICIES,
  F_TYPE_SHIFT,
  F_UP,
  F_UP_INHERIT,
  type ParentLink,
  type ResourceNode,
  type ResourceNodeReads,
} from './types.js';

export interface MutableTypeSlot {
  readonly id: string;
  readonly num: number;
  key: string | undefined;
  collections: number;
  /** Number of existing resources of this type: a plan finds the types of a key that have any without visiting them. */
  resources: number;
}

export interface MutableParentLink extends ParentLink {
  readonly parent: ResourceNode;
  readonly child: ResourceNode;
}

/**
 * What few resources have, kept out of the columns: parent links, direct policies, scope links,
 * tags, and the count of links naming the node as a parent. A node makes one when it first
 * gets any of them and drops it when it has none again.
 */
class NodeRelations {
  parents: MutableRowBag<MutableParentLink> | undefined = undefined;
  policies: MutableRowBag<Policy> | undefined = undefined;
  links: MutableRowBag<ResourceScopeLink> | undefined = undefined;
  tags: MutableRowBag<TagAssignment> | undefined = undefined;
  refs = 0;

  empty(): boolean {
    return this.parents === undefined && this.policies === undefined && this.links === undefined && this.tags === undefined && this.refs === 0;
  }
}

/**
 * A resource row's `attributes` ({@link EMPTY_ATTRIBUTES} for `{}`) and `createdBy` as given.
 * Shared between nodes: most resources of a tenant have no attributes, and few subjects create
 * them (see `ResourceNodes.rowFields`).
 */
export interface RowFields {
  readonly attributes: unknown;
  readonly createdBy: unknown;
}

/** Prefix of the resource ids a node keeps as four words (the service's own: packed-id.ts). */
const RESOURCE_PREFIX = 'resource_';

/** The row fields of a node whose row does not exist. */
const NO_ROW_FIELDS: RowFields = Object.freeze({ attributes: undefined, createdBy: undefined });

/** Int32 words per node in `hot`: flags, type slot number + 1, parent's number (-1: none), grants naming it. */
const HOT = 4;
const H_BITS = 0;
const H_TYPE = 1;
const H_UP = 2;
const H_GRANTS = 3;
/** Bits of word H_BITS; `patterns` above them. */
const B_LIVE = 1;
const B_EXISTS = 2;
const B_UP_INHERIT = 4;
const PATTERNS_SHIFT = 3;

/** A resource's `attributes` that were `{}` (so 1M resources without attributes share nothing). */
export const EMPTY_ATTRIBUTES = Symbol('{}');

/** `{}`, as a {@link ResourceView} gives it for attributes given as `{}`. */
const FROZEN_EMPTY: Record<string, never> = Object.freeze({});

export function isEmptyObject(v: unknown): boolean {
  if (v === null || typeof v !== 'object' || Array.isArray(v) || Object.getPrototypeOf(v) !== Object.prototype) return false;
  for (const k in v) if (Object.prototype.hasOwnProperty.call(v, k)) return false;
  return Object.getOwnPropertySymbols(v).length === 0 && Object.getOwnPropertyNames(v).length === 0;
}

/**
 * The milliseconds of a time string that `toISOString` gives back exactly, else NaN. The
 * common shape (`YYYY-MM-DDTHH:MM:SS.mmmZ`, years 0100–9999, fields in range) is read digit by
 * digit; anything else goes through `Date.parse` and back.
 */
export function canonicalTime(v: unknown): number {
  if (typeof v !== 'string' || v.length !== 24) return NaN;
  const fast = fastTime(v);
  if (fast >= 0) return fast;
  const ms = Date.parse(v);
  return !Number.isNaN(ms) && new Date(ms).toISOString() === v ? ms : NaN;
}

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** `canonicalTime` of the common shape, or -1 when the string needs the slow path. */
function fastTime(v: string): number {
  if (v.charCodeAt(4) !== 45 || v.charCodeAt(7) !== 45 || v.charCodeAt(10) !== 84 || v.charCodeAt(13) !== 58 || v.charCodeAt(16) !== 58 || v.charCodeAt(19) !== 46 || v.charCodeAt(23) !== 90) return -1;
  const num = (from: number, to: number): number => {
    let n = 0;
    for (let i = from; i < to; i++) {
      const c = v.charCodeAt(i) - 48;
      if (c < 0 || c > 9) return -1;
      n = n * 10 + c;
    }
    return n;
  };
  const y = num(0, 4);
  const mo = num(5, 7);
  const d = num(8, 10);
  const h = num(11, 13);
  const mi = num(14, 16);
  const sec = num(17, 19);
  const ms = num(20, 23);
  if (y < 100 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59 || ms < 0) return -1;
  const leap = y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
  if (d > (mo === 2 && leap ? 29 : DAYS[mo - 1])) return -1;
  return Date.UTC(y, mo - 1, d, h, mi, sec, ms);
}

/** See `TenantIndex.resourceView`. Absent fields read as undefined. */
class ResourceView implements Resource {
  constructor(
    private readonly nodes: ResourceNodes,
    private readonly n: ResourceNode,
  ) {}
  get id(): string {
    return this.nodes.idOf(this.n);
  }
  get resourceTypeId(): string {
    return (this.nodes.type(this.n) as MutableTypeSlot).id;
  }
  get ownerScopeId(): string {
    return this.nodes.owner(this.n) as string;
  }
  get externalResourceId(): string {
    return this.nodes.ext(this.n) as string;
  }
  get displayName(): string | null | undefined {
    return this.nodes.displayName(this.n);
  }
  get attributes(): JsonObject | null | undefined {
    const a = this.nodes.rowFieldsOf(this.n).attributes;
    return (a === EMPTY_ATTRIBUTES ? FROZEN_EMPTY : a) as JsonObject | null | undefined;
  }
  get createdAt(): string {
    return this.nodes.createdAtOf(this.n) as string;
  }
  get createdBy(): string {
    return this.nodes.rowFieldsOf(this.n).createdBy as string;
  }
}

export class ResourceNodes implements ResourceNodeReads {
  /** Resource nodes by id: each slot holds the node's number and its facts ({@link FACT_FLAGS}). */
  readonly table: IdTable<ResourceNode>;
  /** typeId → slot holding the type's current key (never dropped: one per type id seen). */
  readonly typeSlots = new Map<string, MutableTypeSlot>();
  /** Type slots by their number. */
  readonly typeSlotsByNum: MutableTypeSlot[] = [];
  /** {@link HOT} words a node: what a walk reads of a node, in one cache line. */
  private hot: Int32Array;
  /** Columns by node number: the row's owner scope id (the scope row's own string when it exists), external id, and shared {@link RowFields}. */
  private owners: (string | undefined)[];
  private exts: (string | undefined)[];
  /** Display names as given, their bytes in one buffer (read only with the row: text-column.ts). */
  private readonly displayNames: TextColumn;
  private rowFieldsCol: RowFields[];
  /** A node's {@link NodeRelations}, for the few that have any. */
  private relations: (NodeRelations | undefined)[];
  /** The id of each node whose id does not pack (made on the first such id); else its words are in `idWords`. */
  private keys: (string | undefined)[] | undefined;
  /**
   * The four words of each node's resource id when it packs (`resource_` and a canonical UUID,
   * packed-id.ts), by number; the node then keeps no id string. Grown on the first such id.
   */
  private idWords = new Int32Array(0);
  /** Column length: node numbers below it have room in every column. */
  private room: number;
  /**
   * One byte per resource node number: 1 when the node is "plain" (its row exists, no
   * permission names it, it has no parent), else 0. A hierarchy walk whose next ancestor is
   * plain can stop without reading that ancestor's node: nothing can be inherited from it or
   * above it. Kept current on every change of a node's row, patterns or parent: O(1) each.
   */
  plain: Uint8Array;
  nextNum = 0;
  /** Numbers of dropped nodes, reused so the columns do not grow with churn. */
  readonly freeNums: number[] = [];
  /**
   * Numbers dropped in the revision being applied: reused only once it is applied
   * ({@link releaseDropped}), so until then a dropped node's id still reads as it was (the id
   * order of resource-order.ts finds its place by it).
   */
  private readonly dropped: number[] = [];
  /** resourcePattern → number of permission rows with that pattern (feeds `patterns`). */
  readonly patternCounts = new Map<string, number>();
  /**
   * externalResourceId → the number of a resource carrying it (any type), confirmed by the node's
   * external id column: 8 bytes an id, where a Map cost ~30 and three DRAM trips per resource built.
   */
  readonly externalFirst: NumTable;
  /** externalResourceId → ids of the other resources carrying it, for an id several resources carry. */
  readonly externalMore: Multi = new Map();
  /** Number of resource rows (they have no row table). */
  existing = 0;
  /**
   * `createdAt` of each resource node by its number: a canonical ISO-8601 time as milliseconds
   * (8 bytes instead of a 40-byte string), else NaN and the value as given in `createdAtRaw`
   * (absent when the row has none).
   */
  private createdAt: Float64Array;
  readonly createdAtRaw = new Map<number, unknown>();
  /**
   * creator → the {@link RowFields} of rows with that creator and attributes `{}`, absent or
   * null (one map each): shared by every such node (few subjects create a tenant's
   * resources). Cleared when full, so they stay small; nodes keep what they share.
   */
  private readonly sharedRowFields = [new Map<string | undefined, RowFields>(), new Map<string | undefined, RowFields>(), new Map<string | undefined, RowFields>()];

  readonly types = new RowTable<'resource_type'>({
    required: ['id', 'key'],
    index: (rt) => {
      this.typeSlot(rt.id).key = rt.key;
    },
    unindex: (rt) => {
      this.typeSlot(rt.id).key = undefined;
    },
  });

  /** `resources`: expected number of resource nodes (sizes the table and columns once instead of growing them). */
  constructor(resources: number) {
    // The table keeps neither keys nor values: its slot holds the node's number, which is the node.
    // Slots of 32 bytes while every id is the service's own.
    this.table = new IdTable<ResourceNode>(resources, undefined, {
      packPrefix: RESOURCE_PREFIX,
      keyOf: (n) => this.idOf(n),
      numOf: (n) => n,
      byNum: (num) => num,
    });
    // Columns by node number, sized alike (they grow by doubling past it).
    const nums = Math.max(1024, resources);
    this.room = nums;
    this.hot = new Int32Array(nums * HOT);
    this.owners = new Array<string | undefined>(nums).fill(undefined);
    this.exts = new Array<string | undefined>(nums).fill(undefined);
    this.displayNames = new TextColumn(nums);
    this.rowFieldsCol = new Array<RowFields>(nums).fill(NO_ROW_FIELDS);
    this.relations = new Array<NodeRelations | undefined>(nums).fill(undefined);
    this.plain = new Uint8Array(nums);
    this.createdAt = new Float64Array(nums).fill(NaN);
    this.externalFirst = new NumTable(
      {
        holds: (num, ext) => num < this.nextNum && this.exts[num] === ext,
        eachKey: (visit) => {
          for (let n = 0; n < this.nextNum; n++) {
            const ext = this.exts[n];
            if (ext !== undefined && this.live(n) && !this.isExternalMore(n)) visit(ext, n);
          }
        },
      },
      resources,
    );
  }

  /** The columns at their exact length, once a build is complete (past the count they were made for, they grew by doubling). */
  trim(): void {
    this.releaseDropped();
    if (this.room > this.nextNum + 1024) this.resize(Math.max(1024, this.nextNum));
  }

  // --- reads (ResourceNodeReads) -----------------------------------------------------------------

  /** Whether number `n` is a node (not free). */
  live(n: ResourceNode): boolean {
    return (this.hot[n * HOT + H_BITS] & B_LIVE) !== 0;
  }
  exists(n: ResourceNode): boolean {
    return (this.hot[n * HOT + H_BITS] & B_EXISTS) !== 0;
  }
  type(n: ResourceNode): MutableTypeSlot | undefined {
    const t = this.hot[n * HOT + H_TYPE];
    return t === 0 ? undefined : this.typeSlotsByNum[t - 1];
  }
  ext(n: ResourceNode): string | undefined {
    return this.exts[n];
  }
  owner(n: ResourceNode): string | undefined {
    return this.owners[n];
  }
  displayName(n: ResourceNode): string | null | undefined {
    return this.displayNames.get(n);
  }
  rowFieldsOf(n: ResourceNode): RowFields {
    return this.rowFieldsCol[n];
  }
  patterns(n: ResourceNode): number {
    return this.hot[n * HOT + H_BITS] >>> PATTERNS_SHIFT;
  }
  up(n: ResourceNode): ResourceNode {
    return this.hot[n * HOT + H_UP];
  }
  upInherit(n: ResourceNode): boolean {
    return (this.hot[n * HOT + H_BITS] & B_UP_INHERIT) !== 0;
  }
  parents(n: ResourceNode): MutableRowBag<MutableParentLink> | undefined {
    return this.relations[n]?.parents;
  }
  policies(n: ResourceNode): MutableRowBag<Policy> | undefined {
    return this.relations[n]?.policies;
  }
  links(n: ResourceNode): MutableRowBag<ResourceScopeLink> | undefined {
    return this.relations[n]?.links;
  }
  tags(n: ResourceNode): MutableRowBag<TagAssignment> | undefined {
    return this.relations[n]?.tags;
  }
  /** Number of parent links pointing at this node: it must not be dropped while any does. */
  refs(n: ResourceNode): number {
    return this.relations[n]?.refs ?? 0;
  }
  /** Ownership grants naming node `n` (subject-grants.ts names resources by number). */
  grantRefsOf(n: ResourceNode): number {
    return this.hot[n * HOT + H_GRANTS];
  }

  /** A node's resource id: its own string, or made from the four words its number keeps. */
  idOf(n: ResourceNode): string {
    const key = this.keys?.[n];
    if (key !== undefined) return key;
    const w = this.idWords;
    const at = 4 * n;
    return unpackId(RESOURCE_PREFIX, w[at], w[at + 1], w[at + 2], w[at + 3]);
  }

  /** Two nodes by resource id (code units), without making the ids when both pack. */
  compareIds(a: ResourceNode, b: ResourceNode): number {
    const keys = this.keys;
    const ka = keys?.[a];
    const kb = keys?.[b];
    if (ka === undefined && kb === undefined) {
      // A packed id is a fixed prefix and 32 lowercase hex digits at fixed places: its order is
      // that of its words read as unsigned integers.
      const w = this.idWords;
      for (let i = 4 * a, j = 4 * b, k = 0; k < 4; i++, j++, k++) {
        if (w[i] !== w[j]) return w[i] >>> 0 < w[j] >>> 0 ? -1 : 1;
      }
      return 0;
    }
    const x = this.idOf(a);
    const y = this.idOf(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }

  // --- writes ------------------------------------------------------------------------------------

  private setBit(n: ResourceNode, bit: number, on: boolean): void {
    const at = n * HOT + H_BITS;
    this.hot[at] = on ? this.hot[at] | bit : this.hot[at] & ~bit;
  }
  setExists(n: ResourceNode, v: boolean): void {
    this.setBit(n, B_EXISTS, v);
  }
  setType(n: ResourceNode, slot: MutableTypeSlot | undefined): void {
    this.hot[n * HOT + H_TYPE] = slot === undefined ? 0 : slot.num + 1;
  }
  setExt(n: ResourceNode, v: string | undefined): void {
    this.exts[n] = v;
  }
  setOwner(n: ResourceNode, v: string | undefined): void {
    this.owners[n] = v;
  }
  setDisplayName(n: ResourceNode, v: string | null | undefined): void {
    this.displayNames.set(n, v);
  }
  setRowFields(n: ResourceNode, v: RowFields): void {
    this.rowFieldsCol[n] = v;
  }
  /** Adds `delta` to a node's `patterns` (never below 0). */
  addPatterns(n: ResourceNode, delta: number): void {
    const at = n * HOT + H_BITS;
    const bits = this.hot[at];
    this.hot[at] = (((bits >>> PATTERNS_SHIFT) + delta) << PATTERNS_SHIFT) | (bits & (B_LIVE | B_EXISTS | B_UP_INHERIT));
  }

  /** The side object of `n`, made when a value is to be stored; undefined when there is none and none is needed. */
  private relationsFor(n: ResourceNode, v: unknown): NodeRelations | undefined {
    let rel = this.relations[n];
    if (rel === undefined && v !== undefined) this.relations[n] = rel = new NodeRelations();
    return rel;
  }
  private dropEmpty(n: ResourceNode): void {
    const rel = this.relations[n];
    if (rel !== undefined && rel.empty()) this.relations[n] = undefined;
  }
  /** Sets one of a node's relations (undefined: none), making or dropping its side object. */
  setRelation<K extends 'parents' | 'policies' | 'links' | 'tags'>(n: ResourceNode, key: K, v: NodeRelations[K]): void {
    const rel = this.relationsFor(n, v);
    if (rel === undefined) return;
    rel[key] = v;
    this.dropEmpty(n);
  }
  addRefs(n: ResourceNode, delta: number): void {
    const rel = this.relationsFor(n, delta === 0 ? undefined : true);
    if (rel === undefined) return;
    rel.refs += delta;
    this.dropEmpty(n);
  }

  /** Word FACT_FLAGS of a node's slot, as its columns imply it. */
  factFlags(n: ResourceNode): number {
    const bits = this.hot[n * HOT + H_BITS];
    const rel = this.relations[n];
    return (
      (bits & B_EXISTS ? F_EXISTS : 0) |
      (rel?.policies !== undefined ? F_POLICIES : 0) |
      (rel?.links !== undefined ? F_LINKS : 0) |
      (bits >>> PATTERNS_SHIFT > 0 ? F_NAMED : 0) |
      (this.hot[n * HOT + H_UP] >= 0 ? F_UP : 0) |
      (bits & B_UP_INHERIT ? F_UP_INHERIT : 0) |
      (this.hot[n * HOT + H_TYPE] << F_TYPE_SHIFT)
    );
  }

  /**
   * The resource node's own id string when it keeps one (an id that does not pack), else `id`
   * (see `RowHooks.slim`).
   */
  str(id: string): string {
    const n = this.table.get(id);
    return (n !== undefined ? this.keys?.[n] : undefined) ?? id;
  }

  /** The node of `id`, made (with no row, no parent) when there is none. */
  nodeFor(id: string): ResourceNode {
    let n = this.table.get(id);
    if (n === undefined) {
      n = this.takeNum();
      const at = n * HOT;
      this.hot[at + H_BITS] = B_LIVE | ((this.patternCounts.get(id) ?? 0) << PATTERNS_SHIFT);
      this.hot[at + H_TYPE] = 0;
      this.hot[at + H_UP] = -1;
      this.hot[at + H_GRANTS] = 0;
      if (packId(id, RESOURCE_PREFIX)) {
        // The id is kept as four words by number, not as a string (a 64-byte string a resource).
        if (4 * n >= this.idWords.length) {
          const grown = new Int32Array(4 * this.room);
          grown.set(this.idWords);
          this.idWords = grown;
        }
        this.idWords.set(PACKED, 4 * n);
        if (this.keys !== undefined) this.keys[n] = undefined;
      } else {
        this.keys ??= new Array<string | undefined>(this.room).fill(undefined);
        this.keys[n] = id;
      }
      this.table.set(id, n);
      this.refreshCopies(n, id);
    }
    return n;
  }

  /** The number of the node of `id` (made if needed), counted as named by one more ownership grant. */
  grantRef(id: string): ResourceNode {
    const n = this.nodeFor(id);
    this.hot[n * HOT + H_GRANTS]++;
    return n;
  }

  /** One ownership grant fewer names node `n`; the node goes once nothing else holds it. */
  grantUnref(n: ResourceNode): void {
    this.hot[n * HOT + H_GRANTS]--;
    this.prune(this.idOf(n));
  }

  /** Drops a node that no longer carries anything. */
  prune(id: string): void {
    const n = this.table.get(id);
    if (n !== undefined && !this.exists(n) && this.relations[n] === undefined && this.hot[n * HOT + H_GRANTS] === 0) {
      this.table.delete(id);
      this.plain[n] = 0;
      this.hot.fill(0, n * HOT, (n + 1) * HOT);
      this.dropped.push(n);
    }
  }

  /** Makes the numbers of the nodes dropped since the last call free for new nodes (see `dropped`). */
  releaseDropped(): void {
    for (const n of this.dropped) {
      if (this.keys !== undefined) this.keys[n] = undefined;
      this.freeNums.push(n);
    }
    this.dropped.length = 0;
  }

  private takeNum(): ResourceNode {
    const reused = this.freeNums.pop();
    if (reused !== undefined) return reused;
    const num = this.nextNum++;
    if (num >= this.room) this.resize(this.room * 2);
    return num;
  }

  /** Every column at `room` numbers (at least `nextNum`). */
  private resize(room: number): void {
    const hot = new Int32Array(room * HOT);
    hot.set(this.hot.subarray(0, Math.min(this.hot.length, room * HOT)));
    this.hot = hot;
    const plain = new Uint8Array(room);
    plain.set(this.plain.subarray(0, Math.min(this.plain.length, room)));
    this.plain = plain;
    const createdAt = new Float64Array(room).fill(NaN);
    createdAt.set(this.createdAt.subarray(0, Math.min(this.createdAt.length, room)));
    this.createdAt = createdAt;
    if (this.idWords.length > 0) {
      const words = new Int32Array(4 * room);
      words.set(this.idWords.subarray(0, Math.min(this.idWords.length, 4 * room)));
      this.idWords = words;
    }
    const fit = <T>(col: T[], fill: T): T[] => {
      const out = col.length > room ? col.slice(0, room) : col.concat(new Array<T>(room - col.length).fill(fill));
      return out;
    };
    this.owners = fit(this.owners, undefined);
    this.exts = fit(this.exts, undefined);
    this.displayNames.resize(room);
    this.rowFieldsCol = fit(this.rowFieldsCol, NO_ROW_FIELDS);
    this.relations = fit(this.relations, undefined);
    if (this.keys !== undefined) this.keys = fit(this.keys, undefined);
    this.room = room;
  }

  /**
   * Re-derives a node's copies outside its hot words: its bit in the plain-node bitmap and its
   * facts in the resource table (after its row, type, patterns, parent, policies or links changed).
   */
  refreshCopies(n: ResourceNode, id: string = this.idOf(n)): void {
    this.plain[n] = this.exists(n) && this.patterns(n) === 0 && this.up(n) < 0 ? 1 : 0;
    // Word FACT_FLAGS, then FACT_UP_NUM.
    this.table.setWords(id, this.factFlags(n), this.up(n));
  }

  /** Re-derives a node's parent and `upInherit` from its chosen parent link. */
  refreshUp(n: ResourceNode, id: string): void {
    const link = this.parentOf(n) as MutableParentLink | undefined;
    this.hot[n * HOT + H_UP] = link ? link.parent : -1;
    this.setBit(n, B_UP_INHERIT, link?.inherit ?? false);
    this.refreshCopies(n, id);
  }

  /**
   * The link to a resource's parent. A child has at most one parent; should bad data hold
   * several, the edge with the smallest id is used so every process picks the same one.
   */
  parentOf(n: ResourceNode | undefined): ParentLink | undefined {
    const b = n === undefined ? undefined : this.parents(n);
    if (b === undefined || !(b instanceof Map)) return b as ParentLink | undefined;
    let best: ParentLink | undefined;
    for (const l of b.values()) if (best === undefined || l.id < best.id) best = l;
    return best;
  }

  typeSlot(typeId: string): MutableTypeSlot {
    let slot = this.typeSlots.get(typeId);
    // Every collection row goes through here, so a slot created later starts with none.
    if (!slot) {
      slot = { id: typeId, num: this.typeSlotsByNum.length, key: this.types.rows.get(typeId)?.key, collections: 0, resources: 0 };
      this.typeSlots.set(typeId, slot);
      this.typeSlotsByNum.push(slot);
    }
    return slot;
  }

  /** Counts a permission's pattern in or out, on the nodes whose id or external id it names. */
  countPattern(pattern: string, delta: 1 | -1): void {
    const c = (this.patternCounts.get(pattern) ?? 0) + delta;
    if (c === 0) this.patternCounts.delete(pattern);
    else this.patternCounts.set(pattern, c);
    const byId = this.table.get(pattern);
    if (byId !== undefined) {
      this.addPatterns(byId, delta);
      this.refreshCopies(byId, pattern);
    }
    for (const n of this.nodesByExternal(pattern)) {
      this.addPatterns(n, delta);
      this.refreshCopies(n);
    }
  }

  /** The nodes of the resources (rows present) whose external id is `ext`. */
  nodesByExternal(ext: string): ResourceNode[] {
    const first = this.externalFirst.get(ext);
    if (first < 0) return [];
    const out = [first];
    if (this.externalMore.size > 0) for (const id of bagIds(this.externalMore.get(ext))) out.push(this.table.get(id) as ResourceNode);
    return out;
  }

  /** Files a node whose row just arrived under its external id (set). */
  addExternal(n: ResourceNode): void {
    const ext = this.exts[n] as string;
    if (this.externalFirst.get(ext) < 0) this.externalFirst.add(ext, n);
    else bagAdd(this.externalMore, ext, this.idOf(n));
  }

  /** Unfiles a node whose row goes, while its external id is still set. */
  removeExternal(n: ResourceNode): void {
    const ext = this.exts[n] as string;
    if (this.externalFirst.get(ext) !== n) {
      bagDelete(this.externalMore, ext, this.idOf(n));
      return;
    }
    const more = this.externalMore.size > 0 ? this.externalMore.get(ext) : undefined;
    if (more === undefined) {
      this.externalFirst.delete(ext);
      return;
    }
    // Another resource carries the id: it takes the table's entry.
    const nextId = typeof more === 'string' ? more : bagIds(more)[0];
    const next = this.table.get(nextId) as ResourceNode;
    bagDelete(this.externalMore, ext, nextId);
    this.externalFirst.renumber(ext, n, next);
  }

  /** Whether a node is filed in `externalMore` rather than in the table. */
  isExternalMore(n: ResourceNode): boolean {
    const more = this.externalMore.size > 0 ? this.externalMore.get(this.exts[n] as string) : undefined;
    if (more === undefined) return false;
    const id = this.idOf(n);
    return typeof more === 'string' ? more === id : bagIds(more).includes(id);
  }

  /** The {@link RowFields} of a row's `attributes` and `createdBy` (the values stored: see `indexResource`), shared when they are common. */
  rowFields(attributes: unknown, createdBy: unknown): RowFields {
    const shared = attributes === EMPTY_ATTRIBUTES ? 0 : attributes === undefined ? 1 : attributes === null ? 2 : -1;
    if (shared < 0 || (createdBy !== undefined && typeof createdBy !== 'string')) return { attributes, createdBy };
    const byCreator = this.sharedRowFields[shared];
    let f = byCreator.get(createdBy);
    if (f === undefined) {
      if (byCreator.size >= 4096) byCreator.clear();
      byCreator.set(createdBy, (f = Object.freeze({ attributes, createdBy })));
    }
    return f;
  }

  /** The row fields of a node whose row goes. */
  static readonly NO_ROW_FIELDS = NO_ROW_FIELDS;

  /** Stores a resource's `createdAt`: a canonical ISO-8601 string as its milliseconds, anything else as given. */
  setCreatedAt(num: number, v: unknown): void {
    this.createdAtRaw.delete(num);
    const ms = canonicalTime(v);
    this.createdAt[num] = ms;
    if (Number.isNaN(ms) && v !== undefined) this.createdAtRaw.set(num, v);
  }

  /** The `createdAt` of node number `num` as given (undefined when the row had none). */
  createdAtOf(num: number): unknown {
    const ms = num < this.createdAt.length ? this.createdAt[num] : NaN;
    return Number.isNaN(ms) ? this.createdAtRaw.get(num) : new Date(ms).toISOString();
  }

  /** A resource row, rebuilt from its node (see `TenantIndex.resource`). */
  resource(id: string): Resource | undefined {
    const n = this.table.get(id);
    return n !== undefined && this.exists(n) ? this.row(n) : undefined;
  }

  /** The row of a node whose resource exists (see `TenantIndex.resourceRow`). */
  row(n: ResourceNode): Resource {
    const out: Record<string, unknown> = {
      id: this.idOf(n),
      resourceTypeId: (this.type(n) as MutableTypeSlot).id,
      ownerScopeId: this.owners[n],
      externalResourceId: this.exts[n],
    };
    const displayName = this.displayNames.get(n);
    if (displayName !== undefined) out.displayName = displayName;
    const { attributes, createdBy } = this.rowFieldsCol[n];
    if (attributes !== undefined) out.attributes = attributes === EMPTY_ATTRIBUTES ? {} : attributes;
    const createdAt = this.createdAtOf(n);
    if (createdAt !== undefined) out.createdAt = createdAt;
    if (createdBy !== undefined) out.createdBy = createdBy;
    return out as unknown as Resource;
  }

  /** The row of a node whose resource exists, as a view (see `TenantIndex.resourceView`). */
  view(n: ResourceNode): Resource {
    return new ResourceView(this, n);
  }
}
