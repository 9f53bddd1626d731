/**
 * Resource nodes: everything a check reads about one resource hangs off its node (a small
 * object: see {@link MutableResourceNode}), and the node's id sits in an {@link IdTable} whose
 * slot also holds the resource's facts ({@link FACT_FLAGS}) and the node's number, so the
 * common check reads one cache line (half of one while every resource id is the service's own:
 * the table's packed layout); the node itself is found by its number in `nodesByNum`.
 * Around the nodes: their numbers (reused after deletes) with the plain-node bitmap and the
 * `createdAt` column, the type slots, the external-id table, and the count of permissions
 * naming each id. Resource types live here too: a type slot carries its type's key.
 */
import { IdTable } from '../id-table.js';
import type { JsonObject, Policy, Resource, ResourceScopeLink, TagAssignment } from '../model.js';
import { NumTable } from '../num-table.js';
import { PACKED, packId, unpackId } from '../packed-id.js';
import { bagAdd, bagDelete, bagIds, type Multi, type MutableRowBag } from './bags.js';
import { RowTable } from './row-table.js';
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
  readonly parent: MutableResourceNode;
  readonly child: MutableResourceNode;
}

/**
 * What few resources have, kept out of their nodes: parent links, direct policies, scope links,
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

/** Bits of {@link MutableResourceNode}'s `bits`; `patterns` above them. */
const B_EXISTS = 1;
const B_UP_INHERIT = 2;
const PATTERNS_SHIFT = 2;

/**
 * A resource node: 11 fields (112 bytes in a Node without pointer compression, where the 18
 * fields of a node holding everything took 168). The booleans and the pattern count share one
 * small integer; what few resources have (parents, policies, links, tags, refs) lives in one
 * {@link NodeRelations} made on demand; the row's `attributes` and `createdBy` in one
 * {@link RowFields}, shared between nodes; `createdAt` is in a column by number. Accessors
 * give every field its old name, so readers see a {@link ResourceNode}.
 */
export class MutableResourceNode {
  // Fields in the order a check reads them (V8 lays them out in this order).
  private bits: number;
  type: MutableTypeSlot | undefined = undefined;
  up: MutableResourceNode | undefined = undefined;
  upNum = -1;
  owner: string | undefined = undefined;
  ext: string | undefined = undefined;
  private rel: NodeRelations | undefined = undefined;
  /** The row's `displayName` as given (most rows have their own). */
  displayName: string | null | undefined = undefined;
  /** See {@link RowFields}. */
  row: RowFields = NO_ROW_FIELDS;

  /** `key`: the resource id when it does not pack (see `ResourceNodes.idOf`), else undefined. */
  constructor(
    readonly key: string | undefined,
    readonly num: number,
    patterns: number,
  ) {
    this.bits = patterns << PATTERNS_SHIFT;
  }

  get exists(): boolean {
    return (this.bits & B_EXISTS) !== 0;
  }
  set exists(v: boolean) {
    this.bits = v ? this.bits | B_EXISTS : this.bits & ~B_EXISTS;
  }
  get upInherit(): boolean {
    return (this.bits & B_UP_INHERIT) !== 0;
  }
  set upInherit(v: boolean) {
    this.bits = v ? this.bits | B_UP_INHERIT : this.bits & ~B_UP_INHERIT;
  }
  /** See `ResourceNode.patterns` (never negative). */
  get patterns(): number {
    return this.bits >> PATTERNS_SHIFT;
  }
  set patterns(v: number) {
    this.bits = (v << PATTERNS_SHIFT) | (this.bits & (B_EXISTS | B_UP_INHERIT));
  }

  /** The side object, made when a value is to be stored; undefined when there is none and none is needed. */
  private relationsFor(v: unknown): NodeRelations | undefined {
    if (this.rel === undefined && v !== undefined) this.rel = new NodeRelations();
    return this.rel;
  }

  get parents(): MutableRowBag<MutableParentLink> | undefined {
    return this.rel === undefined ? undefined : this.rel.parents;
  }
  set parents(v: MutableRowBag<MutableParentLink> | undefined) {
    const rel = this.relationsFor(v);
    if (rel === undefined) return;
    rel.parents = v;
    this.dropEmpty();
  }
  get policies(): MutableRowBag<Policy> | undefined {
    return this.rel === undefined ? undefined : this.rel.policies;
  }
  set policies(v: MutableRowBag<Policy> | undefined) {
    const rel = this.relationsFor(v);
    if (rel === undefined) return;
    rel.policies = v;
    this.dropEmpty();
  }
  get links(): MutableRowBag<ResourceScopeLink> | undefined {
    return this.rel === undefined ? undefined : this.rel.links;
  }
  set links(v: MutableRowBag<ResourceScopeLink> | undefined) {
    const rel = this.relationsFor(v);
    if (rel === undefined) return;
    rel.links = v;
    this.dropEmpty();
  }
  get tags(): MutableRowBag<TagAssignment> | undefined {
    return this.rel === undefined ? undefined : this.rel.tags;
  }
  set tags(v: MutableRowBag<TagAssignment> | undefined) {
    const rel = this.relationsFor(v);
    if (rel === undefined) return;
    rel.tags = v;
    this.dropEmpty();
  }
  /** Number of parent links pointing at this node: it must not be dropped while any does. */
  get refs(): number {
    return this.rel === undefined ? 0 : this.rel.refs;
  }
  set refs(v: number) {
    if (this.rel === undefined) {
      if (v === 0) return;
      this.rel = new NodeRelations();
    }
    this.rel.refs = v;
    this.dropEmpty();
  }

