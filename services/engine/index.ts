/**
 * The in-memory form of one tenant's state: the rows of every entity plus the derived maps a
 * decision needs, so that a check is a handful of hash lookups whose cost does not depend on
 * the size of the tenant.
 *
 * Built once from a snapshot (or row by row with {@link TenantIndex.builder}), then kept
 * current with {@link TenantIndex.apply}, which touches only the derived entries of the rows it
 * changes. Rows of the small kinds are kept by reference and must not be mutated after they are
 * handed in (nor objects inside any row: metadata, attributes, conditions).
 *
 * Memory (the sidecar holds a tenant of a million resources and grants): the kinds a tenant
 * holds by the hundred thousand keep only the fields of their model interface, with references
 * sharing the referred row's id string (`slim`). Resources have no row object: their fields
 * live in their node (`createdAt` as milliseconds in a column, `{}` attributes as a marker) and
 * `resource(id)` rebuilds the row; ownership grants are three strings each in their subject's
 * {@link SubjectGrants}, and `ownershipGrant(id)` rebuilds the row. Deletes free their entries
 * (node numbers and slots are reused), so a long-running follower does not grow with churn.
 *
 * Layout: everything a check needs about one subject (its role assignments by scope, its
 * ownership grants, its tags) hangs off one {@link SubjectNode}, and everything about one
 * resource (its parent edge, direct policies, scope links, tags) off one
 * {@link ResourceNode}, so a check pays one lookup in each of the big maps. Derived entries
 * hold the row objects themselves, not ids, saving a second lookup per hop.
 *
 * On a tenant larger than the CPU caches every object a check touches for the first time costs
 * a trip to DRAM. Resources, the biggest collection, are therefore kept in an {@link IdTable}
 * whose slot (one cache line) also holds the resource's facts ({@link FACT_FLAGS}): a common check
 * reads that line and not the node. Roles keep their pattern-`*` permissions as a flat
 * {@link StarCover}. The nodes also carry copies that spare a check the other objects: the
 * subject's type and its first role assignments (no row, no array), the resource's type slot
 * (key and collection count), owner scope and a count of the permissions that name it (when 0,
 * its id and external id strings are never read), and a bitmap tells whether a resource's
 * parent is "plain" (nothing can be inherited through it) without reading the parent. Roles
 * are one {@link RoleInfo} each (row and cover index behind one lookup). Every copy is kept
 * current by `apply` in O(1) per changed row, except a permission change, which updates the
 * nodes of the resources whose id or external id equals its pattern.
 *
 * Bad data never loops: scope and resource walks stop at a missing row, at a revisit (cycle)
 * and after {@link MAX_HIERARCHY_DEPTH} ancestors.
 */
import { InvalidChangeError } from './errors.js';
import { IdTable } from './id-table.js';
import { NumTable } from './num-table.js';
import {
  ENTITY_KINDS,
  type Change,
  type Collection,
  type EntityKind,
  type JsonObject,
  type Membership,
  type OwnershipGrant,
  type Permission,
  type Policy,
  type Resource,
  type ResourceEdge,
  type ResourceScopeLink,
  type ResourceType,
  type Role,
  type RoleAssignment,
  type RolePermission,
  type RowsByKind,
  type Scope,
  type ScopeOverride,
  type Subject,
  type Tag,
  type TagAssignment,
  type TagBinding,
  type TagGroup,
  type TenantSnapshot,
} from './model.js';

/** Most ancestors a scope or resource walk visits (contract §6: hierarchy depth 64). */
export const MAX_HIERARCHY_DEPTH = 64;

/** A scope and its ancestors, nearest first (the scope itself at index 0). */
export interface ScopePath {
  readonly ids: readonly string[];
  readonly set: ReadonlySet<string>;
}

/** A cached path also remembers whether it crosses an override, as of an override version. */
interface CachedPath extends ScopePath {
  overridesVersion: number;
  hasOverrides: boolean;
}

const EMPTY_PATH: CachedPath = { ids: [], set: new Set(), overridesVersion: -1, hasOverrides: false };
const EMPTY_IDS: readonly string[] = [];

// --- bags --------------------------------------------------------------------------------------
// One value is stored bare and only a second one allocates a collection: most keys (a
// resource's parent edge, a subject's assignments at one scope) hold one.

type Identified = { id: string };
/** Rows under one key: a bare row, or a map id → row when there are several. */
export type RowBag<T extends Identified> = T | ReadonlyMap<string, T>;
type MutableRowBag<T extends Identified> = T | Map<string, T>;

function rbWith<T extends Identified>(b: MutableRowBag<T> | undefined, row: T): MutableRowBag<T> {
  if (b === undefined) return row;
  if (b instanceof Map) {
    b.set(row.id, row);
    return b;
  }
  if (b.id === row.id) return row;
  return new Map([
    [b.id, b],
    [row.id, row],
  ]);
}

function rbWithout<T extends Identified>(b: MutableRowBag<T> | undefined, id: string): MutableRowBag<T> | undefined {
  if (b === undefined) return undefined;
  if (b instanceof Map) {
    b.delete(id);
    if (b.size > 1) return b;
    return b.size === 1 ? (b.values().next().value as T) : undefined;
  }
  return b.id === id ? undefined : b;
}

function rbAdd<T extends Identified>(m: Map<string, MutableRowBag<T>>, key: string, row: T): void {
  m.set(key, rbWith(m.get(key), row));
}

function rbDelete<T extends Identified>(m: Map<string, MutableRowBag<T>>, key: string, id: string): void {
  const b = rbWithout(m.get(key), id);
  if (b === undefined) m.delete(key);
  else m.set(key, b);
}

const NO_ROWS: readonly never[] = [];

/** The rows of a bag (allocates a one-element array for a bare row). */
export function bagRows<T extends Identified>(b: RowBag<T> | undefined): Iterable<T> {
  if (b === undefined) return NO_ROWS;
  if (b instanceof Map) return b.values();
  return [b as T];
}

/**
 * Ids under one key: a bare string, a small array while few (a `Set` of two costs about 150
 * bytes, an array of two 32), then a Set past {@link SMALL_BAG} (adds and deletes stay O(1)).
 */
type Bag = string | string[] | Set<string>;
type Multi = Map<string, Bag>;
const SMALL_BAG = 8;

function bagAdd(m: Multi, key: string, v: string): void {
  const b = m.get(key);
  if (b === undefined) m.set(key, v);
  else if (typeof b === 'string') {
    if (b !== v) m.set(key, [b, v]);
  } else if (Array.isArray(b)) {
    if (b.includes(v)) return;
    if (b.length < SMALL_BAG) b.push(v);
    else m.set(key, new Set([...b, v]));
  } else b.add(v);
}

function bagDelete(m: Multi, key: string, v: string): void {
  const b = m.get(key);
  if (b === undefined) return;
  if (typeof b === 'string') {
    if (b === v) m.delete(key);
    return;
  }
  if (Array.isArray(b)) {
    const i = b.indexOf(v);
    if (i < 0) return;
    b.splice(i, 1);
    if (b.length === 1) m.set(key, b[0]);
    return;
  }
  b.delete(v);
  if (b.size === 1) m.set(key, b.values().next().value as string);
  else if (b.size === 0) m.delete(key);
  else if (b.size <= SMALL_BAG / 2) m.set(key, [...b]);
}

function bagIds(b: Bag | undefined): readonly string[] {
  if (b === undefined) return EMPTY_IDS;
  return typeof b === 'string' ? [b] : [...b];
}

function nested<V>(m: Map<string, Map<string, V>>, key: string): Map<string, V> {
  let inner = m.get(key);
  if (!inner) m.set(key, (inner = new Map()));
  return inner;
}

function rbAdd2<T extends Identified>(m: Map<string, Map<string, MutableRowBag<T>>>, k1: string, k2: string, row: T): void {
  rbAdd(nested(m, k1), k2, row);
}

function rbDelete2<T extends Identified>(m: Map<string, Map<string, MutableRowBag<T>>>, k1: string, k2: string, id: string): void {
  const inner = m.get(k1);
  if (!inner) return;
  rbDelete(inner, k2, id);
  if (inner.size === 0) m.delete(k1);
}

/** Offset of an assignment in a flat list, or -1. */
function findAssignment(list: AssignmentList, id: string): number {
  for (let i = 0; i < list.length; i += A_STRIDE) if (list[i + A_ID] === id) return i;
  return -1;
}

/** The entries of a flat list, one array of four strings each (for derivedState). */
function entriesOf(list: AssignmentList): string[][] {
  const out: string[][] = [];
  for (let i = 0; i < list.length; i += A_STRIDE) out.push(list.slice(i, i + A_STRIDE));
  return out.sort((x, y) => (x[A_ID] < y[A_ID] ? -1 : 1));
}

/** Canonical text of a by-scope view (for derivedState). */
function byScopeKey(m: ReadonlyMap<string, AssignmentList>): string {
  return JSON.stringify([...m.entries()].map(([k, v]) => [k, entriesOf(v)]).sort((a, b) => (a[0] < b[0] ? -1 : 1)));
}

function groupByScope(list: AssignmentList): Map<string, string[]> {
  const m = new Map<string, string[]>();
  for (let i = 0; i < list.length; i += A_STRIDE) {
    const entry = list.slice(i, i + A_STRIDE);
    const existing = m.get(entry[A_SCOPE]);
    if (existing) existing.push(...entry);
    else m.set(entry[A_SCOPE], entry);
  }
  return m;
}

// --- nodes ---------------------------------------------------------------------------------------

/** Re-copies the first assignments of a subject node into its own fields (O(INLINE_ASSIGNMENTS)). */
function refreshInline(n: MutableSubjectNode): void {
  const list = n.assignments;
  const count = list.length / A_STRIDE;
  n.inline = count <= INLINE_ASSIGNMENTS ? count : -1;
  n.s0 = list[A_SCOPE];
  n.r0 = list[A_ROLE];
  n.s1 = list[A_STRIDE + A_SCOPE];
  n.r1 = list[A_STRIDE + A_ROLE];
  n.s2 = list[2 * A_STRIDE + A_SCOPE];
  n.r2 = list[2 * A_STRIDE + A_ROLE];
  n.s3 = list[3 * A_STRIDE + A_SCOPE];
  n.r3 = list[3 * A_STRIDE + A_ROLE];
}

/** Whether a subject node's inline copy agrees with its list (for derivedState). */
function inlineOk(n: MutableSubjectNode): boolean {
  const list = n.assignments;
  const count = list.length / A_STRIDE;
  const fields = [n.s0, n.r0, n.s1, n.r1, n.s2, n.r2, n.s3, n.r3];
  for (let k = 0; k < INLINE_ASSIGNMENTS; k++) {
    if (fields[2 * k] !== list[k * A_STRIDE + A_SCOPE] || fields[2 * k + 1] !== list[k * A_STRIDE + A_ROLE]) return false;
  }
  return n.inline === (count <= INLINE_ASSIGNMENTS ? count : -1);
}

