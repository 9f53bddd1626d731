/**
 * PlanResources: for an actor, an action and a resource type key at a scope, a condition on the
 * resources of that type that holds exactly for those evaluate (evaluate.ts) allows, at the
 * index's revision, with the clock and gate mode given.
 *
 * For a resource r of the type, evaluate allows when
 *   gate(r) AND (some policy matches r ? the top priority group of r's matching policies has
 *   an allow and no deny : roles(r) OR ownership(r) OR inherited(r)),
 * after the short-cuts that do not depend on r (an unknown subject, one not of
 * `actor.subjectType`: nothing is allowed). What depends only on the subject, the scope, the
 * context and the clock is decided here: held roles and their overrides, each policy's action,
 * window, subjectCondition and contextCondition (an error fails closed, as in evaluate). What
 * depends on rows an application does not store (links, tags, inherit edges, ownership grants,
 * direct policy targets, a resource's type id) becomes `id in [...]` over the index's finite
 * sets: exact at the revision the plan carries. Collections' match definitions become
 * comparisons on the resource's fields where they can be exact (match-plan.ts) and `residual`
 * nodes elsewhere.
 *
 * Policies, match definitions and conditions draw on a decision's operation budget, so in
 * evaluate one rule running out depends on what the others spent on that resource. The plan
 * adds up an upper bound of what every rule it could meet may spend (the sizes of stored values
 * are bounded, limits.md); past the decision budget, every resource a policy could concern is
 * left to evaluate (a residual), since only evaluate can tell which rule runs out.
 *
 * Cost: a plan never visits the resources of the type one by one. Each set comes from an index
 * (docs/plan-resources.md#cost): inherited grants from the descendants of their sources, direct
 * policies from the policies on resources by action, the gate from the link rows, tags from the
 * tag assignments, the types of the key from the resource counts on the type slots. Only a key
 * that several types with resources share walks its resources, for their type ids.
 */
import { DECISION_MAX_OPERATIONS, DecisionBudget } from '../budget.js';
import { AmbiguousSubjectError, ScopeNotFoundError } from '../errors.js';
import { isPlainObject } from '../json.js';
import { applyJsonLogic, logicTruthy } from '../jsonlogic.js';
import type { Collection, OwnershipGrant, Permission, Policy } from '../model.js';
import { conditionContext } from '../policy-leg.js';
import { grantRoleUsable, heldRoles, overrideDecisions, rolePermissionIdsAt } from '../roles.js';
import { subjectByExternalId } from '../subject-ref.js';
import { MAX_HIERARCHY_DEPTH, bagRows, type ResourceNode, type ScopePath, type SubjectNode, type TenantIndex } from '../tenant-index/mod.js';
import type { GateMode } from '../target.js';
import { inIdOrder } from '../order.js';
import { maxMatchCost } from './cost.js';
import { planMatch } from './match-plan.js';
import { FALSE, TRUE, all, any, hasResidual, not, oneOf, residual, type PlanNode } from './tree.js';

export { AmbiguousSubjectError };

export interface PlanResourcesQuery {
  /** Exactly one of `subjectId` and `externalId`, as evaluate takes it. */
  actor: { subjectId?: string; externalId?: string; subjectType?: string };
  scopeId: string;
  action: string;
  /** The resource type key. */
  resourceType: string;
  context?: Record<string, unknown>;
}

export interface PlanOptions {
  now: Date;
  gate: GateMode;
}

export type PlanKindName = 'always_allowed' | 'always_denied' | 'conditional';

export interface ResourcePlan {
  kind: PlanKindName;
  /** TRUE, FALSE, or the condition of a conditional plan. */
  condition: PlanNode;
  hasResidual: boolean;
  revision: number;
}

function planOf(condition: PlanNode, revision: number): ResourcePlan {
  const kind: PlanKindName = condition.kind === 'const' ? (condition.value ? 'always_allowed' : 'always_denied') : 'conditional';
  return { kind, condition, hasResidual: hasResidual(condition), revision };
}

/**
 * The plan. Throws ScopeNotFoundError for an unknown scope and AmbiguousSubjectError for an
 * external id several subjects share, as evaluate does.
 */
