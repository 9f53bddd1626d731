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
 * The state is split by family, one file each, and each kind of row is kept behind one
 * {@link KindStore} of its family (the `kinds` table below): scopes (scopes.ts); roles,
 * permissions, role permissions and scope overrides (roles.ts); subjects, memberships, role
 * assignments and ownership grants (subjects.ts, subject-grants.ts); resource nodes and
 * resource types (resource-nodes.ts); resources, edges and scope links (resources.ts);
 * policies and collections (policies.ts); tags (tags.ts). This class is their façade.
 *
 * Memory (the sidecar holds a tenant of a million resources and grants): the kinds a tenant
 * holds by the hundred thousand keep only the fields of their model interface, with references
 * sharing the referred row's id string (`RowHooks.slim`). Resources have no row object: their
 * fields live in their node (`createdAt` as milliseconds in a column, `{}` attributes as a
 * marker) and `resource(id)` rebuilds the row; ownership grants are a few array slots each in
 * their subject's `SubjectGrants` (the service's own grant ids as four integers, packed-id.ts),
 * and `ownershipGrant(id)` rebuilds the row. Deletes free their
 * entries (node numbers and slots are reused), so a long-running follower does not grow with
 * churn.
 *
 * Layout: everything a check needs about one subject (its role assignments by scope, its
 * ownership grants, its tags) hangs off one {@link SubjectNode}, and everything about one
 * resource (its parent edge, direct policies, scope links, tags) off one
 * {@link ResourceNode}, so a check pays one lookup in each of the big maps. Derived entries
 * hold the row objects themselves, not ids, saving a second lookup per hop.
 *
 * On a tenant larger than the CPU caches every object a check touches for the first time costs
 * a trip to DRAM. Resources, the biggest collection, are therefore kept in an `IdTable`
 * whose slot (a cache line, half of one while every resource id is service-issued) also holds
 * the resource's facts (`FACT_FLAGS`): a common check reads that slot and not the node. Roles keep their pattern-`*` permissions as a flat
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
import { InvalidChangeError } from '../errors.js';
import type { IdTable } from '../id-table.js';
import type { ResourceTags } from '../match.js';
import {
  ENTITY_KINDS,
  type Change,
  type Collection,
  type EntityKind,
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
} from '../model.js';
import type { RowBag } from './bags.js';
import { BUILD_ORDER, isKind, kindTable, rowError, storeOf, type Families, type KindTable } from './kinds.js';
import { PolicyFamily } from './policies.js';
import { ResourceNodes, type MutableTypeSlot } from './resource-nodes.js';
import { ResourceFamily } from './resources.js';
import { ResourceOrder } from './resource-order.js';
import { SubjectOrder } from './subject-order.js';
import { RoleFamily, type MutableRoleInfo } from './roles.js';
import { ScopeFamily } from './scopes.js';
import { SubjectFamily, type MutableSubjectNode } from './subjects.js';
import { TagFamily } from './tags.js';
import {
  MAX_HIERARCHY_DEPTH,
  type ParentLink,
  type ResourceNode,
  type ResourceNodeReads,
  type RoleInfo,
  type ScopePath,
  type StarCover,
  type SubjectNode,
  type TypeSlot,
} from './types.js';

/** See {@link TenantIndex.builder}. */
export interface TenantIndexBuilder {
  /** Checks and indexes one row (a later row with the same id replaces it). Throws InvalidChangeError on a malformed row. */
  add(kind: EntityKind, row: unknown): void;
  /** The index, at `revision`; the builder is spent. */
  build(revision: number): TenantIndex;
}

/** The families of an index and its table of kinds (see {@link TenantIndex.families}). */
export interface TenantIndexFamilies extends Families {
  readonly kinds: KindTable;
}

/** One tenant's rows and derived maps. See the module comment. */
export class TenantIndex {
  private _revision: number;
  private readonly scopes: ScopeFamily;
  private readonly nodes: ResourceNodes;
  private readonly roles: RoleFamily;
  private readonly subjects: SubjectFamily;
  private readonly resourceFamily: ResourceFamily;
  private readonly policies: PolicyFamily;
  private readonly tags: TagFamily;
  private readonly kinds: KindTable;
  // What a check reads on every decision, one property away.
  private readonly scopeRows: ReadonlyMap<string, Scope>;
  private readonly roleRows: ReadonlyMap<string, Role>;
  private readonly permissionRows: ReadonlyMap<string, Permission>;
  private readonly subjectNodes: ReadonlyMap<string, MutableSubjectNode>;
  private readonly roleInfos: ReadonlyMap<string, MutableRoleInfo>;
  private readonly overridesByScopeRole: ReadonlyMap<string, ReadonlyMap<string, RowBag<ScopeOverride>>>;
  private readonly resourceTable: IdTable<ResourceNode>;
  /** What a check reads about a resource node (columns by the node's number). */
  readonly resourceNodes: ResourceNodeReads;
  private readonly resourceOrder: ResourceOrder;
  private readonly subjectOrder: SubjectOrder;