/**
 * Role assignments joined with their memberships, flattened four strings per assignment:
 * `[assignmentId, membershipId, scopeId, roleId, …]` (one array per subject instead of one
 * object per assignment: fewer cache misses). Scope and role ids are the strings of the scope
 * and role rows when those exist, so the few distinct values stay hot in cache.
 */
export type AssignmentList = readonly string[];
/** Stride of an {@link AssignmentList} and the offsets of its fields. */
export const A_STRIDE = 4;
export const A_ID = 0;
export const A_MEMBERSHIP = 1;
export const A_SCOPE = 2;
export const A_ROLE = 3;

/** What a check reads about one subject. */
export interface SubjectNode {
  readonly row: Subject | undefined;
  /** `row.type`, copied so a check that runs no condition never reads the row. */
  readonly type: string | undefined;
  /** Role assignments of the subject's memberships (small: scanned; see `assignmentsByScope`). */
  readonly assignments: AssignmentList;
  /** The same entries by membership scope, kept only when there are many of them. */
  readonly assignmentsByScope: ReadonlyMap<string, AssignmentList> | undefined;
  /**
   * The scope and role of the first {@link INLINE_ASSIGNMENTS} entries of `assignments`,
   * copied into the node itself (`s0`/`r0` … `s3`/`r3`): most subjects hold a few, and a check
   * then reads no array. `inline` is their number, or -1 when there are more (use the list).
   */
  readonly inline: number;
  readonly s0: string | undefined;
  readonly r0: string | undefined;
  readonly s1: string | undefined;
  readonly r1: string | undefined;
  readonly s2: string | undefined;
  readonly r2: string | undefined;
  readonly s3: string | undefined;
  readonly r3: string | undefined;
  /** Ownership grants of the subject, by resource; undefined when none. */
  readonly grantsByResource: GrantSet | undefined;
  /** Tag assignments targeting the subject. */
  readonly tags: RowBag<TagAssignment> | undefined;
}

/** A subject's ownership grants by resource (see {@link SubjectGrants}). */
export interface GrantSet {
  /** The grants on one resource; undefined when none. */
  get(resourceId: string): RowBag<OwnershipGrant> | undefined;
  /** Number of grants. */
  readonly size: number;
}

/** Up to this many grants a subject keeps them in a flat array, scanned; more go in a map. */
export const GRANT_SCAN_LIMIT = 16;

/**
 * A subject's ownership grants, as strings only (no row objects: a row is made when asked for).
 * Most subjects hold a few: `[grantId, resourceId, roleId, …]` in one flat array, scanned
 * (24 bytes a grant, where a row object costs 56 and a map entry 40 to 80). Past
 * {@link GRANT_SCAN_LIMIT} grants they move into maps by resource and by grant id, and back
 * into an array when deletes bring them under half of it.
 */
export class SubjectGrants implements GrantSet {
  /** `[grantId, resourceId, roleId, …]` while few; undefined while the maps hold them. */
  private list: string[] | undefined = [];
  /** resourceId → `[grantId, roleId, …]`. */
  private byResource: Map<string, string[]> | undefined;
  /** grantId → resourceId. */
  private byId: Map<string, string> | undefined;
  private count = 0;

  /** `num`: the set's number in its index (the grant-id table maps each grant to it). */
  constructor(
    readonly subjectId: string,
    readonly num = -1,
  ) {}

  get size(): number {
    return this.count;
  }

  private row(id: string, resourceId: string, roleId: string): OwnershipGrant {
    return { id, subjectId: this.subjectId, resourceId, roleId };
  }

  get(resourceId: string): RowBag<OwnershipGrant> | undefined {
    const list = this.list;
    if (list !== undefined) {
      let found: MutableRowBag<OwnershipGrant> | undefined;
      for (let i = 0; i < list.length; i += 3) {
        if (list[i + 1] === resourceId) found = rbWith(found, this.row(list[i], list[i + 1], list[i + 2]));
      }
      return found;
    }
    const pairs = (this.byResource as Map<string, string[]>).get(resourceId);
    if (pairs === undefined) return undefined;
    if (pairs.length === 2) return this.row(pairs[0], resourceId, pairs[1]);
    let found: MutableRowBag<OwnershipGrant> | undefined;
    for (let i = 0; i < pairs.length; i += 2) found = rbWith(found, this.row(pairs[i], resourceId, pairs[i + 1]));
    return found;
  }

  /** Whether the set holds the grant with this id. */
  has(id: string): boolean {
    const list = this.list;
    if (list === undefined) return (this.byId as Map<string, string>).has(id);
    for (let i = 0; i < list.length; i += 3) if (list[i] === id) return true;
    return false;
  }

  /** The grant with this id, or undefined. */
  find(id: string): OwnershipGrant | undefined {
    const list = this.list;
    if (list !== undefined) {
      for (let i = 0; i < list.length; i += 3) if (list[i] === id) return this.row(list[i], list[i + 1], list[i + 2]);
      return undefined;
    }
    const resourceId = (this.byId as Map<string, string>).get(id);
    if (resourceId === undefined) return undefined;
    const pairs = (this.byResource as Map<string, string[]>).get(resourceId) as string[];
    for (let i = 0; i < pairs.length; i += 2) if (pairs[i] === id) return this.row(id, resourceId, pairs[i + 1]);
    return undefined;
  }

  /** Adds a grant whose id is not in the set yet. */
  add(id: string, resourceId: string, roleId: string): void {
    this.count++;
    const list = this.list;
    if (list === undefined) {
      this.file(id, resourceId, roleId);
      return;
    }
    list.push(id, resourceId, roleId);
    if (list.length > GRANT_SCAN_LIMIT * 3) {
      this.byResource = new Map();
      this.byId = new Map();
      this.list = undefined;
      for (let i = 0; i < list.length; i += 3) this.file(list[i], list[i + 1], list[i + 2]);
    }
  }

  private file(id: string, resourceId: string, roleId: string): void {
    const m = this.byResource as Map<string, string[]>;
    const pairs = m.get(resourceId);
    if (pairs === undefined) m.set(resourceId, [id, roleId]);
    else pairs.push(id, roleId);
    (this.byId as Map<string, string>).set(id, resourceId);
  }

  /** Removes the grant with this id; a no-op when absent. */
  delete(id: string): void {
    const list = this.list;
    if (list !== undefined) {
      for (let i = 0; i < list.length; i += 3) {
        if (list[i] !== id) continue;
        // Move the last entry into the hole.
        const last = list.length - 3;
        list[i] = list[last];
        list[i + 1] = list[last + 1];
        list[i + 2] = list[last + 2];
        list.length = last;
        this.count--;
        return;
      }
      return;
    }
    const byId = this.byId as Map<string, string>;
    const byResource = this.byResource as Map<string, string[]>;
    const resourceId = byId.get(id);
    if (resourceId === undefined) return;
    byId.delete(id);
    const pairs = byResource.get(resourceId) as string[];
    const i = pairs.indexOf(id);
    pairs.splice(i - (i % 2), 2);
    if (pairs.length === 0) byResource.delete(resourceId);
    this.count--;
    if (this.count <= GRANT_SCAN_LIMIT / 2) {
      const rows: string[] = [];
      for (const [r, ps] of byResource) for (let k = 0; k < ps.length; k += 2) rows.push(ps[k], r, ps[k + 1]);
      this.list = rows;
      this.byResource = undefined;
      this.byId = undefined;
    }
  }

  /** Every grant, in no particular order. */
  rows(): OwnershipGrant[] {
    const out: OwnershipGrant[] = [];
    if (this.list !== undefined) {
      const list = this.list;
      for (let i = 0; i < list.length; i += 3) out.push(this.row(list[i], list[i + 1], list[i + 2]));
      return out;
    }
    for (const [r, ps] of this.byResource as Map<string, string[]>) for (let k = 0; k < ps.length; k += 2) out.push(this.row(ps[k], r, ps[k + 1]));
    return out;
  }

  /** Sorted (resource id, grant rows) pairs, for derivedState; checks the form agrees with the count. */
  canonical(): unknown {
    const rows = this.rows();
    let form = 'ok';
    if (this.list !== undefined && this.list.length > GRANT_SCAN_LIMIT * 3) form = 'list too long';
    if (this.list === undefined) {
      if (this.count <= GRANT_SCAN_LIMIT / 2) form = 'map too small';
      const byId = this.byId as Map<string, string>;
      if (byId.size !== rows.length || rows.some((g) => byId.get(g.id) !== g.resourceId)) form = 'byId out of sync';
    }
    const byResource = new Map<string, OwnershipGrant[]>();
    for (const g of rows) (byResource.get(g.resourceId) ?? byResource.set(g.resourceId, []).get(g.resourceId)!).push(g);
    return {
      form: form === 'ok' && rows.length === this.count ? 'ok' : `${form}, ${rows.length} rows for a count of ${this.count}`,
      byResource: [...byResource.entries()].map(([k, v]) => [k, v.sort((x, y) => (x.id < y.id ? -1 : 1))]).sort((a, b) => ((a[0] as string) < (b[0] as string) ? -1 : 1)),
    };
  }
}

/** Above this many assignments a subject node also keeps them by scope. */
export const ASSIGNMENT_SCAN_LIMIT = 16;
/** Up to this many assignments are also copied into the subject node's own fields. */
export const INLINE_ASSIGNMENTS = 4;

/** The current key of a resource type, shared by every resource of that type id. */
export interface TypeSlot {
  /** The resource type id. */
  readonly id: string;
  /** Its number, stored in the resource table's hot words (see facts ({@link FACT_FLAGS})). */
  readonly num: number;
  readonly key: string | undefined;
  /** Number of collections for this resource type (any scope): 0 lets a check skip them. */
  readonly collections: number;
}

/** What a check reads about one resource. */
export interface ResourceNode {
  readonly id: string;
  /** Whether the resource row exists (its fields are kept in the node; see TenantIndex.resource). */
  readonly exists: boolean;
  /** Slot of the row's resource type (its key is undefined while the type does not exist). */
  readonly type: TypeSlot | undefined;
  /** The row's external id, copied so the common path need not read the row. */
  readonly ext: string | undefined;
  /** The row's owner scope id (the scope row's own string when it exists), for the gate. */
  readonly owner: string | undefined;
  /**
   * How many permission rows have a `resourcePattern` equal to this id, plus (while the row
   * exists) how many equal its external id. When 0, no permission can name this resource, so
   * a check looks up only the `*` pattern and never reads the id or external id strings.
   */
  readonly patterns: number;
  /** Links to its parent (one, unless the data is bad). */
  readonly parents: RowBag<ParentLink> | undefined;
  /** The parent node of the chosen link (see TenantIndex.parentOf), copied for walks. */
  readonly up: ResourceNode | undefined;
  /** Whether the chosen link's edge cascades (`inherit`). */
  readonly upInherit: boolean;
  /** This node's number: its slot in the index's plain-node bitmap (see TenantIndex.upIsPlain). */
  readonly num: number;
  /** `up.num`, or -1 without a parent: reads the parent's bit without touching the parent. */
  readonly upNum: number;
  /** Policies targeting it directly. */
  readonly policies: RowBag<Policy> | undefined;
  readonly links: RowBag<ResourceScopeLink> | undefined;
  /** Tag assignments targeting it. */
  readonly tags: RowBag<TagAssignment> | undefined;
}