export function planResources(index: TenantIndex, query: PlanResourcesQuery, options: PlanOptions): ResourcePlan {
  const now = options.now.getTime();
  if (Number.isNaN(now)) throw new Error('invalid clock');
  const gate = options.gate;
  if (gate !== 'off' && gate !== 'links-fallback' && gate !== 'strict') throw new Error('invalid gate mode');
  const revision = index.revision;
  const path = index.scopePath(query.scopeId);
  if (path.ids.length === 0) throw new ScopeNotFoundError(query.scopeId);
  const actor = query.actor;
  const subject = actor.subjectId ? index.subjectNode(actor.subjectId) : subjectByExternalId(index, actor.externalId ?? '', actor.subjectType);
  if (subject === undefined || subject.row === undefined) return planOf(FALSE, revision);
  if (actor.subjectType && actor.subjectType !== subject.type) return planOf(FALSE, revision);
  const c = new Compiler(index, query, path, subject, now, gate);
  return planOf(c.compile(), revision);
}

/** A policy that may match a resource of the type, with what the plan knows of it. */
interface Candidate {
  policy: Policy;
  /** Its action, window and conditions hold at plan time. */
  live: boolean;
  /** When it matches a resource (for a live one). */
  matches: PlanNode;
}

class Compiler {
  private readonly permsByRole = new Map<string, Permission[]>();
  /** Patterns of held-role permissions covering (action, type) other than `*`. */
  private readonly patterns = new Set<string>();
  private star = false;
  private readonly grants;
  /** Ancestors an inheriting child reaches its grant through, by node. */
  private readonly sourceMemo = new Map<ResourceNode, boolean>();
  private subjectData: unknown;
  private contextData: Record<string, unknown> | undefined;
  /** Operations every rule a decision may meet could spend together (see the file's comment). */
  private cost = 0;

  constructor(
    private readonly index: TenantIndex,
    private readonly query: PlanResourcesQuery,
    private readonly path: ScopePath,
    private readonly subject: SubjectNode,
    private readonly now: number,
    private readonly gate: GateMode,
  ) {
    this.grants = subject.grantsByResource !== undefined && subject.grantsByResource.size > 0 ? subject.grantsByResource : undefined;
  }

  compile(): PlanNode {
    this.collectRolePermissions();
    const byType = this.typesOfKey();
    const { linked, linkedReach } = this.gate === 'off' ? { linked: [], linkedReach: [] } : this.linkedResources();
    const inherited = this.patterns.size > 0 || this.grants !== undefined ? this.inheritingResources() : [];
    const owned: string[] = [];
    // Ownership: the subject's granted resources of the type, not a scan of the type's.
    if (this.grants !== undefined) {
      const granted = new Set<number>();
      this.grants.forEachResource((num) => granted.add(num));
      for (const node of granted) if (this.ofType(node) && this.grantCovers(node)) owned.push(this.index.resourceNodes.idOf(node));
    }

    const gateNode = this.gateCondition(linked, linkedReach);
    const roleNode = any(
      this.star ? TRUE : any(oneOf('id', this.patterns), oneOf('externalResourceId', this.patterns)),
      oneOf('id', owned),
      oneOf('id', inherited),
    );
    const typeIs = (typeId: string): PlanNode => (byType.size === 1 ? (byType.has(typeId) ? TRUE : FALSE) : oneOf('id', byType.get(typeId) ?? []));
    const candidates = this.candidates(byType, typeIs);
    if (candidates.length === 0) return all(gateNode, roleNode);
    if (this.cost > DECISION_MAX_OPERATIONS) {
      // Policies on resources naming another action are not among them: evaluate spends nothing on those.
      const maybePolicy = any(...candidates.map((c) => c.scope));
      const r = residual(`the policies and match definitions a resource may meet could spend more than a decision's ${DECISION_MAX_OPERATIONS} operations`);
      return all(gateNode, any(all(maybePolicy, r), all(not(maybePolicy), roleNode)));
    }
    const live = candidates.filter((c) => c.live);
    return all(gateNode, this.policyOutcome(live, roleNode));
  }

  /** Whether a node is an existing resource of the plan's type key. */
  private ofType(node: ResourceNode): boolean {
    const nodes = this.index.resourceNodes;
    return nodes.exists(node) && nodes.type(node)?.key === this.query.resourceType;
  }