  /** `resources`: expected number of resource nodes (sizes the table once instead of growing it). */
  private constructor(revision: number, resources = 0) {
    this._revision = revision;
    // Only a size: anything but a positive integer sizes nothing.
    if (!Number.isSafeInteger(resources) || resources < 0) resources = 0;
    this.scopes = new ScopeFamily();
    this.nodes = new ResourceNodes(resources);
    this.roles = new RoleFamily(this.scopes, this.nodes);
    this.subjects = new SubjectFamily(this.scopes, this.roles, this.nodes);
    this.resourceFamily = new ResourceFamily(this.nodes, this.scopes, this.subjects);
    this.policies = new PolicyFamily(this.nodes);
    this.tags = new TagFamily(this.scopes, this.subjects, this.nodes);
    this.kinds = kindTable({ scopes: this.scopes, roles: this.roles, subjects: this.subjects, nodes: this.nodes, resources: this.resourceFamily, policies: this.policies, tags: this.tags });
    this.scopeRows = this.scopes.rows;
    this.roleRows = this.roles.roles.rows;
    this.permissionRows = this.roles.permissions.rows;
    this.subjectNodes = this.subjects.nodes;
    this.roleInfos = this.roles.infos;
    this.overridesByScopeRole = this.roles.overridesByScopeRole;
    this.resourceTable = this.nodes.table;
    this.resourceNodes = this.nodes;
    this.resourceOrder = new ResourceOrder(this.nodes);
    this.subjectOrder = new SubjectOrder(this.subjects.nodes);
  }

  /** Copies what a build grew by `push` to its exact length (see `SubjectFamily.trim`, `ResourceNodes.trim`). */
  private trim(): void {
    this.subjects.trim();
    this.nodes.trim();
  }

