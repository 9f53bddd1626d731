/**
 * Subjects, memberships, role assignments and ownership grants. Everything a check needs about
 * one subject hangs off its {@link SubjectNode}: its row, its role assignments (joined with
 * their memberships) by scope, its ownership grants and its tags.
 */
import type { Membership, OwnershipGrant, RoleAssignment, Subject, TagAssignment } from '../model.js';
import { NumTable } from '../num-table.js';
import { bagAdd, bagDelete, bagIds, type Multi, type MutableRowBag } from './bags.js';
import type { ResourceNodes } from './resource-nodes.js';
import type { RoleFamily } from './roles.js';
import { RowTable, copyField } from './row-table.js';
import type { ScopeFamily } from './scopes.js';
import { SubjectGrants } from './subject-grants.js';
import { ASSIGNMENT_SCAN_LIMIT, A_ID, A_ROLE, A_SCOPE, A_STRIDE, INLINE_ASSIGNMENTS, type AssignmentList, type KindStore } from './types.js';

export interface MutableSubjectNode {
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

const byNodeId = (a: MutableSubjectNode, b: MutableSubjectNode): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** Offset of an assignment in a flat list, or -1. */
function findAssignment(list: AssignmentList, id: string): number {
  for (let i = 0; i < list.length; i += A_STRIDE) if (list[i + A_ID] === id) return i;
  return -1;
}

/** The entries of a flat list grouped by scope, each group a flat list. */
export function groupByScope(list: AssignmentList): Map<string, string[]> {
  const m = new Map<string, string[]>();
  for (let i = 0; i < list.length; i += A_STRIDE) {
    const entry = list.slice(i, i + A_STRIDE);
    const existing = m.get(entry[A_SCOPE]);
    if (existing) existing.push(...entry);
    else m.set(entry[A_SCOPE], entry);
  }
  return m;
}

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

export class SubjectFamily {
  readonly nodes = new Map<string, MutableSubjectNode>();
  /**
   * External id → the node of the one subject that has it. An external id several subjects
   * share (of different types, or bad data) leaves this map for `sharedExternal`, so a subject
   * costs one entry here and nothing else.
   */
  readonly byExternal = new Map<string, MutableSubjectNode>();
  /** External id → the nodes of the two or more subjects that have it. */
  readonly sharedExternal = new Map<string, MutableSubjectNode[]>();
  /** membership id → ids of its role assignments (assignments are joined into subject nodes through their membership). */
  readonly assignmentsByMembership: Multi = new Map();
  /**
   * The grants of each subject that has some, by the set's number (reused once a set empties).
   * Grants have no row table: a grant is found through its id's number in `grantsById`.
   */
  readonly grantSets: (SubjectGrants | undefined)[] = [];
  private readonly freeGrantNums: number[] = [];
  /** Grant id → the number of its subject's grant set (a Map cost three DRAM trips per grant to build). */
  readonly grantsById = new NumTable({
    holds: (num, id) => this.grantSets[num]?.has(id) ?? false,
    eachKey: (visit) => {
      for (const set of this.grantSets) if (set !== undefined) for (const g of set.rows()) visit(g.id, set.num);
    },
  });

  constructor(
    private readonly scopes: ScopeFamily,
    private readonly roles: RoleFamily,
    private readonly resources: ResourceNodes,
  ) {}

  /** Copies the arrays grown by `push` (assignment lists, grant lists) to their exact length, once a build is complete. */
  trim(): void {
    for (const n of this.nodes.values()) {
      if (n.assignments.length > 0) n.assignments = n.assignments.slice();
      if (n.assignmentsByScope !== undefined) for (const [scope, list] of n.assignmentsByScope) n.assignmentsByScope.set(scope, list.slice());
    }
    for (const set of this.grantSets) set?.trim();
  }

  readonly subjects = new RowTable<'subject'>({
    required: ['id', 'type'],
    slim: (r) => {
      const out: Record<string, unknown> = { id: r.id, type: r.type, externalId: r.externalId };
      copyField(out, r as unknown as Record<string, unknown>, 'metadata');
      return out as unknown as Subject;
    },
    index: (r) => {
      const n = this.nodeFor(r.id);
      n.row = r;
      n.type = r.type;
      if (typeof r.externalId === 'string') this.addExternal(r.externalId, n);
    },
    unindex: (r) => {
      const n = this.nodes.get(r.id);
      if (n) {
        if (typeof r.externalId === 'string') this.deleteExternal(r.externalId, n);
        n.row = undefined;
        n.type = undefined;
      }
      this.prune(r.id);
    },
  });

  /**
   * The subjects with this external id (only those of `type` when given): undefined for none,
   * the node for one, two or more nodes (ordered by id) for several.
   */
  byExternalId(externalId: string, type: string | undefined): MutableSubjectNode | MutableSubjectNode[] | undefined {
    const one = this.byExternal.get(externalId);
    if (one !== undefined) return type === undefined || one.type === type ? one : undefined;
    const several = this.sharedExternal.get(externalId);
    if (several === undefined) return undefined;
    if (type === undefined) return several;
    const ofType = several.filter((n) => n.type === type);
    return ofType.length === 0 ? undefined : ofType.length === 1 ? ofType[0] : ofType;
  }