  get attributes(): unknown {
    return this.row.attributes;
  }
  get createdBy(): unknown {
    return this.row.createdBy;
  }

  private dropEmpty(): void {
    if (this.rel !== undefined && this.rel.empty()) this.rel = undefined;
  }
}

/** Word FACT_FLAGS of a node's slot, as its fields imply it. */
export function factFlags(n: MutableResourceNode): number {
  return (
    (n.exists ? F_EXISTS : 0) |
    (n.policies !== undefined ? F_POLICIES : 0) |
    (n.links !== undefined ? F_LINKS : 0) |
    (n.patterns > 0 ? F_NAMED : 0) |
    (n.up !== undefined ? F_UP : 0) |
    (n.upInherit ? F_UP_INHERIT : 0) |
    ((n.type !== undefined ? n.type.num + 1 : 0) << F_TYPE_SHIFT)
  );
}

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
    private readonly n: MutableResourceNode,
  ) {}
  get id(): string {
    return this.nodes.idOf(this.n);
  }
  get resourceTypeId(): string {
    return (this.n.type as MutableTypeSlot).id;
  }
  get ownerScopeId(): string {
    return this.n.owner as string;
  }
  get externalResourceId(): string {
    return this.n.ext as string;
  }
  get displayName(): string | null | undefined {
    return this.n.displayName;
  }
  get attributes(): JsonObject | null | undefined {
    const a = this.n.attributes;
    return (a === EMPTY_ATTRIBUTES ? FROZEN_EMPTY : a) as JsonObject | null | undefined;
  }
  get createdAt(): string {
    return this.nodes.createdAtOf(this.n.num) as string;
  }
  get createdBy(): string {
    return this.n.createdBy as string;
  }
}

export class ResourceNodes {
  /** Resource nodes by id, with each node's facts ({@link FACT_FLAGS}) in its slot. */
  readonly table: IdTable<MutableResourceNode>;
  /** typeId → slot holding the type's current key (never dropped: one per type id seen). */
  readonly typeSlots = new Map<string, MutableTypeSlot>();
  /** Type slots by their number. */
  readonly typeSlotsByNum: MutableTypeSlot[] = [];
  /** Resource nodes by number (the resource table finds its nodes here: it keeps their numbers, not the nodes). */
  nodesByNum: (MutableResourceNode | undefined)[];
  /**
   * One byte per resource node number: 1 when the node is "plain" (its row exists, no
   * permission names it, it has no parent), else 0. A hierarchy walk whose next ancestor is
   * plain can stop without reading that ancestor's node: nothing can be inherited from it or
   * above it. Kept current on every change of a node's row, patterns or parent: O(1) each.
   */
  plain: Uint8Array;
  nextNum = 0;
  /** Numbers of dropped nodes, reused so the bitmap does not grow with churn. */
  readonly freeNums: number[] = [];
  /** resourcePattern → number of permission rows with that pattern (feeds ResourceNode.patterns). */
  readonly patternCounts = new Map<string, number>();
  /**
   * externalResourceId → the number of a resource carrying it (any type), confirmed by the node
   * (`nodesByNum`): 8 bytes an id, where a Map cost ~30 and three DRAM trips per resource built.
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
   * Ownership grants naming each node, by its number: a subject's grants hold resource numbers
   * (subject-grants.ts), so the node, and its number, must outlive every grant naming it.
   */
  private grantRefs: Int32Array;
  /**
   * The four words of each node's resource id when it packs (`resource_` and a canonical UUID,
   * packed-id.ts), by number; the node then keeps no id string. Grown on the first such id.
   */
  private idWords = new Int32Array(0);
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