  /**
   * The type ids of the key that have resources, each with its resources' ids only when there
   * are several (then `typeIs` needs them): from the type slots' counts, without a walk, for the
   * common key of one type. Several types sharing a key is rare and no index gives their ids,
   * so that case walks the key's resources in id order (types in order of first appearance).
   */
  private typesOfKey(): Map<string, string[]> {
    const byType = new Map<string, string[]>();
    const typeIds = this.index.typeIdsWithResources(this.query.resourceType);
    if (typeIds.length === 1) byType.set(typeIds[0], []);
    if (typeIds.length <= 1) return byType;
    for (const node of this.index.resourcesInIdOrder(this.query.resourceType)) {
      const typeId = this.index.resourceNodes.type(node)?.id as string;
      let ids = byType.get(typeId);
      if (ids === undefined) byType.set(typeId, (ids = []));
      ids.push(this.index.resourceNodes.idOf(node));
    }
    return byType;
  }

  /** The resources of the type with scope links, and those with a link into the scope path: from the link rows (O(links)). */
  private linkedResources(): { linked: string[]; linkedReach: string[] } {
    const linked: string[] = [];
    const linkedReach: string[] = [];
    for (const l of this.index.scopeLinks()) {
      const node = this.index.resourceNode(l.resourceId);
      if (node === undefined || !this.ofType(node)) continue;
      linked.push(l.resourceId);
      if (this.path.set.has(l.scopeId)) linkedReach.push(l.resourceId);
    }
    return { linked, linkedReach };
  }

  /**
   * The resources of the type that inherit a grant (evaluate's walk up, {@link inherits}). Only
   * a descendant of a source can: a resource a held permission names by id or one the subject
   * has a grant on. So the candidates are the sources and their descendants through `inherit`
   * edges (every parent link, existing resources only: a walk up passes through none other),
   * MAX_HIERARCHY_DEPTH levels down; each is then checked with the walk up itself, since the
   * parent evaluate walks to may not be the one it was found through.
   */
  private inheritingResources(): string[] {
    const roots: ResourceNode[] = [];
    for (const pattern of this.patterns) {
      const node = this.index.resourceNode(pattern);
      if (node !== undefined && this.index.resourceNodes.exists(node)) roots.push(node);
    }
    this.grants?.forEachResource((node) => {
      if (this.index.resourceNodes.exists(node)) roots.push(node);
    });
    const seen = new Set<ResourceNode>(roots);
    const found: ResourceNode[] = [...seen];
    let level: readonly ResourceNode[] = [...seen];
    for (let depth = 0; depth < MAX_HIERARCHY_DEPTH && level.length > 0; depth++) {
      const next: ResourceNode[] = [];
      for (const parent of level) {
        for (const link of bagRows(this.index.childLinks(this.index.resourceNodes.idOf(parent)))) {
          if (!link.inherit || !this.index.resourceNodes.exists(link.child) || seen.has(link.child)) continue;
          seen.add(link.child);
          found.push(link.child);
          next.push(link.child);
        }
      }
      level = next;
    }
    const out: string[] = [];
    for (const node of found) if (this.ofType(node) && this.index.resourceNodes.up(node) >= 0 && this.inherits(node)) out.push(this.index.resourceNodes.idOf(node));
    return out;
  }