/**
 * Resource facts: what a check learns about a resource from its slot in the resource table
 * alone, without reading its node: two int32 words kept current by the index (see
 * {@link IdTable}). On a large tenant the node is one more trip to DRAM, and the common check
 * (a resource without policies, links or permissions naming it, whose parent is plain, absent
 * or not cascading) needs nothing else.
 *
 * Word {@link FACT_FLAGS}: the `F_*` bits, and the number of its type slot plus one from bit
 * {@link F_TYPE_SHIFT} (0: no type slot). Word {@link FACT_UP_NUM}: the node's `upNum`.
 */
export const FACT_FLAGS = 0;
export const FACT_UP_NUM = 1;
/** The resource row exists. */
export const F_EXISTS = 1;
/** Some policy targets it directly. */
export const F_POLICIES = 2;
/** It has scope links. */
export const F_LINKS = 4;
/** Some permission names it by id or external id (`patterns` > 0). */
export const F_NAMED = 8;
/** It has a parent link. */
export const F_UP = 16;
/** Its parent link cascades (`inherit`). */
export const F_UP_INHERIT = 32;
export const F_TYPE_SHIFT = 8;

function sameStar(a: StarCover | undefined, b: StarCover | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function factFlags(n: MutableResourceNode): number {
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

interface MutableSubjectNode {
  /** The subject id (the string of the first row that named it). */
  readonly id: string;
  row: Subject | undefined;
  type: string | undefined;
  assignments: string[];
  assignmentsByScope: Map<string, string[]> | undefined;
  inline: number;
  s0: string | undefined;
  r0: string | undefined;
  s1: string | undefined;
  r1: string | undefined;
  s2: string | undefined;
  r2: string | undefined;
  s3: string | undefined;
  r3: string | undefined;
  grantsByResource: SubjectGrants | undefined;
  tags: MutableRowBag<TagAssignment> | undefined;
}

interface MutableTypeSlot {
  readonly id: string;
  readonly num: number;
  key: string | undefined;
  collections: number;
}

/**
 * A parent edge with the parent's node resolved, so a hierarchy step costs no lookup in the
 * big resource map. The parent node stays alive (see `refs`) as long as a link points at it.
 */
export interface ParentLink {
  /** The edge id. */
  readonly id: string;
  readonly edge: ResourceEdge;
  /** `edge.cascade === 'inherit'`, copied so a walk need not read the edge. */
  readonly inherit: boolean;
  readonly parent: ResourceNode;
}

interface MutableParentLink extends ParentLink {
  readonly parent: MutableResourceNode;
}

interface MutableResourceNode {
  readonly id: string;
  exists: boolean;
  /** The row's `displayName`, `attributes` ({@link EMPTY_ATTRIBUTES} for `{}`) and `createdBy` as given; `createdAt` is in the index's columns. */
  displayName: string | null | undefined;
  attributes: unknown;
  createdBy: unknown;
  type: MutableTypeSlot | undefined;
  ext: string | undefined;
  owner: string | undefined;
  patterns: number;
  parents: MutableRowBag<MutableParentLink> | undefined;
  up: MutableResourceNode | undefined;
  upInherit: boolean;
  readonly num: number;
  upNum: number;
  /** Number of parent links pointing at this node: it must not be dropped while any does. */
  refs: number;
  policies: MutableRowBag<Policy> | undefined;
  links: MutableRowBag<ResourceScopeLink> | undefined;
  tags: MutableRowBag<TagAssignment> | undefined;
}

/** An entry of a role's cover index: the role-permission id and its permission row. */
export interface CoverEntry {
  readonly id: string;
  readonly permission: Permission;
}

/** A role's cover index: resourcePattern → action → entries (any type). */
export type CoverIndex = ReadonlyMap<string, ReadonlyMap<string, RowBag<CoverEntry>>>;

/**
 * A role's permissions with pattern `*` (the ones most checks use), flattened for a scan:
 * `[action, type, permission, …]`, the action and type as term numbers of the index (see
 * {@link TenantIndex.termNum}; {@link ANY_TERM} for `*`). Entries with a named action come
 * first, those with action `*` last, so a scan finds the permission the cover index would.
 * A handful of small integers in one array, where the cover index is two maps deep.
 */
export type StarCover = readonly (number | Permission)[];
export const STAR_STRIDE = 3;
/** Term number of `*` in a {@link StarCover}. */
export const ANY_TERM = -1;
/** Term number of a string no `*`-pattern permission uses. */
export const NO_TERM = -2;

/**
 * What a check reads about one role, behind one lookup: its row (undefined while the role does
 * not exist), its cover index (undefined while it has no permission) and its {@link StarCover}
 * (undefined while it has no permission with pattern `*`).
 */
export interface RoleInfo {
  readonly id: string;
  readonly row: Role | undefined;
  /** `row.scopeId` as the scope row's own string when that exists (compared by reference). */
  readonly scope: string | undefined;
  readonly cover: CoverIndex | undefined;
  readonly star: StarCover | undefined;
}

interface MutableRoleInfo {
  readonly id: string;
  row: Role | undefined;
  scope: string | undefined;
  cover: Map<string, Map<string, MutableRowBag<CoverEntry>>> | undefined;
  star: StarCover | undefined;
}

// --- row validation -----------------------------------------------------------------------------

const REQUIRED_STRINGS: { [K in EntityKind]: readonly string[] } = {
  scope: ['id'],
  subject: ['id', 'type'],
  role: ['id', 'scopeId'],
  permission: ['id', 'action', 'resourceType', 'resourcePattern'],
  role_permission: ['id', 'roleId', 'permissionId'],
  membership: ['id', 'subjectId', 'scopeId'],
  role_assignment: ['id', 'membershipId', 'roleId'],
  scope_override: ['id', 'scopeId', 'roleId', 'mode'],
  ownership_grant: ['id', 'subjectId', 'resourceId', 'roleId'],
  resource_type: ['id', 'key'],
  resource: ['id', 'resourceTypeId', 'ownerScopeId', 'externalResourceId'],
  resource_scope_link: ['id', 'resourceId', 'scopeId'],
  resource_edge: ['id', 'parentResourceId', 'childResourceId', 'cascade'],
  collection: ['id', 'scopeId', 'resourceTypeId'],
  policy: ['id', 'effect'],
  tag_group: ['id', 'key'],
  tag: ['id', 'tagGroupId', 'identifier'],
  tag_assignment: ['id', 'tagId', 'targetType', 'targetId'],
  tag_binding: ['id', 'tagId', 'roleId', 'scopeId'],
};

const KIND_SET = new Set<string>(ENTITY_KINDS);

function rowError(kind: EntityKind, row: unknown): string | null {
  if (row === null || typeof row !== 'object') return 'row is not an object';
  const r = row as Record<string, unknown>;
  for (const f of REQUIRED_STRINGS[kind]) {
    if (typeof r[f] !== 'string') return `${kind}.${f} must be a string`;
  }
  switch (kind) {
    case 'scope':
      if (r.parentId !== undefined && r.parentId !== null && typeof r.parentId !== 'string') return 'scope.parentId must be a string';
      break;
    case 'scope_override':
      if (!['block', 'add', 'remove'].includes(r.mode as string)) return 'scope_override.mode is invalid';
      if (!Array.isArray(r.permissionIds) || !r.permissionIds.every((p) => typeof p === 'string')) {
        return 'scope_override.permissionIds must be an array of strings';
      }
      break;
    case 'policy': {
      const t = r.target as Record<string, unknown> | null | undefined;
      const targetOk =
        !!t &&
        typeof t === 'object' &&
        ((t.kind === 'resource' && typeof t.resourceId === 'string') ||
          (t.kind === 'collection' && typeof t.collectionId === 'string'));
      if (!targetOk) return 'policy.target is invalid';
      if (!Array.isArray(r.actions) || !r.actions.every((a) => typeof a === 'string')) return 'policy.actions must be an array of strings';
      if (r.effect !== 'allow' && r.effect !== 'deny') return 'policy.effect is invalid';
      break;
    }
    case 'resource_edge':
      if (r.cascade !== 'inherit' && r.cascade !== 'none') return 'resource_edge.cascade is invalid';
      break;
    case 'tag_assignment':
      if (!['resource', 'subject', 'scope'].includes(r.targetType as string)) return 'tag_assignment.targetType is invalid';
      break;
  }
  return null;
}

type Tables = { [K in EntityKind]: Map<string, RowsByKind[K]> };

/** See {@link TenantIndex.builder}. */
export interface TenantIndexBuilder {
  /** Checks and indexes one row (a later row with the same id replaces it). Throws InvalidChangeError on a malformed row. */
  add(kind: EntityKind, row: unknown): void;
  /** The index, at `revision`; the builder is spent. */
  build(revision: number): TenantIndex;
}

/**
 * The order fromSnapshot indexes kinds in: the entities other rows refer to come first, so a
 * referring row's copy of their id can be the referred row's own string (see `slim`). The
 * result does not depend on the order (the differential test builds in change order too).
 */
const BUILD_ORDER: readonly EntityKind[] = [
  'scope',
  'resource_type',
  'role',
  'permission',
  'subject',
  'resource',
  'tag_group',
  'tag',
  ...ENTITY_KINDS.filter((k) => !['scope', 'resource_type', 'role', 'permission', 'subject', 'resource', 'tag_group', 'tag'].includes(k)),
];

/** `{}`, as a {@link ResourceView} gives it for attributes given as `{}`. */
const FROZEN_EMPTY: Record<string, never> = Object.freeze({});

/** See {@link TenantIndex.resourceView}. Absent fields read as undefined. */
class ResourceView implements Resource {
  constructor(
    private readonly idx: TenantIndex,
    private readonly n: MutableResourceNode,
  ) {}
  get id(): string {
    return this.n.id;
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
    return this.idx.createdAtOfNode(this.n) as string;
  }
  get createdBy(): string {
    return this.n.createdBy as string;
  }
}

/** A resource's `attributes` that were `{}` (so 1M resources without attributes share nothing). */
const EMPTY_ATTRIBUTES = Symbol('{}');

function isEmptyObject(v: unknown): boolean {
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

/** Copies `key` from `from` to `to` when present (keeps null; leaves absent absent). */
function copyField(to: Record<string, unknown>, from: Record<string, unknown>, key: string): void {
  const v = from[key];
  if (v !== undefined) to[key] = v;
}

/** One tenant's rows and derived maps. See the module comment. */
export class TenantIndex {
  private _revision: number;
  private readonly t: Tables;

  private readonly subjects = new Map<string, MutableSubjectNode>();
  /** typeId → slot holding the type's current key (never dropped: one per type id seen). */
  private readonly typeSlots = new Map<string, MutableTypeSlot>();
  /** Resource nodes by id, with each node's facts ({@link FACT_FLAGS}) in its slot. */
  private readonly resources: IdTable<MutableResourceNode>;
  /** Type slots by their number. */
  private readonly typeSlotsByNum: MutableTypeSlot[] = [];
  // scopes
  private readonly scopeChildren: Multi = new Map();
  private readonly pathCache = new Map<string, CachedPath>();
  /** Bumped on every override change; invalidates the paths' cached override flag. */
  private overridesVersion = 0;
  private readonly overridesByScopeRole = new Map<string, Map<string, MutableRowBag<ScopeOverride>>>();
  // roles and permissions
  private readonly rpByRole: Multi = new Map();
  private readonly rpByPermission: Multi = new Map();
  /**
   * role → its row and cover index (resourcePattern → action → entries). A check looks up the
   * few patterns that can cover the resource (`*`, and its external id and id when a permission
   * names them) and the action or `*`, then verifies the type on the row: no key building, no
   * scan of the role's permissions.
   */
  private readonly roleInfos = new Map<string, MutableRoleInfo>();
  /**
   * Term numbers of the actions and type keys of permissions with pattern `*` (see
   * {@link StarCover}). Never shrinks: a term outlives its last permission, harmlessly.
   */
  private readonly terms = new Map<string, number>();
  // memberships (assignments are joined into subject nodes through their membership)
  private readonly assignmentsByMembership: Multi = new Map();
  // resources
  /**
   * externalResourceId → the number of a resource carrying it (any type), confirmed by the node
   * (`nodesByNum`): 8 bytes an id, where a Map cost ~30 and three DRAM trips per resource built.
   */
  private readonly externalFirst: NumTable;
  /** externalResourceId → ids of the other resources carrying it, for an id several resources carry. */
  private readonly externalMore: Multi = new Map();
  /** Resource nodes by number. */
  private nodesByNum: (MutableResourceNode | undefined)[];
  /** resourcePattern → number of permission rows with that pattern (feeds ResourceNode.patterns). */
  private readonly patternCounts = new Map<string, number>();
  /**
   * One byte per resource node number: 1 when the node is "plain" (its row exists, no
   * permission names it, it has no parent), else 0. A hierarchy walk whose next ancestor is
   * plain can stop without reading that ancestor's node: nothing can be inherited from it or
   * above it. Kept current on every change of a node's row, patterns or parent: O(1) each.
   */
  private plain: Uint8Array;
  private nextNum = 0;
  /** Numbers of dropped nodes, reused so the bitmap does not grow with churn. */
  private readonly freeNums: number[] = [];
  /**
   * The grants of each subject that has some, by the set's number (reused once a set empties).
   * Grants have no row table: a grant is found through its id's number in `grantsById`.
   */
  private readonly grantSets: (SubjectGrants | undefined)[] = [];
  private readonly freeGrantNums: number[] = [];
  /** Grant id → the number of its subject's grant set (a Map cost three DRAM trips per grant to build). */
  private readonly grantsById = new NumTable({
    holds: (num, id) => this.grantSets[num]?.has(id) ?? false,
    eachKey: (visit) => {
      for (const set of this.grantSets) if (set !== undefined) for (const g of set.rows()) visit(g.id, set.num);
    },
  });
  /** Number of resource rows (they have no row table). */
  private resourceCount = 0;
  /**
   * `createdAt` of each resource node by its number: a canonical ISO-8601 time as milliseconds
   * (8 bytes instead of a 40-byte string), else NaN and the value as given in `createdAtRaw`
   * (absent when the row has none).
   */
  private createdAt: Float64Array;
  private readonly createdAtRaw = new Map<number, unknown>();
  private readonly collectionsByTypeScope = new Map<string, Map<string, MutableRowBag<Collection>>>();
  private readonly policiesByCollection = new Map<string, MutableRowBag<Policy>>();
  // tags
  private readonly scopeTags = new Map<string, MutableRowBag<TagAssignment>>();
  private readonly bindingsByTagScope = new Map<string, Map<string, MutableRowBag<TagBinding>>>();

  /** `resources`: expected number of resource nodes (sizes the table once instead of growing it). */
  private constructor(revision: number, resources = 0) {
    this._revision = revision;
    // Only a size: anything but a positive integer sizes nothing.
    if (!Number.isSafeInteger(resources) || resources < 0) resources = 0;
    this.resources = new IdTable<MutableResourceNode>(resources, undefined, (n) => n.id);
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
    const t = {} as Record<EntityKind, Map<string, unknown>>;
    for (const k of ENTITY_KINDS) t[k] = new Map();
    this.t = t as unknown as Tables;
  }

  /** Builds an index from every row of a tenant at `snapshot.revision`. Throws InvalidChangeError on a malformed row. */
  static fromSnapshot(snapshot: TenantSnapshot): TenantIndex {
    if (!Number.isSafeInteger(snapshot.revision)) throw new InvalidChangeError('snapshot revision must be an integer');
    for (const kind of ENTITY_KINDS) {
      for (const row of (snapshot.rows[kind] ?? []) as unknown[]) {
        const err = rowError(kind, row);
        if (err) throw new InvalidChangeError(err);
      }
    }
    const idx = new TenantIndex(snapshot.revision, snapshot.rows.resource?.length ?? 0);
    for (const kind of BUILD_ORDER) {
      for (const row of (snapshot.rows[kind] ?? []) as RowsByKind[EntityKind][]) idx.upsert(kind, row);
    }
    return idx;
  }

  /**
   * Builds an index from rows handed in one at a time (as a Watch snapshot arrives in chunks),
   * so the caller need not hold every row of the tenant at once: each row is checked and
   * indexed on arrival, and what the index does not keep of it is garbage at once (young
   * garbage, cheap to collect, that leaves the old generation compact). `expectedResources`
   * sizes the resource table once. The result equals `fromSnapshot` of the same rows
   * (rows of kinds other rows refer to, sent first, also share their id strings with them).
   */
  static builder(expectedResources = 0): TenantIndexBuilder {
    const idx = new TenantIndex(0, expectedResources);
    let done = false;
    return {
      add(kind: EntityKind, row: unknown): void {
        if (done) throw new Error('TenantIndex.builder: already built');
        if (!KIND_SET.has(kind)) throw new InvalidChangeError(`unknown kind ${String(kind)}`);
        const err = rowError(kind, row);
        if (err) throw new InvalidChangeError(err);
        idx.upsert(kind, row as RowsByKind[EntityKind]);
      },
      build(revision: number): TenantIndex {
        if (done) throw new Error('TenantIndex.builder: already built');
        if (!Number.isSafeInteger(revision)) throw new InvalidChangeError('snapshot revision must be an integer');
        done = true;
        idx._revision = revision;
        return idx;
      },
    };
  }

  /** The tenant revision this index reflects. */
  get revision(): number {
    return this._revision;
  }

  /**
   * Applies the changes of one revision. A revision at or below the current one is a replay
   * and is ignored (returns false). The batch is validated first and applied all-or-nothing:
   * a malformed change throws InvalidChangeError and leaves the index untouched.
   */
  apply(revision: number, changes: readonly Change[]): boolean {
    if (!Number.isSafeInteger(revision)) throw new InvalidChangeError('revision must be an integer');
    if (revision <= this._revision) return false;
    for (const c of changes) {
      if (!c || !KIND_SET.has(c.kind)) throw new InvalidChangeError(`unknown change kind ${String(c?.kind)}`);
      if (typeof c.id !== 'string') throw new InvalidChangeError('change id must be a string');
      if (c.op === 'upsert') {
        const err = rowError(c.kind, c.row);
        if (err) throw new InvalidChangeError(err);
        if ((c.row as { id: string }).id !== c.id) throw new InvalidChangeError(`change id ${c.id} does not match its row`);
      } else if (c.op !== 'delete') {
        throw new InvalidChangeError(`unknown change op ${String((c as { op: unknown }).op)}`);
      }
    }
    for (const c of changes) {
      if (c.op === 'upsert') this.upsert(c.kind, c.row as RowsByKind[EntityKind]);
      else this.remove(c.kind, c.id);
    }
    this._revision = revision;
    return true;
  }

  private upsert(kind: EntityKind, given: RowsByKind[EntityKind]): void {
    const row = this.slim(kind, given);
    if (kind === 'resource' || kind === 'ownership_grant') {
      // No row table: a resource's fields live in its node, a grant's in its subject's grants.
      const old = kind === 'resource' ? this.resource(row.id) : this.ownershipGrant(row.id);
      if (old) this.unindex(kind, old);
      this.index(kind, row, old);
      return;
    }
    const table = this.t[kind] as Map<string, RowsByKind[EntityKind]>;
    const old = table.get(row.id);
    if (old) this.unindex(kind, old);
    table.set(row.id, row);
    this.index(kind, row, old);
  }

  private remove(kind: EntityKind, id: string): void {
    if (kind === 'resource' || kind === 'ownership_grant') {
      const old = kind === 'resource' ? this.resource(id) : this.ownershipGrant(id);
      if (old) this.unindex(kind, old);
      return;
    }
    const table = this.t[kind] as Map<string, RowsByKind[EntityKind]>;
    const old = table.get(id);
    if (!old) return;
    this.unindex(kind, old);
    table.delete(id);
    if (kind === 'scope') this.invalidatePaths(id);
  }

  /**
   * The row as the index keeps it. Kinds a tenant holds by the hundred thousand keep only the
   * fields of their model interface (a row from the Watch stream also carries `tenantId`,
   * timestamps and the like, which no decision reads), and their references to other rows use
   * the referred row's own id string when it is indexed: one copy of each id instead of one
   * per referring row. Other kinds are kept as given.
   */
  private slim(kind: EntityKind, row: RowsByKind[EntityKind]): RowsByKind[EntityKind] {
    const r = row as unknown as Record<string, unknown>;
    switch (kind) {
      case 'subject': {
        const out: Record<string, unknown> = { id: r.id, type: r.type, externalId: r.externalId };
        copyField(out, r, 'metadata');
        return out as unknown as Subject;
      }
      case 'membership': {
        const m = row as Membership;
        return { id: m.id, subjectId: this.subjectStr(m.subjectId), scopeId: this.scopeStr(m.scopeId) };
      }
      case 'role_assignment': {
        const a = row as RoleAssignment;
        return { id: a.id, membershipId: this.t.membership.get(a.membershipId)?.id ?? a.membershipId, roleId: this.roleStr(a.roleId) };
      }
      case 'role_permission': {
        const rp = row as RolePermission;
        return { id: rp.id, roleId: this.roleStr(rp.roleId), permissionId: this.t.permission.get(rp.permissionId)?.id ?? rp.permissionId };
      }
      case 'ownership_grant':
      case 'resource':
        // Kept in their subject's grants and in their node, field by field (see index()).
        return row;
      case 'resource_edge': {
        const e = row as ResourceEdge;
        const out: Record<string, unknown> = {
          id: e.id,
          parentResourceId: this.resourceStr(e.parentResourceId),
          childResourceId: this.resourceStr(e.childResourceId),
          cascade: e.cascade,
        };
        copyField(out, r, 'relationshipType');
        return out as unknown as ResourceEdge;
      }
      case 'resource_scope_link': {
        const l = row as ResourceScopeLink;
        return { id: l.id, resourceId: this.resourceStr(l.resourceId), scopeId: this.scopeStr(l.scopeId), linkType: l.linkType };
      }
      case 'tag_assignment': {
        const a = row as TagAssignment;
        const target = a.targetType === 'resource' ? this.resourceStr(a.targetId) : a.targetType === 'subject' ? this.subjectStr(a.targetId) : this.scopeStr(a.targetId);
        return { id: a.id, tagId: this.t.tag.get(a.tagId)?.id ?? a.tagId, targetType: a.targetType, targetId: target };
      }
      default:
        return row;
    }
  }

  private scopeStr(id: string): string {
    return this.t.scope.get(id)?.id ?? id;
  }
  private roleStr(id: string): string {
    return this.t.role.get(id)?.id ?? id;
  }
  private subjectStr(id: string): string {
    return this.subjects.get(id)?.id ?? id;
  }
  /**
   * One string per creator: a tenant's resources are created by few subjects. A small map
   * (cleared when full, so it stays small and in cache) in front of the subjects map.
   */
  private creatorStr(id: string): string {
    let s = this.creators.get(id);
    if (s === undefined) {
      if (this.creators.size >= 4096) this.creators.clear();
      this.creators.set(id, (s = this.subjectStr(id)));
    }
    return s;
  }
  private readonly creators = new Map<string, string>();

  private resourceStr(id: string): string {
    return this.resources.get(id)?.id ?? id;
  }

  private subjectNodeFor(id: string): MutableSubjectNode {
    let n = this.subjects.get(id);
    if (!n) {
      // Fields in the order a check reads them (V8 lays them out in this order): the first
      // cache line or two of the node hold everything a role-based check needs.
      n = {
        row: undefined,
        type: undefined,
        inline: 0,
        grantsByResource: undefined,
        tags: undefined,
        s0: undefined,
        r0: undefined,
        s1: undefined,
        r1: undefined,
        s2: undefined,
        r2: undefined,
        s3: undefined,
        r3: undefined,
        assignments: [],
        assignmentsByScope: undefined,
        // Last: no check reads it (the fields above keep their cache lines).
        id,
      };
      this.subjects.set(id, n);
    }
    return n;
  }

  /** Drops a subject node that no longer carries anything. */
  private pruneSubject(id: string): void {
    const n = this.subjects.get(id);
    if (n && !n.row && n.assignments.length === 0 && n.grantsByResource === undefined && n.tags === undefined) this.subjects.delete(id);
  }

  private resourceNodeFor(id: string): MutableResourceNode {
    let n = this.resources.get(id);
    if (!n) {
      // Fields in the order a check reads them (V8 lays them out in this order).
      n = {
        exists: false,
        type: undefined,
        policies: undefined,
        patterns: this.patternCounts.get(id) ?? 0,
        up: undefined,
        upInherit: false,
        num: this.takeNum(),
        upNum: -1,
        owner: undefined,
        links: undefined,
        id,
        ext: undefined,
        parents: undefined,
        refs: 0,
        tags: undefined,
        displayName: undefined,
        attributes: undefined,
        createdBy: undefined,
      };
      this.resources.set(id, n);
      this.nodesByNum[n.num] = n;
      this.refreshCopies(n);
    }
    return n;
  }

  private pruneResource(id: string): void {
    const n = this.resources.get(id);
    if (n && !n.exists && !n.parents && !n.policies && !n.links && !n.tags && n.refs === 0) {
      this.resources.delete(id);
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
    return num;
  }

  /**
   * Re-derives a node's copies outside the node: its bit in the plain-node bitmap and its
   * facts in the resource table (after its row, type, patterns, parent, policies or links changed).
   */
  private refreshCopies(n: MutableResourceNode): void {
    this.plain[n.num] = n.exists && n.patterns === 0 && n.up === undefined ? 1 : 0;
    // Word FACT_FLAGS, then FACT_UP_NUM.
    this.resources.setWords(n.id, factFlags(n), n.upNum);
  }

  /** Re-derives a node's `up`/`upInherit` from its chosen parent link. */
  private refreshUp(n: MutableResourceNode): void {
    const link = this.parentOf(n) as MutableParentLink | undefined;
    n.up = link?.parent;
    n.upInherit = link?.inherit ?? false;
    n.upNum = link ? link.parent.num : -1;
    this.refreshCopies(n);
  }

  private typeSlot(typeId: string): MutableTypeSlot {
    let slot = this.typeSlots.get(typeId);
    // Every collection row goes through here, so a slot created later starts with none.
    if (!slot) {
      slot = { id: typeId, num: this.typeSlotsByNum.length, key: this.t.resource_type.get(typeId)?.key, collections: 0 };
      this.typeSlots.set(typeId, slot);
      this.typeSlotsByNum.push(slot);
    }
    return slot;
  }

  /** Counts a permission's pattern in or out, on the nodes whose id or external id it names. */
  private countPattern(pattern: string, delta: 1 | -1): void {
    const c = (this.patternCounts.get(pattern) ?? 0) + delta;
    if (c === 0) this.patternCounts.delete(pattern);
    else this.patternCounts.set(pattern, c);
    const byId = this.resources.get(pattern);
    if (byId) {
      byId.patterns += delta;
      this.refreshCopies(byId);
    }
    for (const n of this.nodesByExternal(pattern)) {
      n.patterns += delta;
      this.refreshCopies(n);
    }
  }

  /** Joins an assignment into its membership's subject node (when the membership is known). */
  private linkAssignment(a: RoleAssignment, m: Membership | undefined): void {
    if (!m) return;
    const n = this.subjectNodeFor(m.subjectId);
    const entry = [a.id, m.id, this.t.scope.get(m.scopeId)?.id ?? m.scopeId, this.t.role.get(a.roleId)?.id ?? a.roleId];
    n.assignments.push(...entry);
    if (n.assignmentsByScope) {
      const list = n.assignmentsByScope.get(entry[A_SCOPE]);
      if (list) list.push(...entry);
      else n.assignmentsByScope.set(entry[A_SCOPE], entry);
    } else if (n.assignments.length > ASSIGNMENT_SCAN_LIMIT * A_STRIDE) n.assignmentsByScope = groupByScope(n.assignments);
    refreshInline(n);
  }

  private unlinkAssignment(a: RoleAssignment, m: Membership | undefined): void {
    if (!m) return;
    const n = this.subjects.get(m.subjectId);
    if (!n) return;
    const i = findAssignment(n.assignments, a.id);
    if (i < 0) return;
    const scopeId = n.assignments[i + A_SCOPE];
    n.assignments.splice(i, A_STRIDE);
    refreshInline(n);
    if (n.assignmentsByScope) {
      if (n.assignments.length <= (ASSIGNMENT_SCAN_LIMIT / 2) * A_STRIDE) n.assignmentsByScope = undefined;
      else {
        const list = n.assignmentsByScope.get(scopeId);
        const j = list ? findAssignment(list, a.id) : -1;
        if (list && j >= 0) {
          list.splice(j, A_STRIDE);
          if (list.length === 0) n.assignmentsByScope.delete(scopeId);
        }
      }
    }
    this.pruneSubject(m.subjectId);
  }

  /** Adds the derived entries of a row (just stored in its table). */
  private index(kind: EntityKind, row: RowsByKind[EntityKind], old: RowsByKind[EntityKind] | undefined): void {
    switch (kind) {
      case 'scope': {
        const r = row as Scope;
        if (r.parentId) bagAdd(this.scopeChildren, r.parentId, r.id);
        // A new scope may complete the paths of children that arrived first; a re-parent moves a subtree.
        if (!old || (old as Scope).parentId !== r.parentId) this.invalidatePaths(r.id);
        break;
      }
      case 'subject': {
        const n = this.subjectNodeFor(row.id);
        n.row = row as Subject;
        n.type = (row as Subject).type;
        break;
      }
      case 'permission': {
        const p = row as Permission;
        for (const rpId of bagIds(this.rpByPermission.get(p.id))) {
          const rp = this.t.role_permission.get(rpId);
          if (rp) this.addCover(rp, p);
        }
        this.countPattern(p.resourcePattern, 1);
        break;
      }
      case 'role_permission': {
        const rp = row as RolePermission;
        bagAdd(this.rpByRole, rp.roleId, rp.id);
        bagAdd(this.rpByPermission, rp.permissionId, rp.id);
        const p = this.t.permission.get(rp.permissionId);
        if (p) this.addCover(rp, p);
        break;
      }
      case 'membership': {
        const m = row as Membership;
        for (const aId of bagIds(this.assignmentsByMembership.get(m.id))) {
          const a = this.t.role_assignment.get(aId);
          if (a) this.linkAssignment(a, m);
        }
        break;
      }
      case 'role_assignment': {
        const a = row as RoleAssignment;
        bagAdd(this.assignmentsByMembership, a.membershipId, a.id);
        this.linkAssignment(a, this.t.membership.get(a.membershipId));
        break;
      }
      case 'scope_override': {
        const o = row as ScopeOverride;
        rbAdd2(this.overridesByScopeRole, o.scopeId, o.roleId, o);
        this.overridesVersion++;
        break;
      }
      case 'ownership_grant': {
        const g = row as OwnershipGrant;
        const n = this.subjectNodeFor(g.subjectId);
        let set = n.grantsByResource;
        if (set === undefined) {
          const num = this.freeGrantNums.pop() ?? this.grantSets.length;
          this.grantSets[num] = n.grantsByResource = set = new SubjectGrants(n.id, num);
        }
        // The set holds the grant before the table maps its id (a reseed lists the sets).
        set.add(g.id, this.resourceStr(g.resourceId), this.roleStr(g.roleId));
        this.grantsById.add(g.id, set.num);
        break;
      }
      case 'resource_type': {
        const rt = row as ResourceType;
        this.typeSlot(rt.id).key = rt.key;
        break;
      }
      case 'resource': {
        const r = row as Resource;
        const n = this.resourceNodeFor(r.id);
        n.exists = true;
        this.resourceCount++;
        n.type = this.typeSlot(r.resourceTypeId);
        n.ext = r.externalResourceId;
        n.owner = this.scopeStr(r.ownerScopeId);
        n.displayName = r.displayName;
        n.attributes = isEmptyObject(r.attributes) ? EMPTY_ATTRIBUTES : r.attributes;
        n.createdBy = typeof r.createdBy === 'string' ? this.creatorStr(r.createdBy) : r.createdBy;
        this.setCreatedAt(n.num, (r as { createdAt?: unknown }).createdAt);
        n.patterns += this.patternCounts.get(r.externalResourceId) ?? 0;
        this.refreshCopies(n);
        this.addExternal(n);
        break;
      }
      case 'resource_scope_link': {
        const l = row as ResourceScopeLink;
        const n = this.resourceNodeFor(l.resourceId);
        n.links = rbWith(n.links, l);
        this.refreshCopies(n);
        break;
      }
      case 'resource_edge': {
        const e = row as ResourceEdge;
        const n = this.resourceNodeFor(e.childResourceId);
        const parent = this.resourceNodeFor(e.parentResourceId);
        parent.refs++;
        n.parents = rbWith(n.parents, { id: e.id, edge: e, inherit: e.cascade === 'inherit', parent });
        this.refreshUp(n);
        break;
      }
      case 'collection': {
        const c = row as Collection;
        rbAdd2(this.collectionsByTypeScope, c.resourceTypeId, c.scopeId, c);
        this.typeSlot(c.resourceTypeId).collections++;
        break;
      }
      case 'policy': {
        const p = row as Policy;
        if (p.target.kind === 'resource') {
          const n = this.resourceNodeFor(p.target.resourceId);
          n.policies = rbWith(n.policies, p);
          this.refreshCopies(n);
        } else rbAdd(this.policiesByCollection, p.target.collectionId, p);
        break;
      }
      case 'tag_assignment': {
        const a = row as TagAssignment;
        if (a.targetType === 'subject') {
          const n = this.subjectNodeFor(a.targetId);
          n.tags = rbWith(n.tags, a);
        } else if (a.targetType === 'resource') {
          const n = this.resourceNodeFor(a.targetId);
          n.tags = rbWith(n.tags, a);
        } else rbAdd(this.scopeTags, a.targetId, a);
        break;
      }
      case 'tag_binding': {
        const b = row as TagBinding;
        rbAdd2(this.bindingsByTagScope, b.tagId, b.scopeId, b);
        break;
      }
      case 'role': {
        const info = this.roleInfoFor(row.id);
        info.row = row as Role;
        info.scope = this.t.scope.get(info.row.scopeId)?.id ?? info.row.scopeId;
        break;
      }
      case 'tag_group':
      case 'tag':
        // Read directly from their tables at evaluation time.
        break;
    }
  }

  /** Removes every derived entry a row contributed (its table entry is still present). */
  private unindex(kind: EntityKind, row: RowsByKind[EntityKind]): void {
    switch (kind) {
      case 'scope': {
        const r = row as Scope;
        if (r.parentId) bagDelete(this.scopeChildren, r.parentId, r.id);
        break;
      }
      case 'subject': {
        const n = this.subjects.get(row.id);
        if (n) {
          n.row = undefined;
          n.type = undefined;
        }
        this.pruneSubject(row.id);
        break;
      }
      case 'permission': {
        const p = row as Permission;
        for (const rpId of bagIds(this.rpByPermission.get(p.id))) {
          const rp = this.t.role_permission.get(rpId);
          if (rp) this.deleteCover(rp, p);
        }
        this.countPattern(p.resourcePattern, -1);
        break;
      }
      case 'role_permission': {
        const rp = row as RolePermission;
        bagDelete(this.rpByRole, rp.roleId, rp.id);
        bagDelete(this.rpByPermission, rp.permissionId, rp.id);
        const p = this.t.permission.get(rp.permissionId);
        if (p) this.deleteCover(rp, p);
        break;
      }
      case 'membership': {
        const m = row as Membership;
        for (const aId of bagIds(this.assignmentsByMembership.get(m.id))) {
          const a = this.t.role_assignment.get(aId);
          if (a) this.unlinkAssignment(a, m);
        }
        break;
      }
      case 'role_assignment': {
        const a = row as RoleAssignment;
        bagDelete(this.assignmentsByMembership, a.membershipId, a.id);
        this.unlinkAssignment(a, this.t.membership.get(a.membershipId));
        break;
      }
      case 'scope_override': {
        const o = row as ScopeOverride;
        rbDelete2(this.overridesByScopeRole, o.scopeId, o.roleId, o.id);
        this.overridesVersion++;
        break;
      }
      case 'ownership_grant': {
        const g = row as OwnershipGrant;
        const n = this.subjects.get(g.subjectId);
        // While the set still holds it (the table confirms a key through the set).
        this.grantsById.delete(g.id);
        const set = n?.grantsByResource;
        if (set) {
          set.delete(g.id);
          if (set.size === 0) {
            n!.grantsByResource = undefined;
            this.grantSets[set.num] = undefined;
            this.freeGrantNums.push(set.num);
          }
          this.pruneSubject(g.subjectId);
        }
        break;
      }
      case 'resource_type': {
        const rt = row as ResourceType;
        this.typeSlot(rt.id).key = undefined;
        break;
      }
      case 'resource': {
        const r = row as Resource;
        const n = this.resources.get(r.id);
        if (n) {
          // While the node still carries its external id (the table confirms keys through it).
          this.removeExternal(n);
          n.exists = false;
          this.resourceCount--;
          n.type = undefined;
          n.ext = undefined;
          n.owner = undefined;
          n.displayName = undefined;
          n.attributes = undefined;
          n.createdBy = undefined;
          this.setCreatedAt(n.num, undefined);
          n.patterns -= this.patternCounts.get(r.externalResourceId) ?? 0;
          this.refreshCopies(n);
        }
        this.pruneResource(r.id);
        break;
      }
      case 'resource_scope_link': {
        const l = row as ResourceScopeLink;
        const n = this.resources.get(l.resourceId);
        if (n) {
          n.links = rbWithout(n.links, l.id);
          this.refreshCopies(n);
        }
        this.pruneResource(l.resourceId);
        break;
      }
      case 'resource_edge': {
        const e = row as ResourceEdge;
        const n = this.resources.get(e.childResourceId);
        if (!n) break;
        let link: MutableParentLink | undefined;
        for (const l of bagRows(n.parents)) if (l.id === e.id) link = l;
        if (!link) break;
        n.parents = rbWithout(n.parents, e.id);
        this.refreshUp(n);
        link.parent.refs--;
        this.pruneResource(link.parent.id);
        this.pruneResource(e.childResourceId);
        break;
      }
      case 'collection': {
        const c = row as Collection;
        rbDelete2(this.collectionsByTypeScope, c.resourceTypeId, c.scopeId, c.id);
        this.typeSlot(c.resourceTypeId).collections--;
        break;
      }
      case 'policy': {
        const p = row as Policy;
        if (p.target.kind === 'resource') {
          const n = this.resources.get(p.target.resourceId);
          if (n) {
            n.policies = rbWithout(n.policies, p.id);
            this.refreshCopies(n);
          }
          this.pruneResource(p.target.resourceId);
        } else rbDelete(this.policiesByCollection, p.target.collectionId, p.id);
        break;
      }
      case 'tag_assignment': {
        const a = row as TagAssignment;
        if (a.targetType === 'subject') {
          const n = this.subjects.get(a.targetId);
          if (n) n.tags = rbWithout(n.tags, a.id);
          this.pruneSubject(a.targetId);
        } else if (a.targetType === 'resource') {
          const n = this.resources.get(a.targetId);
          if (n) n.tags = rbWithout(n.tags, a.id);
          this.pruneResource(a.targetId);
        } else rbDelete(this.scopeTags, a.targetId, a.id);
        break;
      }
      case 'tag_binding': {
        const b = row as TagBinding;
        rbDelete2(this.bindingsByTagScope, b.tagId, b.scopeId, b.id);
        break;
      }
      case 'role': {
        const info = this.roleInfos.get(row.id);
        if (info) {
          info.row = undefined;
          info.scope = undefined;
          this.pruneRoleInfo(info);
        }
        break;
      }
      case 'tag_group':
      case 'tag':
        break;
    }
  }

  private roleInfoFor(id: string): MutableRoleInfo {
    let info = this.roleInfos.get(id);
    if (!info) this.roleInfos.set(id, (info = { id, row: undefined, scope: undefined, cover: undefined, star: undefined }));
    return info;
  }

  private pruneRoleInfo(info: MutableRoleInfo): void {
    if (info.row === undefined && info.cover === undefined) this.roleInfos.delete(info.id);
  }

  private addCover(rp: RolePermission, p: Permission): void {
    const info = this.roleInfoFor(rp.roleId);
    info.cover ??= new Map<string, Map<string, MutableRowBag<CoverEntry>>>();
    rbAdd(nested(info.cover, p.resourcePattern), p.action, { id: rp.id, permission: p });
    if (p.resourcePattern === '*') info.star = this.starCoverOf(info);
  }

  /** Builds a role's {@link StarCover} from its cover index (interning new terms). */
  private starCoverOf(info: MutableRoleInfo): StarCover | undefined {
    const byAction = info.cover?.get('*');
    if (byAction === undefined) return undefined;
    const out: (number | Permission)[] = [];
    const push = (bag: MutableRowBag<CoverEntry>) => {
      for (const e of bagRows<CoverEntry>(bag)) {
        const p = e.permission;
        out.push(this.intern(p.action), this.intern(p.resourceType), p);
      }
    };
    for (const [action, bag] of byAction) if (action !== '*') push(bag);
    const any = byAction.get('*');
    if (any !== undefined) push(any);
    return out;
  }

  private intern(term: string): number {
    if (term === '*') return ANY_TERM;
    let n = this.terms.get(term);
    if (n === undefined) this.terms.set(term, (n = this.terms.size));
    return n;
  }

  /**
   * The number of an action or type key in the {@link StarCover}s, or {@link NO_TERM} when no
   * permission with pattern `*` uses it (then only entries with `*` there can match it).
   */
  termNum(term: string): number {
    return this.terms.get(term) ?? NO_TERM;
  }

  private deleteCover(rp: RolePermission, p: Permission): void {
    const info = this.roleInfos.get(rp.roleId);
    const byPattern = info?.cover;
    if (!info || !byPattern) return;
    const byAction = byPattern.get(p.resourcePattern);
    if (byAction) {
      rbDelete(byAction, p.action, rp.id);
      if (byAction.size === 0) byPattern.delete(p.resourcePattern);
    }
    if (p.resourcePattern === '*') info.star = this.starCoverOf(info);
    if (byPattern.size === 0) {
      info.cover = undefined;
      this.pruneRoleInfo(info);
    }
  }

  /** Drops the cached paths of a scope and of everything below it (cycle-safe). */
  private invalidatePaths(scopeId: string): void {
    const seen = new Set<string>();
    const stack = [scopeId];
    while (stack.length > 0) {
      const id = stack.pop() as string;
      if (seen.has(id)) continue;
      seen.add(id);
      this.pathCache.delete(id);
      for (const child of bagIds(this.scopeChildren.get(id))) stack.push(child);
    }
  }

  // --- reads: rows --------------------------------------------------------------------------------

  scope(id: string): Scope | undefined {
    return this.t.scope.get(id);
  }
  subject(id: string): Subject | undefined {
    return this.t.subject.get(id);
  }
  role(id: string): Role | undefined {
    return this.t.role.get(id);
  }
  permission(id: string): Permission | undefined {
    return this.t.permission.get(id);
  }
  rolePermission(id: string): RolePermission | undefined {
    return this.t.role_permission.get(id);
  }
  membership(id: string): Membership | undefined {
    return this.t.membership.get(id);
  }
  roleAssignment(id: string): RoleAssignment | undefined {
    return this.t.role_assignment.get(id);
  }
  scopeOverride(id: string): ScopeOverride | undefined {
    return this.t.scope_override.get(id);
  }
  /** A grant row, rebuilt from its subject's grants (a new object on every call). */
  ownershipGrant(id: string): OwnershipGrant | undefined {
    const num = this.grantsById.get(id);
    return num < 0 ? undefined : this.grantSets[num]?.find(id);
  }
  resourceType(id: string): ResourceType | undefined {
    return this.t.resource_type.get(id);
  }
  /** A resource row, rebuilt from its node (a new object on every call, equal to the row given minus fields no model field names). */
  resource(id: string): Resource | undefined {
    const n = this.resources.get(id);
    return n !== undefined && n.exists ? this.resourceRow(n) : undefined;
  }

  /** The row of a node whose resource exists (see {@link resource}). */
  resourceRow(node: ResourceNode): Resource {
    const n = node as MutableResourceNode;
    const out: Record<string, unknown> = {
      id: n.id,
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

  /**
   * The row of a node whose resource exists as a view: each field is read from the node when
   * asked for, so a decision whose match definitions read one field builds no row (and no
   * `createdAt` string). Valid until the next {@link apply}; `resource` gives a plain copy.
   */
  resourceView(node: ResourceNode): Resource {
    return new ResourceView(this, node as MutableResourceNode);
  }

  /** A resource node's `createdAt` as given (see {@link resourceRow}). */
  createdAtOfNode(node: ResourceNode): unknown {
    return this.createdAtOf(node.num);
  }

  /** Stores a resource's `createdAt`: a canonical ISO-8601 string as its milliseconds, anything else as given. */
  private setCreatedAt(num: number, v: unknown): void {
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

  private createdAtOf(num: number): unknown {
    const ms = num < this.createdAt.length ? this.createdAt[num] : NaN;
    return Number.isNaN(ms) ? this.createdAtRaw.get(num) : new Date(ms).toISOString();
  }
  resourceScopeLink(id: string): ResourceScopeLink | undefined {
    return this.t.resource_scope_link.get(id);
  }
  resourceEdge(id: string): ResourceEdge | undefined {
    return this.t.resource_edge.get(id);
  }
  collection(id: string): Collection | undefined {
    return this.t.collection.get(id);
  }
  policy(id: string): Policy | undefined {
    return this.t.policy.get(id);
  }
  tagGroup(id: string): TagGroup | undefined {
    return this.t.tag_group.get(id);
  }
  tag(id: string): Tag | undefined {
    return this.t.tag.get(id);
  }
  tagAssignment(id: string): TagAssignment | undefined {
    return this.t.tag_assignment.get(id);
  }
  tagBinding(id: string): TagBinding | undefined {
    return this.t.tag_binding.get(id);
  }

  /**
   * Space the resource structures hold, for tests and diagnostics: node numbers handed out
   * (reused after deletes), free numbers, rows of `createdAt` kept as given, and the slots of
   * the resource table.
   */
  resourceSpace(): { nodes: number; numbers: number; freeNumbers: number; rawCreatedAt: number; slots: number; grantSetNumbers: number } {
    return {
      nodes: this.resources.size, numbers: this.nextNum, freeNumbers: this.freeNums.length, rawCreatedAt: this.createdAtRaw.size, slots: this.resources.capacity,
      grantSetNumbers: this.grantSets.length,
    };
  }

  /** Number of rows of a kind (for metrics and tests). */
  count(kind: EntityKind): number {
    return kind === 'resource' ? this.resourceCount : kind === 'ownership_grant' ? this.grantsById.size : this.t[kind].size;
  }

  // --- reads: derived -----------------------------------------------------------------------------

  /**
   * The scope and its ancestors, nearest first; empty when the scope does not exist. The walk
   * stops at a missing parent, at a revisit and after MAX_HIERARCHY_DEPTH ancestors. Cached
   * until a scope in the path is re-parented, created or deleted.
   */
  scopePath(scopeId: string): ScopePath {
    const cached = this.pathCache.get(scopeId);
    if (cached) return cached;
    if (!this.t.scope.has(scopeId)) return EMPTY_PATH;
    const ids: string[] = [];
    const set = new Set<string>();
    let cur: string | null | undefined = scopeId;
    while (cur && !set.has(cur) && ids.length <= MAX_HIERARCHY_DEPTH) {
      const s = this.t.scope.get(cur);
      if (!s) break;
      // The scope rows' own strings: the ones assignments and node owners hold, so most
      // comparisons with them are by reference.
      ids.push(s.id);
      set.add(s.id);
      cur = s.parentId;
    }
    const path: CachedPath = { ids, set, overridesVersion: -1, hasOverrides: false };
    this.pathCache.set(scopeId, path);
    return path;
  }

  /** Everything a check reads about a subject (undefined when nothing refers to it). */
  subjectNode(subjectId: string): SubjectNode | undefined {
    return this.subjects.get(subjectId);
  }

  /** Everything a check reads about a resource (undefined when nothing refers to it). */
  resourceNode(resourceId: string): ResourceNode | undefined {
    return this.resources.get(resourceId);
  }

  /**
   * The slot of a resource in the resource table, or -1 when nothing refers to it. A slot is
   * valid until the next {@link apply}; it gives the resource's facts without its node.
   */
  resourceSlot(resourceId: string): number {
    return this.resources.slotOf(resourceId);
  }

  /** Word {@link FACT_FLAGS} or {@link FACT_UP_NUM} of a resource slot. */
  resourceFact(slot: number, word: number): number {
    return this.resources.word(slot, word);
  }

  /** The node in a resource slot. */
  resourceNodeAt(slot: number): ResourceNode {
    return this.resources.valueAt(slot);
  }

  /** The type slot numbered `num` (from a resource's flags), or undefined for -1. */
  typeSlotAt(num: number): TypeSlot | undefined {
    return num < 0 ? undefined : this.typeSlotsByNum[num];
  }

  /** Whether the node numbered `num` is plain (see `upIsPlain`); false for -1. */
  isPlainNum(num: number): boolean {
    return num >= 0 && this.plain[num] === 1;
  }

  /** Overrides defined at a scope, by role; undefined when the scope has none. */
  overridesAt(scopeId: string): ReadonlyMap<string, RowBag<ScopeOverride>> | undefined {
    return this.overridesByScopeRole.get(scopeId);
  }

  /** Tag bindings of a tag at exactly this scope. */
  bindingsAt(tagId: string, scopeId: string): RowBag<TagBinding> | undefined {
    return this.bindingsByTagScope.get(tagId)?.get(scopeId);
  }

  /** Ids of the existing tags a node's tag assignments name, without duplicates. */
  existingTagIds(tags: RowBag<TagAssignment> | undefined): string[] {
    const out: string[] = [];
    for (const a of bagRows(tags)) if (this.t.tag.has(a.tagId) && !out.includes(a.tagId)) out.push(a.tagId);
    return out;
  }

  /** Tags of a resource as tag group key → identifiers (tags whose group exists). */
  resourceTags(resourceId: string): Map<string, Set<string>> {
    const out = new Map<string, Set<string>>();
    for (const tagId of this.existingTagIds(this.resources.get(resourceId)?.tags)) {
      const tag = this.t.tag.get(tagId) as Tag;
      const group = this.t.tag_group.get(tag.tagGroupId);
      if (!group) continue;
      let s = out.get(group.key);
      if (!s) out.set(group.key, (s = new Set()));
      s.add(tag.identifier);
    }
    return out;
  }

  /** A role's row, cover index and star cover behind one lookup (undefined when neither exists). */
  roleInfo(roleId: string): RoleInfo | undefined {
    return this.roleInfos.get(roleId);
  }

  /**
   * True when any scope of the path defines an override. Cached on the path and recomputed
   * only after an override changed anywhere (overrides are rare; most paths have none).
   */
  pathHasOverrides(path: ScopePath): boolean {
    const p = path as CachedPath;
    if (p.overridesVersion !== this.overridesVersion) {
      p.hasOverrides = p.ids.some((s) => this.overridesByScopeRole.has(s));
      p.overridesVersion = this.overridesVersion;
    }
    return p.hasOverrides;
  }

  /** Ids of the existing permissions attached to a role (no overrides applied). */
  rolePermissionIds(roleId: string): string[] {
    const out: string[] = [];
    for (const rpId of bagIds(this.rpByRole.get(roleId))) {
      const rp = this.t.role_permission.get(rpId);
      if (rp && this.t.permission.has(rp.permissionId) && !out.includes(rp.permissionId)) out.push(rp.permissionId);
    }
    return out;
  }

  /** Resources with this external id among the resource types with this key. */
  resourcesByExternalId(typeKey: string, externalResourceId: string): Resource[] {
    const out: Resource[] = [];
    for (const n of this.nodesByExternal(externalResourceId)) {
      const r = this.resourceRow(n);
      if (this.t.resource_type.get(r.resourceTypeId)?.key === typeKey) out.push(r);
    }
    return out;
  }

  /** The nodes of the resources (rows present) whose external id is `ext`. */
  private nodesByExternal(ext: string): MutableResourceNode[] {
    const first = this.externalFirst.get(ext);
    if (first < 0) return [];
    const out = [this.nodesByNum[first] as MutableResourceNode];
    if (this.externalMore.size > 0) for (const id of bagIds(this.externalMore.get(ext))) out.push(this.resources.get(id) as MutableResourceNode);
    return out;
  }

  /** Files a node whose row just arrived under its external id (`n.ext`, set). */
  private addExternal(n: MutableResourceNode): void {
    const ext = n.ext as string;
    if (this.externalFirst.get(ext) < 0) this.externalFirst.add(ext, n.num);
    else bagAdd(this.externalMore, ext, n.id);
  }

  /** Unfiles a node whose row goes, while `n.ext` still holds its external id. */
  private removeExternal(n: MutableResourceNode): void {
    const ext = n.ext as string;
    if (this.externalFirst.get(ext) !== n.num) {
      bagDelete(this.externalMore, ext, n.id);
      return;
    }
    const more = this.externalMore.size > 0 ? this.externalMore.get(ext) : undefined;
    if (more === undefined) {
      this.externalFirst.delete(ext);
      return;
    }
    // Another resource carries the id: it takes the table's entry.
    const next = this.resources.get(typeof more === 'string' ? more : bagIds(more)[0]) as MutableResourceNode;
    bagDelete(this.externalMore, ext, next.id);
    this.externalFirst.renumber(ext, n.num, next.num);
  }

  /** Whether a node is filed in `externalMore` rather than in the table. */
  private isExternalMore(n: MutableResourceNode): boolean {
    const more = this.externalMore.size > 0 ? this.externalMore.get(n.ext as string) : undefined;
    return more !== undefined && (typeof more === 'string' ? more === n.id : bagIds(more).includes(n.id));
  }

  /**
   * True when the node has a parent and that parent is plain: it exists, no permission names it
   * (by id or external id) and it has no parent itself. Reads one byte of a small bitmap
   * instead of the parent's node (on a large tenant, a cache miss).
   */
  upIsPlain(node: ResourceNode): boolean {
    return node.upNum >= 0 && this.plain[node.upNum] === 1;
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

  /** Collections of a resource type defined at exactly this scope. */
  collectionsAt(resourceTypeId: string, scopeId: string): RowBag<Collection> | undefined {
    return this.collectionsByTypeScope.get(resourceTypeId)?.get(scopeId);
  }

  /** True when some collection exists for this resource type (lets a check skip the scope walk). */
  hasCollectionsOfType(resourceTypeId: string): boolean {
    return this.collectionsByTypeScope.has(resourceTypeId);
  }

  /** Policies targeting a collection. */
  collectionPolicies(collectionId: string): RowBag<Policy> | undefined {
    return this.policiesByCollection.get(collectionId);
  }

  /** Whether a node's facts in the resource table are those its node implies. */
  private factsOk(id: string, n: MutableResourceNode): boolean {
    const slot = this.resources.slotOf(id);
    return (
      slot >= 0 &&
      this.resources.valueAt(slot) === n &&
      this.resources.word(slot, FACT_FLAGS) === factFlags(n) &&
      this.resources.word(slot, FACT_UP_NUM) === n.upNum &&
      (n.type === undefined || this.typeSlotsByNum[n.type.num] === n.type)
    );
  }

  /**
   * A canonical dump of every derived map and node (not the lazy path cache), for tests that
   * compare an incrementally updated index with a freshly built one.
   */
  derivedState(): Record<string, unknown> {
    const sortKeys = <T>(xs: [string, T][]) => xs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    // Id bags canonicalise to sorted ids; row bags to their rows (so a stale row is caught too).
    const ids = (b: RowBag<Identified> | Bag | undefined): unknown[] =>
      b === undefined
        ? []
        : typeof b === 'string'
          ? [b]
          : b instanceof Set || Array.isArray(b)
            ? [...b].sort()
            : [...bagRows(b as RowBag<Identified>)].sort((x, y) => (x.id < y.id ? -1 : 1));
    type Deep = Map<string, unknown>;
    const canon = (m: Deep, depth: number): unknown =>
      sortKeys([...m.entries()].map(([k, v]) => [k, depth > 1 ? canon(v as Deep, depth - 1) : ids(v as Bag)]));
    return {
      subjects: sortKeys(
        [...this.subjects.entries()].map(([k, n]) => [
          k,
          {
            row: n.row?.id ?? null,
            type: n.type === n.row?.type ? 'ok' : 'stale',
            inline: inlineOk(n) ? 'ok' : 'stale',
            assignments: entriesOf(n.assignments),
            // The by-scope view may outlive its threshold (hysteresis), so only its presence
            // when required and its agreement with the list are canonical.
            byScope: n.assignmentsByScope
              ? byScopeKey(n.assignmentsByScope) === byScopeKey(groupByScope(n.assignments))
                ? 'ok'
                : 'out of sync'
              : n.assignments.length > ASSIGNMENT_SCAN_LIMIT * A_STRIDE
                ? 'missing'
                : 'ok',
            grants: n.grantsByResource ? n.grantsByResource.canonical() : [],
            tags: ids(n.tags),
          },
        ]),
      ),
      resources: sortKeys(
        [...this.resources.entries()].map(([k, n]) => [
          k,
          {
            row: n.exists ? this.resourceRow(n) : null,
            type: n.type ? { key: n.type.key ?? null, collections: n.type.collections, live: this.typeSlots.get(n.type.id) === n.type } : null,
            // A node without a row keeps none of its fields.
            cleared:
              n.exists || (n.type === undefined && n.ext === undefined && n.owner === undefined && n.displayName === undefined && n.attributes === undefined && n.createdBy === undefined && this.createdAtOf(n.num) === undefined)
                ? 'ok'
                : 'stale',
            patterns: n.patterns,
            up: n.up === this.parentOf(n)?.parent && n.upInherit === (this.parentOf(n)?.inherit ?? false) ? (n.up?.id ?? null) : 'stale',
            refs: n.refs,
            // Numbers differ between builds; their use must agree with the node.
            plain:
              n.upNum === (n.up ? n.up.num : -1) && this.plain[n.num] === (n.exists && n.patterns === 0 && n.up === undefined ? 1 : 0)
                ? 'ok'
                : 'stale',
            // Each link must point at the live node of its parent.
            parents: [...bagRows(n.parents)]
              .sort((x, y) => (x.id < y.id ? -1 : 1))
              .map((l) => ({ edge: l.edge, parent: l.parent.id, live: this.resources.get(l.parent.id) === l.parent })),
            policies: ids(n.policies),
            links: ids(n.links),
            tags: ids(n.tags),
            facts: this.factsOk(k, n) ? 'ok' : 'stale',
          },
        ]),
      ),
      scopeChildren: canon(this.scopeChildren as Deep, 1),
      overridesByScopeRole: canon(this.overridesByScopeRole as Deep, 2),
      rpByRole: canon(this.rpByRole as Deep, 1),
      rpByPermission: canon(this.rpByPermission as Deep, 1),
      roleInfos: sortKeys(
        [...this.roleInfos.entries()].map(([role, info]) => [
          role,
          {
            row: info.row === this.t.role.get(role) ? (info.row ? 'ok' : null) : 'stale',
            scope: info.scope === info.row?.scopeId ? 'ok' : 'stale',
            cover: info.cover
              ? sortKeys([...info.cover.entries()].map(([pat, byAction]) => [pat, sortKeys([...byAction.entries()].map(([a, b]) => [a, ids(b)]))]))
              : null,
            // Term numbers differ between builds: compare with a fresh compile of this index's cover.
            star: sameStar(info.star, this.starCoverOf(info)) ? 'ok' : 'stale',
          },
        ]),
      ),
      assignmentsByMembership: canon(this.assignmentsByMembership as Deep, 1),
      // Slots are never dropped, so an incremental index may hold empty ones a rebuild lacks.
      typeSlots: sortKeys(
        [...this.typeSlots.entries()]
          .filter(([, slot]) => slot.key !== undefined || slot.collections !== 0)
          .map(([k, slot]) => [k, { id: slot.id, key: slot.key ?? null, collections: slot.collections }]),
      ),
      resourcesByExternal: this.externalCanonical(),
      patternCounts: sortKeys([...this.patternCounts.entries()]),
      collectionsByTypeScope: canon(this.collectionsByTypeScope as Deep, 2),
      policiesByCollection: canon(this.policiesByCollection as Deep, 1),
      scopeTags: canon(this.scopeTags as Deep, 1),
      bindingsByTagScope: canon(this.bindingsByTagScope as Deep, 2),
      rows: Object.fromEntries(
        ENTITY_KINDS.map((k) => [
          k,
          k === 'resource'
            ? [...this.resources.entries()].filter(([, n]) => n.exists).map(([id]) => id).sort()
            : k === 'ownership_grant'
              ? this.grantIdsCanonical()
              : [...this.t[k].keys()].sort(),
        ]),
      ),
      resourceCount: this.resourceCount,
      createdAtRaw: this.createdAtRaw.size,
    };
  }

  /**
   * External id → sorted resource ids, from the nodes; each marked when the table and the
   * extra ids do not file it exactly once, then the table's size when it holds others.
   */
  private externalCanonical(): [string, string[]][] {
    const byExt = new Map<string, string[]>();
    let firsts = 0;
    this.nodesByNum.forEach((n, num) => {
      if (n === undefined || !n.exists) return;
      if (n.num !== num || this.resources.get(n.id) !== n) (byExt.get('(stale nodes)') ?? byExt.set('(stale nodes)', []).get('(stale nodes)')!).push(n.id);
      const ext = n.ext as string;
      const first = this.externalFirst.get(ext) === n.num;
      const more = this.isExternalMore(n);
      if (first) firsts++;
      (byExt.get(ext) ?? byExt.set(ext, []).get(ext)!).push(first !== more ? n.id : `${n.id} (filed ${first ? 'twice' : 'nowhere'})`);
    });
    const out = [...byExt].map(([k, ids]) => [k, ids.sort()] as [string, string[]]).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    if (this.externalFirst.size !== firsts) out.push([`(the external-id table holds ${this.externalFirst.size} for ${firsts})`, []]);
    return out;
  }

  /** Every grant id, sorted, each marked when the id table does not map it to its set; then the table's size when it holds others. */
  private grantIdsCanonical(): string[] {
    const out: string[] = [];
    this.grantSets.forEach((set, num) => {
      if (set === undefined) return;
      if (set.num !== num || set.size === 0) out.push(`set ${num} (stale)`);
      for (const g of set.rows()) out.push(this.grantsById.get(g.id) === num ? g.id : `${g.id} (stale)`);
    });
    out.sort();
    if (this.grantsById.size !== out.length) out.push(`(the id table holds ${this.grantsById.size})`);
    return out;
  }
}