  /** `resources`: expected number of resource nodes (sizes the table once instead of growing it). */
  constructor(resources: number) {
    // The table keeps neither keys nor values: a node holds its id, and its number (in the
    // slot) finds it in `nodesByNum`. Slots of 32 bytes while every id is the service's own.
    this.table = new IdTable<MutableResourceNode>(resources, undefined, {
      packPrefix: RESOURCE_PREFIX,
      keyOf: (n) => this.idOf(n),
      numOf: (n) => n.num,
      byNum: (num) => this.nodesByNum[num] as MutableResourceNode,
    });
    // Arrays by node number, sized alike (they grow by doubling past it).
    const nums = Math.max(1024, resources);
    this.plain = new Uint8Array(nums);
    this.nodesByNum = new Array<MutableResourceNode | undefined>(nums);
    this.externalFirst = new NumTable(
      {
        holds: (num, ext) => this.nodesByNum[num]?.ext === ext,
        eachKey: (visit) => {
          for (const n of this.nodesByNum) if (n !== undefined && n.ext !== undefined && !this.isExternalMore(n)) visit(n.ext, n.num);
        },
      },
      resources,
    );
    this.createdAt = new Float64Array(nums).fill(NaN);
    this.grantRefs = new Int32Array(nums);
  }

  /** `nodesByNum` at its exact length, once a build is complete (past the count it was made for, it grew by half again). */
  trim(): void {
    this.nodesByNum = this.nodesByNum.slice(0, this.nextNum);
  }

  /**
   * The resource node's own id string when it keeps one (an id that does not pack), else `id`
   * (see `RowHooks.slim`).
   */
  str(id: string): string {
    return this.table.get(id)?.key ?? id;
  }

  /** A node's resource id: its own string, or made from the four words its number keeps. */
  idOf(n: MutableResourceNode): string {
    const key = n.key;
    if (key !== undefined) return key;
    const w = this.idWords;
    const at = 4 * n.num;
    return unpackId(RESOURCE_PREFIX, w[at], w[at + 1], w[at + 2], w[at + 3]);
  }

  /** The resource id of node number `num` (a live node: one a grant or a table entry holds). */
  idOfNum(num: number): string {
    return this.idOf(this.nodesByNum[num] as MutableResourceNode);
  }