  /** Builds an index from every row of a tenant at `snapshot.revision`. Throws InvalidChangeError on a malformed row. */
  static fromSnapshot(snapshot: TenantSnapshot): TenantIndex {
    if (!Number.isSafeInteger(snapshot.revision)) throw new InvalidChangeError('snapshot revision must be an integer');
    const idx = new TenantIndex(snapshot.revision, snapshot.rows.resource?.length ?? 0);
    for (const kind of ENTITY_KINDS) {
      for (const row of (snapshot.rows[kind] ?? []) as unknown[]) {
        const err = rowError(idx.kinds, kind, row);
        if (err) throw new InvalidChangeError(err);
      }
    }
    for (const kind of BUILD_ORDER) {
      const store = storeOf(idx.kinds, kind);
      for (const row of (snapshot.rows[kind] ?? []) as RowsByKind[EntityKind][]) store.upsert(row);
    }
    idx.trim();
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
        if (!isKind(kind)) throw new InvalidChangeError(`unknown kind ${String(kind)}`);
        const err = rowError(idx.kinds, kind, row);
        if (err) throw new InvalidChangeError(err);
        storeOf(idx.kinds, kind).upsert(row as RowsByKind[EntityKind]);
      },
      build(revision: number): TenantIndex {
        if (done) throw new Error('TenantIndex.builder: already built');
        if (!Number.isSafeInteger(revision)) throw new InvalidChangeError('snapshot revision must be an integer');
        done = true;
        idx._revision = revision;
        idx.trim();
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
      if (!c || !isKind(c.kind)) throw new InvalidChangeError(`unknown change kind ${String(c?.kind)}`);
      if (typeof c.id !== 'string') throw new InvalidChangeError('change id must be a string');
      if (c.op === 'upsert') {
        const err = rowError(this.kinds, c.kind, c.row);
        if (err) throw new InvalidChangeError(err);
        if ((c.row as { id: string }).id !== c.id) throw new InvalidChangeError(`change id ${c.id} does not match its row`);
      } else if (c.op !== 'delete') {
        throw new InvalidChangeError(`unknown change op ${String((c as { op: unknown }).op)}`);
      }
    }
    const resourceIds: string[] = [];
    const subjectIds: string[] = [];
    let typesChanged = false;
    for (const c of changes) {
      if (c.op === 'upsert') storeOf(this.kinds, c.kind).upsert(c.row as RowsByKind[EntityKind]);
      else storeOf(this.kinds, c.kind).remove(c.id);
      if (c.kind === 'resource') resourceIds.push(c.id);
      else if (c.kind === 'resource_type') typesChanged = true;
      else if (c.kind === 'subject') subjectIds.push(c.id);
    }
    this.resourceOrder.applied(resourceIds, typesChanged);
    this.nodes.releaseDropped();
    this.subjectOrder.applied(subjectIds);
    this._revision = revision;
    return true;
  }

  // --- reads: rows --------------------------------------------------------------------------------

  scope(id: string): Scope | undefined {
    return this.scopeRows.get(id);
  }
  subject(id: string): Subject | undefined {
    return this.subjects.subjects.rows.get(id);
  }
  role(id: string): Role | undefined {
    return this.roleRows.get(id);
  }
  permission(id: string): Permission | undefined {
    return this.permissionRows.get(id);
  }
  rolePermission(id: string): RolePermission | undefined {
    return this.roles.rolePermissions.rows.get(id);
  }
  membership(id: string): Membership | undefined {
    return this.subjects.memberships.rows.get(id);
  }
  roleAssignment(id: string): RoleAssignment | undefined {
    return this.subjects.assignments.rows.get(id);
  }
  scopeOverride(id: string): ScopeOverride | undefined {
    return this.roles.overrides.rows.get(id);
  }
  /** A grant row, rebuilt from its subject's grants (a new object on every call). */
  ownershipGrant(id: string): OwnershipGrant | undefined {
    return this.subjects.grant(id);
  }
  resourceType(id: string): ResourceType | undefined {
    return this.nodes.types.rows.get(id);
  }
  /** A resource row, rebuilt from its node (a new object on every call, equal to the row given minus fields no model field names). */
  resource(id: string): Resource | undefined {
    return this.nodes.resource(id);
  }

  /** The row of a node whose resource exists (see {@link resource}). */
  resourceRow(node: ResourceNode): Resource {
    return this.nodes.row(node);
  }

  /**
   * The row of a node whose resource exists as a view: each field is read from the node when
   * asked for, so a decision whose match definitions read one field builds no row (and no
   * `createdAt` string). Valid until the next {@link apply}; `resource` gives a plain copy.
   */
  resourceView(node: ResourceNode): Resource {
    return this.nodes.view(node);
  }

  /** A resource node's `createdAt` as given (see {@link resourceRow}). */
  createdAtOfNode(node: ResourceNode): unknown {
    return this.nodes.createdAtOf(node);
  }

  resourceScopeLink(id: string): ResourceScopeLink | undefined {
    return this.resourceFamily.links.rows.get(id);
  }
  resourceEdge(id: string): ResourceEdge | undefined {
    return this.resourceFamily.edges.get(id);
  }
  collection(id: string): Collection | undefined {
    return this.policies.collections.rows.get(id);
  }
  policy(id: string): Policy | undefined {
    return this.policies.policies.rows.get(id);
  }
  tagGroup(id: string): TagGroup | undefined {
    return this.tags.groups.rows.get(id);
  }
  tag(id: string): Tag | undefined {
    return this.tags.tags.rows.get(id);
  }
  tagAssignment(id: string): TagAssignment | undefined {
    return this.tags.assignments.rows.get(id);
  }
  tagBinding(id: string): TagBinding | undefined {
    return this.tags.bindings.rows.get(id);
  }

  /**
   * Space the resource structures hold, for tests and diagnostics: node numbers handed out
   * (reused after deletes), free numbers, rows of `createdAt` kept as given, and the slots of
   * the resource table.
   */
  resourceSpace(): { nodes: number; numbers: number; freeNumbers: number; rawCreatedAt: number; slots: number; grantSetNumbers: number } {
    const nodes = this.nodes;
    return {
      nodes: nodes.table.size, numbers: nodes.nextNum, freeNumbers: nodes.freeNums.length, rawCreatedAt: nodes.createdAtRaw.size, slots: nodes.table.capacity,
      grantSetNumbers: this.subjects.grantSets.length,
    };
  }

  /**
   * The existing resources in id order (of the types with key `typeKey` when given), valid
   * until the next {@link apply}. The first call sorts them, and `apply` keeps the order: see resource-order.ts.
   */
  resourcesInIdOrder(typeKey?: string): readonly ResourceNode[] {
    return this.resourceOrder.inIdOrder(typeKey);
  }

  /**
   * The subjects with a row in id order (of type `type` when given), valid until the next
   * {@link apply}. The first call sorts them, and `apply` keeps the order: see subject-order.ts.
   */
  subjectsInIdOrder(type?: string): readonly (SubjectNode & { readonly id: string })[] {
    return this.subjectOrder.inIdOrder(type);
  }

  /** Number of rows of a kind (for metrics and tests). */
  count(kind: EntityKind): number {
    return this.kinds[kind].count();
  }

  /**
   * The index's families, read by tests that compare an index's derived state with a freshly
   * built one's (services/engine/testdata/derived-state.ts). Nothing else reads them: the
   * methods of this class are the index's interface, and nothing may write through these.
   */
  families(): TenantIndexFamilies {
    return { kinds: this.kinds, scopes: this.scopes, roles: this.roles, subjects: this.subjects, nodes: this.nodes, resources: this.resourceFamily, policies: this.policies, tags: this.tags };
  }

  // --- reads: derived -----------------------------------------------------------------------------

  /**
   * The scope and its ancestors, nearest first; empty when the scope does not exist. The walk
   * stops at a missing parent, at a revisit and after MAX_HIERARCHY_DEPTH ancestors. Cached
   * until a scope in the path is re-parented, created or deleted.
   */
  scopePath(scopeId: string): ScopePath {
    return this.scopes.path(scopeId);
  }

  /** Everything a check reads about a subject (undefined when nothing refers to it). */
  subjectNode(subjectId: string): SubjectNode | undefined {
    return this.subjectNodes.get(subjectId);
  }

  /**
   * The subjects whose `externalId` is this one (only those of `type` when given), from a hash
   * table kept with the subjects: undefined for none, the node for one, two or more nodes
   * (ordered by subject id) when several share it. Every node returned has its row.
   */
  subjectsByExternalId(externalId: string, type?: string): SubjectNode | readonly SubjectNode[] | undefined {
    return this.subjects.byExternalId(externalId, type);
  }

  /** Everything a check reads about a resource (undefined when nothing refers to it). */
  resourceNode(resourceId: string): ResourceNode | undefined {
    return this.resourceTable.get(resourceId);
  }

  /**
   * The slot of a resource in the resource table, or -1 when nothing refers to it. A slot is
   * valid until the next {@link apply}; it gives the resource's facts without its node.
   */
  resourceSlot(resourceId: string): number {
    return this.resourceTable.slotOf(resourceId);
  }

  /** Word `FACT_FLAGS` or `FACT_UP_NUM` of a resource slot. */
  resourceFact(slot: number, word: number): number {
    return this.resourceTable.word(slot, word);
  }

  /** The node in a resource slot (its number, kept in the slot: no read beyond it). */
  resourceNodeAt(slot: number): ResourceNode {
    return this.resourceTable.numAt(slot);
  }



  /** The type slot numbered `num` (from a resource's flags), or undefined for -1. */
  typeSlotAt(num: number): TypeSlot | undefined {
    return num < 0 ? undefined : (this.nodes.typeSlotsByNum[num] as MutableTypeSlot);
  }

  /** Whether the node numbered `num` is plain (see `upIsPlain`); false for -1. */
  isPlainNum(num: number): boolean {
    return num >= 0 && this.nodes.plain[num] === 1;
  }

  /** Overrides defined at a scope, by role; undefined when the scope has none. */
  overridesAt(scopeId: string): ReadonlyMap<string, RowBag<ScopeOverride>> | undefined {
    return this.overridesByScopeRole.get(scopeId);
  }

  /** Tag bindings of a tag at exactly this scope. */
  bindingsAt(tagId: string, scopeId: string): RowBag<TagBinding> | undefined {
    return this.tags.bindingsAt(tagId, scopeId);
  }

  /** Ids of the existing tags a node's tag assignments name, without duplicates. */
  existingTagIds(tags: RowBag<TagAssignment> | undefined): string[] {
    return this.tags.existingTagIds(tags);
  }

  /** Tags of a resource as tag group key → identifiers (tags whose group exists). */
  resourceTags(resourceId: string): Map<string, Set<string>> {
    return this.tags.resourceTags(resourceId);
  }

  /** A role's row, cover index and star cover behind one lookup (undefined when neither exists). */
  roleInfo(roleId: string): RoleInfo | undefined {
    return this.roleInfos.get(roleId);
  }

  /**
   * The number of an action or type key in the {@link StarCover}s, or `NO_TERM` when no
   * permission with pattern `*` uses it (then only entries with `*` there can match it).
   */
  termNum(term: string): number {
    return this.roles.termNum(term);
  }

  /**
   * True when any scope of the path defines an override. Cached on the path and recomputed
   * only after an override changed anywhere (overrides are rare; most paths have none).
   */
  pathHasOverrides(path: ScopePath): boolean {
    return this.roles.pathHasOverrides(path);
  }

  /** Ids of the existing permissions attached to a role (no overrides applied). */
  rolePermissionIds(roleId: string): string[] {
    return this.roles.rolePermissionIds(roleId);
  }

  /** Resources with this external id among the resource types with this key. */
  resourcesByExternalId(typeKey: string, externalResourceId: string): Resource[] {
    const out: Resource[] = [];
    for (const n of this.nodes.nodesByExternal(externalResourceId)) {
      const r = this.nodes.row(n);
      if (this.nodes.types.rows.get(r.resourceTypeId)?.key === typeKey) out.push(r);
    }
    return out;
  }

  /**
   * True when the node has a parent and that parent is plain: it exists, no permission names it
   * (by id or external id) and it has no parent itself. Reads one byte of a small bitmap
   * instead of the parent's node (on a large tenant, a cache miss).
   */
  upIsPlain(node: ResourceNode): boolean {
    const up = this.nodes.up(node);
    return up >= 0 && this.nodes.plain[up] === 1;
  }

  /**
   * The link to a resource's parent. A child has at most one parent; should bad data hold
   * several, the edge with the smallest id is used so every process picks the same one.
   */
  parentOf(node: ResourceNode | undefined): ParentLink | undefined {
    return this.nodes.parentOf(node);
  }

  /** Collections of a resource type defined at exactly this scope. */
  collectionsAt(resourceTypeId: string, scopeId: string): RowBag<Collection> | undefined {
    return this.policies.collectionsAt(resourceTypeId, scopeId);
  }

  /**
   * Pushes onto `out`, in id order, the collections of the resource's type defined at exactly
   * this scope that may match it or error against it: those whose match definitions require a
   * field value or tag the resource has, and those requiring none (see collection-files.ts).
   * Returns how many other collections of the type are defined there: they cannot match it.
   */
  collectionsToTry(resourceTypeId: string, scopeId: string, resource: Resource, tags: () => ResourceTags, out: Collection[]): number {
    return this.policies.collectionsToTry(resourceTypeId, scopeId, resource, tags, out);
  }

  /** True when some collection exists for this resource type (lets a check skip the scope walk). */
  hasCollectionsOfType(resourceTypeId: string): boolean {
    return this.policies.hasCollectionsOfType(resourceTypeId);
  }

  /** Ids of the resource types some collection is defined for (any scope). */
  collectionTypeIds(): Iterable<string> {
    return this.policies.collectionTypeIds();
  }

  /** Allow policies targeting a resource directly whose actions name `action` (`*`: those naming `*`). */
  directAllowPolicies(action: string): RowBag<Policy> | undefined {
    return this.policies.directAllows(action);
  }

  /** Deny policies targeting a resource directly whose actions name `action` (`*`: those naming `*`). */
  directDenyPolicies(action: string): RowBag<Policy> | undefined {
    return this.policies.directDenies(action);
  }

  /** Every scope link row (O(links): a plan's gate reads the linked resources through them, not through the resources). */
  scopeLinks(): Iterable<ResourceScopeLink> {
    return this.resourceFamily.links.rows.values();
  }

  /**
   * Ids of the resource types with key `typeKey` that have existing resources, from counts kept
   * on the type slots: O(resource types), whatever the number of resources.
   */
  typeIdsWithResources(typeKey: string): string[] {
    const out: string[] = [];
    for (const slot of this.nodes.typeSlotsByNum) if (slot.key === typeKey && slot.resources > 0) out.push(slot.id);
    return out;
  }

  /** Ids of the resources carrying a tag of a group with key `groupKey` whose identifier is one of `wanted` (see {@link resourceTags}; rows present or not). */
  resourceIdsTagged(groupKey: string, wanted: readonly string[]): string[] {
    return this.tags.resourceIdsTagged(groupKey, wanted);
  }

  /** The links from a resource to its children (each link's `child`), by edge id; undefined when none. */
  childLinks(parentId: string): RowBag<ParentLink> | undefined {
    return this.resourceFamily.childrenByParent.get(parentId);
  }

  /** The nodes of the existing resources (any type) whose external id is `externalResourceId`. */
  resourceNodesByExternalId(externalResourceId: string): readonly ResourceNode[] {
    return this.nodes.nodesByExternal(externalResourceId);
  }

  /** Policies targeting a collection. */
  collectionPolicies(collectionId: string): RowBag<Policy> | undefined {
    return this.policies.collectionPolicies(collectionId);
  }
}