  /**
   * Policies targeting an existing resource of the type directly and naming the action (or
   * `*`), from the index by action and effect; by target id, then policy id. Those naming
   * another action never match and cost a decision nothing (policy-leg.ts), so they are left out.
   */
  private directPolicies(): Policy[] {
    const byId = new Map<string, Policy>();
    for (const a of this.query.action === '*' ? ['*'] : [this.query.action, '*']) {
      for (const bag of [this.index.directAllowPolicies(a), this.index.directDenyPolicies(a)]) {
        for (const p of bagRows(bag)) {
          if (p.target.kind !== 'resource') continue;
          const node = this.index.resourceNode(p.target.resourceId);
          if (node !== undefined && this.ofType(node)) byId.set(p.id, p);
        }
      }
    }
    const target = (p: Policy) => (p.target as { resourceId: string }).resourceId;
    return [...byId.values()].sort((a, b) => (target(a) < target(b) ? -1 : target(a) > target(b) ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** The permissions of the held roles (overrides applied) covering the action on the type. */
  private collectRolePermissions(): void {
    const seen = new Set<string>();
    for (const h of heldRoles(this.index, this.subject, this.path)) {
      if (seen.has(h.roleId)) continue;
      seen.add(h.roleId);
      for (const p of this.permsOf(h.roleId)) {
        if (p.resourcePattern === '*') this.star = true;
        else this.patterns.add(p.resourcePattern);
      }
    }
  }

  /** Permissions of a role at the scope (add/remove overrides applied) covering the action and type. */
  private permsOf(roleId: string): Permission[] {
    let out = this.permsByRole.get(roleId);
    if (out === undefined) {
      out = [];
      const { action, resourceType } = this.query;
      for (const id of rolePermissionIdsAt(this.index, roleId, overrideDecisions(this.index, roleId, this.path))) {
        const p = this.index.permission(id);
        if (p === undefined) continue;
        if (p.action !== action && p.action !== '*') continue;
        if (p.resourceType !== '*' && p.resourceType !== resourceType) continue;
        out.push(p);
      }
      this.permsByRole.set(roleId, out);
    }
    return out;
  }

  /** A usable ownership grant of the subject on `on` whose role covers the action for the plan's type (a child's, when `on` is an ancestor). */
  private grantCovers(on: ResourceNode): boolean {
    const grants = (this.grants as NonNullable<SubjectNode['grantsByResource']>).get(on);
    const nodes = this.index.resourceNodes;
    for (const g of bagRows<OwnershipGrant>(grants)) {
      if (!grantRoleUsable(this.index, g.roleId, nodes.owner(on))) continue;
      for (const p of this.permsOf(g.roleId)) {
        const pat = p.resourcePattern;
        if (pat === '*' || pat === nodes.ext(on) || pat === this.index.resourceNodes.idOf(on)) return true;
      }
    }
    return false;
  }

  /** An ancestor gives the child's type: a held permission patterned to its id, or a grant on it. */
  private isSource(node: ResourceNode): boolean {
    let v = this.sourceMemo.get(node);
    if (v === undefined) {
      v = this.patterns.has(this.index.resourceNodes.idOf(node)) || (this.grants !== undefined && this.grantCovers(node));
      this.sourceMemo.set(node, v);
    }
    return v;
  }

  /** evaluate's walk up `inherit` edges (at most 64, stopping at a `none` edge, a missing parent or a cycle). */
  private inherits(start: ResourceNode): boolean {
    const visited: ResourceNode[] = [];
    const nodes = this.index.resourceNodes;
    let node: ResourceNode = start;
    for (let depth = 0; depth < MAX_HIERARCHY_DEPTH; depth++) {
      const parent = nodes.up(node);
      if (parent < 0 || !nodes.upInherit(node) || !nodes.exists(parent)) return false;
      if (parent === start || visited.includes(parent)) return false;
      visited.push(parent);
      if (this.isSource(parent)) return true;
      node = parent;
    }
    return false;
  }

  private gateCondition(linked: string[], linkedReach: string[]): PlanNode {
    if (this.gate === 'off') return TRUE;
    const owner = oneOf('ownerScopeId', this.path.ids);
    if (this.gate === 'strict') return any(owner, oneOf('id', linkedReach));
    const reach = new Set(linkedReach);
    // links-fallback: a resource without links passes; one with links passes as under strict.
    return any(owner, not(oneOf('id', linked.filter((id) => !reach.has(id)))));
  }

  /**
   * Every policy a resource of the type may meet: direct ones (on their targets' ids) and those
   * of the collections at the scope or above for each type of the key (on the match definition:
   * a deny also where it errors). Decides each one's resource-independent parts and adds up the
   * operations they may cost.
   */
  private candidates(byType: Map<string, string[]>, typeIs: (t: string) => PlanNode): (Candidate & { scope: PlanNode })[] {
    const out: (Candidate & { scope: PlanNode })[] = [];
    for (const policy of this.directPolicies()) {
      const scope = directScope(policy);
      out.push({ ...this.constantParts(policy, scope), scope });
    }
    for (const typeId of byType.keys()) {
      for (const s of this.path.ids) {
        for (const c of inIdOrder<Collection>(this.index.collectionsAt(typeId, s))) {
          const policies = this.index.collectionPolicies(c.id);
          if (policies === undefined) continue;
          this.cost += maxMatchCost(c.matchDefinition);
          const m = planMatch(c.matchDefinition, {
            collectionId: c.id,
            tagged: (group, wanted) => this.tagged(group, wanted),
            typeIdHolds: (holds) => any(...[...byType.keys()].filter(holds).map(typeIs)),
          });
          const isType = typeIs(typeId);
          for (const p of bagRows<Policy>(policies)) {
            const scope = all(isType, p.effect === 'deny' ? any(m.match, m.error) : m.match);
            out.push({ ...this.constantParts(p, scope), scope });
          }
        }
      }
    }
    return out;
  }

  /** The ids of the resources of the type carrying a tag of group key `group` with one of `wanted` (from the tag assignments, not the resources). */
  private tagged(group: string, wanted: readonly string[]): PlanNode {
    const ids: string[] = [];
    for (const id of this.index.resourceIdsTagged(group, wanted)) {
      const node = this.index.resourceNode(id);
      if (node !== undefined && this.ofType(node)) ids.push(id);
    }
    return oneOf('id', ids);
  }

  /** A policy's action, window and conditions, as decidePolicies judges them (errors fail closed). */
  private constantParts(p: Policy, scope: PlanNode): Candidate {
    const failClosed = p.effect === 'deny';
    const actionOk = p.actions.includes(this.query.action) || p.actions.includes('*');
    const from = validTime(p.validFrom);
    const until = validTime(p.validUntil);
    const windowOk =
      (from === null || (Number.isNaN(from) ? failClosed : this.now >= from)) && (until === null || (Number.isNaN(until) ? failClosed : this.now < until));
    let ok = actionOk && windowOk;
    if (ok && p.subjectCondition !== undefined && p.subjectCondition !== null) {
      const s = this.subject.row!;
      this.subjectData ??= { subject: { id: s.id, type: s.type, externalId: s.externalId, meta: isPlainObject(s.metadata) ? s.metadata : {} } };
      ok = this.condition(p.subjectCondition, this.subjectData, failClosed);
    }
    if (ok && p.contextCondition !== undefined && p.contextCondition !== null) {
      this.contextData ??= conditionContext(this.query.context, new Date(this.now));
      ok = this.condition(p.contextCondition, this.contextData, failClosed);
    }
    return { policy: p, live: ok, matches: ok ? scope : FALSE };
  }

  private condition(rule: unknown, data: unknown, failClosed: boolean): boolean {
    const budget = new DecisionBudget();
    const r = applyJsonLogic(rule, data, budget);
    this.cost += DECISION_MAX_OPERATIONS - budget.left;
    return r.ok ? logicTruthy(r.value) : failClosed;
  }

  /**
   * evaluate's policy leg as a condition: for priorities p1 > p2 > …, OR over i of (no policy
   * above p_i matches, an allow at p_i matches, no deny at p_i matches); and the role legs
   * where no policy matches.
   */
  private policyOutcome(live: Candidate[], roleNode: PlanNode): PlanNode {
    const byPriority = new Map<number, Candidate[]>();
    for (const c of live) {
      const pr = priorityOf(c.policy);
      let list = byPriority.get(pr);
      if (list === undefined) byPriority.set(pr, (list = []));
      list.push(c);
    }
    const levels = [...byPriority.keys()].sort((a, b) => b - a);
    const branches: PlanNode[] = [];
    const above: PlanNode[] = [];
    for (const level of levels) {
      const here = byPriority.get(level) as Candidate[];
      const allow = any(...here.filter((c) => c.policy.effect !== 'deny').map((c) => c.matches));
      const deny = any(...here.filter((c) => c.policy.effect === 'deny').map((c) => c.matches));
      branches.push(all(not(any(...above)), allow, not(deny)));
      above.push(...here.map((c) => c.matches));
    }
    return any(...branches, all(not(any(...above)), roleNode));
  }
}

/** `id in [the policy's target]`, for a policy on a resource. */
function directScope(p: Policy): PlanNode {
  return oneOf('id', [(p.target as { resourceId: string }).resourceId]);
}

function validTime(iso: string | null | undefined): number | null {
  if (iso === undefined || iso === null) return null;
  return typeof iso === 'string' ? Date.parse(iso) : NaN;
}

function priorityOf(p: Policy): number {
  return typeof p.priority === 'number' && Number.isFinite(p.priority) ? p.priority : 0;
}