  private addExternal(externalId: string, n: MutableSubjectNode): void {
    const one = this.byExternal.get(externalId);
    if (one === undefined) {
      const several = this.sharedExternal.get(externalId);
      if (several === undefined) this.byExternal.set(externalId, n);
      else {
        several.push(n);
        several.sort(byNodeId);
      }
      return;
    }
    this.byExternal.delete(externalId);
    this.sharedExternal.set(externalId, [one, n].sort(byNodeId));
  }

  private deleteExternal(externalId: string, n: MutableSubjectNode): void {
    if (this.byExternal.get(externalId) === n) {
      this.byExternal.delete(externalId);
      return;
    }
    const several = this.sharedExternal.get(externalId);
    const i = several === undefined ? -1 : several.indexOf(n);
    if (i < 0) return;
    several!.splice(i, 1);
    if (several!.length === 1) {
      this.sharedExternal.delete(externalId);
      this.byExternal.set(externalId, several![0]);
    }
  }

  readonly memberships = new RowTable<'membership'>({
    required: ['id', 'subjectId', 'scopeId'],
    slim: (m) => ({ id: m.id, subjectId: this.str(m.subjectId), scopeId: this.scopes.str(m.scopeId) }),
    index: (m) => {
      for (const aId of bagIds(this.assignmentsByMembership.get(m.id))) {
        const a = this.assignments.rows.get(aId);
        if (a) this.linkAssignment(a, m);
      }
    },
    unindex: (m) => {
      for (const aId of bagIds(this.assignmentsByMembership.get(m.id))) {
        const a = this.assignments.rows.get(aId);
        if (a) this.unlinkAssignment(a, m);
      }
    },
  });

  readonly assignments = new RowTable<'role_assignment'>({
    required: ['id', 'membershipId', 'roleId'],
    slim: (a) => ({ id: a.id, membershipId: this.memberships.rows.get(a.membershipId)?.id ?? a.membershipId, roleId: this.roles.str(a.roleId) }),
    index: (a) => {
      bagAdd(this.assignmentsByMembership, a.membershipId, a.id);
      this.linkAssignment(a, this.memberships.rows.get(a.membershipId));
    },
    unindex: (a) => {
      bagDelete(this.assignmentsByMembership, a.membershipId, a.id);
      this.unlinkAssignment(a, this.memberships.rows.get(a.membershipId));
    },
  });

  /** Grants have no row table: each lives in its subject's {@link SubjectGrants}. */
  readonly grants: KindStore<'ownership_grant'> = {
    required: ['id', 'subjectId', 'resourceId', 'roleId'],
    invalid: () => null,
    get: (id) => this.grant(id),
    upsert: (row) => {
      const old = this.grant(row.id);
      if (old) this.unindexGrant(old);
      this.indexGrant(row);
    },
    remove: (id) => {
      const old = this.grant(id);
      if (old) this.unindexGrant(old);
    },
    count: () => this.grantsById.size,
  };

  /** The subject node's own id string when a node exists, else `id` (see `RowHooks.slim`). */
  str(id: string): string {
    return this.nodes.get(id)?.id ?? id;
  }

  /** A grant row, rebuilt from its subject's grants (a new object on every call). */
  grant(id: string): OwnershipGrant | undefined {
    const num = this.grantsById.get(id);
    return num < 0 ? undefined : this.grantSets[num]?.find(id);
  }

  nodeFor(id: string): MutableSubjectNode {
    let n = this.nodes.get(id);
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
      this.nodes.set(id, n);
    }
    return n;
  }

  /** Drops a subject node that no longer carries anything. */
  prune(id: string): void {
    const n = this.nodes.get(id);
    if (n && !n.row && n.assignments.length === 0 && n.grantsByResource === undefined && n.tags === undefined) this.nodes.delete(id);
  }

  private indexGrant(g: OwnershipGrant): void {
    const n = this.nodeFor(g.subjectId);
    let set = n.grantsByResource;
    if (set === undefined) {
      const num = this.freeGrantNums.pop() ?? this.grantSets.length;
      this.grantSets[num] = n.grantsByResource = set = new SubjectGrants(n.id, num, this.resources);
    }
    // The set holds the grant before the table maps its id (a reseed lists the sets).
    set.add(g.id, this.resources.grantRef(g.resourceId), this.roles.str(g.roleId));
    this.grantsById.add(g.id, set.num);
  }

  private unindexGrant(g: OwnershipGrant): void {
    const n = this.nodes.get(g.subjectId);
    // While the set still holds it (the table confirms a key through the set).
    this.grantsById.delete(g.id);
    const set = n?.grantsByResource;
    if (set) {
      const resource = set.delete(g.id);
      if (resource >= 0) this.resources.grantUnref(resource);
      if (set.size === 0) {
        n!.grantsByResource = undefined;
        this.grantSets[set.num] = undefined;
        this.freeGrantNums.push(set.num);
      }
      this.prune(g.subjectId);
    }
  }

  /** Joins an assignment into its membership's subject node (when the membership is known). */
  private linkAssignment(a: RoleAssignment, m: Membership | undefined): void {
    if (!m) return;
    const n = this.nodeFor(m.subjectId);
    const entry = [a.id, m.id, this.scopes.str(m.scopeId), this.roles.str(a.roleId)];
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
    const n = this.nodes.get(m.subjectId);
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
    this.prune(m.subjectId);
  }
}