  /** Two nodes by resource id (code units), without making the ids when both pack. */
  compareIds(a: MutableResourceNode, b: MutableResourceNode): number {
    if (a.key === undefined && b.key === undefined) {
      // A packed id is a fixed prefix and 32 lowercase hex digits at fixed places: its order is
      // that of its words read as unsigned integers.
      const w = this.idWords;
      for (let i = 4 * a.num, j = 4 * b.num, k = 0; k < 4; i++, j++, k++) {
        if (w[i] !== w[j]) return w[i] >>> 0 < w[j] >>> 0 ? -1 : 1;
      }
      return 0;
    }
    const x = this.idOf(a);
    const y = this.idOf(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }

  nodeFor(id: string): MutableResourceNode {
    let n = this.table.get(id);
    if (!n) {
      const num = this.takeNum();
      let key: string | undefined = id;
      if (packId(id, RESOURCE_PREFIX)) {
        // The id is kept as four words by number, not as a string (a 64-byte string a resource).
        if (4 * num >= this.idWords.length) {
          const grown = new Int32Array(Math.max(4 * (num + 1), 4 * this.plain.length));
          grown.set(this.idWords);
          this.idWords = grown;
        }
        this.idWords.set(PACKED, 4 * num);
        key = undefined;
      }
      n = new MutableResourceNode(key, num, this.patternCounts.get(id) ?? 0);
      // Before the table holds it: the table finds its values by number.
      this.nodesByNum[n.num] = n;
      this.table.set(id, n);
      this.refreshCopies(n, id);
    }
    return n;
  }

  /** The number of the node of `id` (made if needed), counted as named by one more ownership grant. */
  grantRef(id: string): number {
    const num = this.nodeFor(id).num;
    this.grantRefs[num]++;
    return num;
  }

  /** One ownership grant fewer names node number `num`; the node goes once nothing else holds it. */
  grantUnref(num: number): void {
    this.grantRefs[num]--;
    this.prune(this.idOfNum(num));
  }

  /** Ownership grants naming node number `num` (for tests and diagnostics). */
  grantRefsOf(num: number): number {
    return num < this.grantRefs.length ? this.grantRefs[num] : 0;
  }

  /** Drops a node that no longer carries anything. */
  prune(id: string): void {
    const n = this.table.get(id);
    if (n && !n.exists && !n.parents && !n.policies && !n.links && !n.tags && n.refs === 0 && this.grantRefs[n.num] === 0) {
      this.table.delete(id);
      this.plain[n.num] = 0;
      this.nodesByNum[n.num] = undefined;
      this.freeNums.push(n.num);
    }
  }

  private takeNum(): number {
    const reused = this.freeNums.pop();
    if (reused !== undefined) return reused;
    const num = this.nextNum++;
    if (num >= this.plain.length) {
      const grown = new Uint8Array(this.plain.length * 2);
      grown.set(this.plain);
      this.plain = grown;
    }
    if (num >= this.grantRefs.length) {
      const grown = new Int32Array(this.grantRefs.length * 2);
      grown.set(this.grantRefs);
      this.grantRefs = grown;
    }
    return num;
  }

  /**
   * Re-derives a node's copies outside the node: its bit in the plain-node bitmap and its
   * facts in the resource table (after its row, type, patterns, parent, policies or links changed).
   */
  refreshCopies(n: MutableResourceNode, id: string = this.idOf(n)): void {
    this.plain[n.num] = n.exists && n.patterns === 0 && n.up === undefined ? 1 : 0;
    // Word FACT_FLAGS, then FACT_UP_NUM.
    this.table.setWords(id, factFlags(n), n.upNum);
  }

  /** Re-derives a node's `up`/`upInherit` from its chosen parent link. */
  refreshUp(n: MutableResourceNode, id: string): void {
    const link = this.parentOf(n) as MutableParentLink | undefined;
    n.up = link?.parent;
    n.upInherit = link?.inherit ?? false;
    n.upNum = link ? link.parent.num : -1;
    this.refreshCopies(n, id);
  }

  /**
   * The link to a resource's parent. A child has at most one parent; should bad data hold
   * several, the edge with the smallest id is used so every process picks the same one.
   */
  parentOf(node: ResourceNode | undefined): ParentLink | undefined {
    const b = node?.parents;
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
    if (byId) {
      byId.patterns += delta;
      this.refreshCopies(byId, pattern);
    }
    for (const n of this.nodesByExternal(pattern)) {
      n.patterns += delta;
      this.refreshCopies(n);
    }
  }

  /** The nodes of the resources (rows present) whose external id is `ext`. */
  nodesByExternal(ext: string): MutableResourceNode[] {
    const first = this.externalFirst.get(ext);
    if (first < 0) return [];
    const out = [this.nodesByNum[first] as MutableResourceNode];
    if (this.externalMore.size > 0) for (const id of bagIds(this.externalMore.get(ext))) out.push(this.table.get(id) as MutableResourceNode);
    return out;
  }

  /** Files a node whose row just arrived under its external id (`n.ext`, set). */
  addExternal(n: MutableResourceNode): void {
    const ext = n.ext as string;
    if (this.externalFirst.get(ext) < 0) this.externalFirst.add(ext, n.num);
    else bagAdd(this.externalMore, ext, this.idOf(n));
  }

  /** Unfiles a node whose row goes, while `n.ext` still holds its external id. */
  removeExternal(n: MutableResourceNode): void {
    const ext = n.ext as string;
    if (this.externalFirst.get(ext) !== n.num) {
      bagDelete(this.externalMore, ext, this.idOf(n));
      return;
    }
    const more = this.externalMore.size > 0 ? this.externalMore.get(ext) : undefined;
    if (more === undefined) {
      this.externalFirst.delete(ext);
      return;
    }
    // Another resource carries the id: it takes the table's entry.
    const next = this.table.get(typeof more === 'string' ? more : bagIds(more)[0]) as MutableResourceNode;
    bagDelete(this.externalMore, ext, this.idOf(next));
    this.externalFirst.renumber(ext, n.num, next.num);
  }

  /** Whether a node is filed in `externalMore` rather than in the table. */
  isExternalMore(n: MutableResourceNode): boolean {
    const more = this.externalMore.size > 0 ? this.externalMore.get(n.ext as string) : undefined;
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
    if (num >= this.createdAt.length) {
      const grown = new Float64Array(Math.max(num + 1, this.createdAt.length * 2));
      grown.fill(NaN);
      grown.set(this.createdAt);
      this.createdAt = grown;
    }
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
    return n !== undefined && n.exists ? this.row(n) : undefined;
  }

  /** The row of a node whose resource exists (see `TenantIndex.resourceRow`). */
  row(n: MutableResourceNode): Resource {
    const out: Record<string, unknown> = {
      id: this.idOf(n),
      resourceTypeId: (n.type as MutableTypeSlot).id,
      ownerScopeId: n.owner,
      externalResourceId: n.ext,
    };
    if (n.displayName !== undefined) out.displayName = n.displayName;
    if (n.attributes !== undefined) out.attributes = n.attributes === EMPTY_ATTRIBUTES ? {} : n.attributes;
    const createdAt = this.createdAtOf(n.num);
    if (createdAt !== undefined) out.createdAt = createdAt;
    if (n.createdBy !== undefined) out.createdBy = n.createdBy;
    return out as unknown as Resource;
  }

  /** The row of a node whose resource exists, as a view (see `TenantIndex.resourceView`). */
  view(n: MutableResourceNode): Resource {
    return new ResourceView(this, n);
  }
}
