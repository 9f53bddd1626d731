/**
 * A naive reference evaluator written straight from the spec's decision path and contract §5
 * (plus the interpretations documented in evaluate.ts, roles.ts and docs/decision-path.md). It
 * scans the snapshot's arrays on every call and imports nothing from the engine but its types:
 * JSON Logic (validity, evaluation, truthiness) is reference-logic.ts, match definitions are
 * reference-match.ts. Used only by the differential tests: slow and simple on purpose.
 */
import type { Permission, Policy, Resource, TenantSnapshot } from '../model.js';
import { refHolds } from './reference-logic.js';
import { refMatchOutcome } from './reference-match.js';

export interface RefRequest {
  /** Exactly one of `subjectId` and `externalId`. */
  actor: { subjectId?: string; externalId?: string; subjectType?: string };
  scopeId: string;
  action: string;
  resource?: { resourceId: string } | { externalResourceId: string; resourceType: string };
  context?: Record<string, unknown>;
}

/** An external id several subjects (of the wanted type, when given) share. */
export class RefAmbiguousSubject extends Error {}

export interface RefOptions {
  now: Date;
  gate: 'off' | 'links-fallback' | 'strict';
}

export interface RefDecision {
  allowed: boolean;
  reason: string;
  policyId?: string;
}

export class RefScopeNotFound extends Error {}

const LIMIT = 64;

export function referenceEvaluate(snap: TenantSnapshot, req: RefRequest, opts: RefOptions): RefDecision {
  const R = snap.rows;
  const scopes = R.scope ?? [];
  const subjects = R.subject ?? [];
  const roles = R.role ?? [];
  const permissions = R.permission ?? [];
  const rolePermissions = R.role_permission ?? [];
  const memberships = R.membership ?? [];
  const assignments = R.role_assignment ?? [];
  const overrides = R.scope_override ?? [];
  const grants = R.ownership_grant ?? [];
  const types = R.resource_type ?? [];
  const resources = R.resource ?? [];
  const links = R.resource_scope_link ?? [];
  const edges = R.resource_edge ?? [];
  const collections = R.collection ?? [];
  const policies = R.policy ?? [];
  const tagGroups = R.tag_group ?? [];
  const tags = R.tag ?? [];
  const tagAssignments = R.tag_assignment ?? [];
  const bindings = R.tag_binding ?? [];

  // "scope → ancestors": the scope, then its parent, and so on; stop at a missing scope, a
  // repeat, or after 64 ancestors.
  function chain(scopeId: string): string[] {
    const out: string[] = [];
    let cur: string | null | undefined = scopeId;
    while (cur) {
      const s = scopes.find((x) => x.id === cur);
      if (!s || out.includes(s.id) || out.length > LIMIT) break;
      out.push(s.id);
      cur = s.parentId;
    }
    return out;
  }

  if (!scopes.some((s) => s.id === req.scopeId)) throw new RefScopeNotFound(req.scopeId);
  const S = chain(req.scopeId);

  // Resolve the resource.
  let resource: Resource | undefined;
  let typeKey: string | undefined;
  let unknownExternal: string | undefined;
  const ref = req.resource;
  if (ref && 'resourceId' in ref) {
    resource = resources.find((r) => r.id === ref.resourceId);
    if (!resource) return { allowed: false, reason: 'resource_not_found' };
    typeKey = types.find((t) => t.id === resource!.resourceTypeId)?.key;
  } else if (ref) {
    const typeIds = types.filter((t) => t.key === ref.resourceType).map((t) => t.id);
    const found = resources.filter((r) => typeIds.includes(r.resourceTypeId) && r.externalResourceId === ref.externalResourceId);
    typeKey = ref.resourceType;
    if (found.length === 0) unknownExternal = ref.externalResourceId;
    else {
      found.sort((a, b) => (a.id < b.id ? -1 : 1));
      resource = found[0];
      for (const s of S) {
        const own = found.find((r) => r.ownerScopeId === s);
        if (own) {
          resource = own;
          break;
        }
      }
    }
  }

  // 1. Reachability gate.
  if (ref && opts.gate !== 'off') {
    if (unknownExternal !== undefined) {
      if (opts.gate === 'strict') return { allowed: false, reason: 'gate_unreachable' };
    } else if (resource) {
      const r = resource;
      const rLinks = links.filter((l) => l.resourceId === r.id);
      const gated = opts.gate === 'strict' || rLinks.length > 0;
      if (gated) {
        const reachable = S.includes(r.ownerScopeId) || rLinks.some((l) => S.includes(l.scopeId));
        if (!reachable) return { allowed: false, reason: 'gate_unreachable' };
      }
    }
  }

  // By external id: only subjects of the wanted type count, and several are a request error.
  const named = req.actor.subjectId
    ? subjects.filter((s) => s.id === req.actor.subjectId)
    : subjects.filter((s) => s.externalId === req.actor.externalId && (!req.actor.subjectType || s.type === req.actor.subjectType));
  if (!req.actor.subjectId && named.length > 1) throw new RefAmbiguousSubject(req.actor.externalId ?? '');
  const subject = named[0];
  if (!subject) return { allowed: false, reason: 'subject_not_found' };
  // An empty actor type means "not given" (proto3 default).
  if (req.actor.subjectType && req.actor.subjectType !== subject.type) return { allowed: false, reason: 'no_match' };

  // 2. Resource policies.
  if (resource) {
    const r = resource;
    const resourceTags: [string, string][] = [];
    for (const a of tagAssignments) {
      if (a.targetType !== 'resource' || a.targetId !== r.id) continue;
      const tag = tags.find((t) => t.id === a.tagId);
      const group = tag && tagGroups.find((g) => g.id === tag.tagGroupId);
      if (tag && group) resourceTags.push([group.key, tag.identifier]);
    }
    const applicable: Policy[] = policies.filter((p) => p.target.kind === 'resource' && p.target.resourceId === r.id);
    for (const c of collections) {
      if (c.resourceTypeId !== r.resourceTypeId || !S.includes(c.scopeId)) continue;
      // A definition that errors fails closed: its deny policies are considered, its allows are not.
      const m = refMatchOutcome(c.matchDefinition, r, resourceTags);
      if (m === 'no_match') continue;
      for (const p of policies) {
        if (p.target.kind === 'collection' && p.target.collectionId === c.id && (m === 'match' || p.effect === 'deny')) applicable.push(p);
      }
    }
    const now = opts.now.getTime();
    const ctx: Record<string, unknown> = { ...(req.context ?? {}) };
    if (!('time' in ctx)) {
      ctx.time = { hour: opts.now.getUTCHours(), minute: opts.now.getUTCMinutes(), dayOfWeek: opts.now.getUTCDay(), iso: opts.now.toISOString() };
    }
    const subjData = { subject: { id: subject.id, type: subject.type, externalId: subject.externalId, meta: subject.metadata ?? {} } };
    const matching = applicable.filter((p) => {
      if (!(p.actions.includes(req.action) || p.actions.includes('*'))) return false;
      // An unparsable bound fails closed too: it holds on a deny, not on an allow.
      const t = (iso: unknown) => (typeof iso === 'string' ? Date.parse(iso) : NaN);
      if (p.validFrom != null && (Number.isNaN(t(p.validFrom)) ? p.effect !== 'deny' : !(now >= t(p.validFrom)))) return false;
      if (p.validUntil != null && (Number.isNaN(t(p.validUntil)) ? p.effect !== 'deny' : !(now < t(p.validUntil)))) return false;
      // A condition that cannot be evaluated fails closed: a deny still applies, an allow does not.
      const holds = (rule: unknown, data: unknown) => refHolds(rule, data) ?? p.effect === 'deny';
      if (p.subjectCondition != null && !holds(p.subjectCondition, subjData)) return false;
      if (p.contextCondition != null && !holds(p.contextCondition, ctx)) return false;
      return true;
    });
    if (matching.length > 0) {
      const prio = (p: Policy) => (typeof p.priority === 'number' && Number.isFinite(p.priority) ? p.priority : 0);
      const top = Math.max(...matching.map(prio));
      const group = matching.filter((p) => prio(p) === top).sort((a, b) => (a.id < b.id ? -1 : 1));
      const deny = group.find((p) => p.effect === 'deny');
      if (deny) return { allowed: false, reason: 'policy_deny', policyId: deny.id };
      return { allowed: true, reason: 'policy_allow', policyId: group[0].id };
    }
  }

  // 3. Role-based evaluation: roles held at S.
  const heldRoleIds: string[] = [];
  const isBlocked = (roleId: string, sourceIndex: number) =>
    S.slice(0, sourceIndex).some((s) => overrides.some((o) => o.scopeId === s && o.roleId === roleId && o.mode === 'block'));
  const hold = (roleId: string, sourceScope: string) => {
    const role = roles.find((x) => x.id === roleId);
    if (!role) return;
    if (!chain(sourceScope).includes(role.scopeId)) return;
    if (isBlocked(roleId, S.indexOf(sourceScope))) return;
    heldRoleIds.push(roleId);
  };
  for (const m of memberships) {
    if (m.subjectId !== subject.id || !S.includes(m.scopeId)) continue;
    for (const a of assignments) if (a.membershipId === m.id) hold(a.roleId, m.scopeId);
  }
  const subjectTagIds = tagAssignments
    .filter((a) => a.targetType === 'subject' && a.targetId === subject.id && tags.some((t) => t.id === a.tagId))
    .map((a) => a.tagId);
  for (const b of bindings) {
    if (subjectTagIds.includes(b.tagId) && S.includes(b.scopeId)) hold(b.roleId, b.scopeId);
  }

  // Permissions of a role at S after add/remove overrides (nearest scope decides; remove wins a tie).
  function permsAt(roleId: string): Permission[] {
    const base = rolePermissions.filter((rp) => rp.roleId === roleId).map((rp) => rp.permissionId);
    const mentioned = overrides.filter((o) => o.roleId === roleId && o.mode !== 'block').flatMap((o) => o.permissionIds);
    const out: Permission[] = [];
    for (const pId of new Set([...base, ...mentioned])) {
      let present = base.includes(pId);
      for (const s of S) {
        const here = overrides.filter((o) => o.scopeId === s && o.roleId === roleId);
        if (here.some((o) => o.mode === 'remove' && o.permissionIds.includes(pId))) {
          present = false;
          break;
        }
        if (here.some((o) => o.mode === 'add' && o.permissionIds.includes(pId))) {
          present = true;
          break;
        }
      }
      const p = permissions.find((x) => x.id === pId);
      if (present && p) out.push(p);
    }
    return out;
  }

  const actionOk = (p: Permission) => p.action === req.action || p.action === '*';
  const typeOk = (p: Permission) => p.resourceType === '*' || (typeKey !== undefined && p.resourceType === typeKey);
  const covers = (p: Permission): boolean => {
    if (!actionOk(p)) return false;
    if (!ref) return p.resourcePattern === '*';
    if (!typeOk(p)) return false;
    if (resource) return p.resourcePattern === '*' || p.resourcePattern === resource.externalResourceId || p.resourcePattern === resource.id;
    return p.resourcePattern === '*' || p.resourcePattern === unknownExternal;
  };
  if (heldRoleIds.some((roleId) => permsAt(roleId).some(covers))) return { allowed: true, reason: 'role' };
  if (!resource) return { allowed: false, reason: 'no_match' };
  const r = resource;

  // 4. Ownership grant.
  // A grant counts when its role exists and is defined at the resource's owner scope or above.
  const grantRoles = (resourceId: string) => {
    const owner = resources.find((x) => x.id === resourceId)?.ownerScopeId;
    return grants
      .filter((g) => g.subjectId === subject.id && g.resourceId === resourceId)
      .filter((g) => {
        const role = roles.find((x) => x.id === g.roleId);
        return role !== undefined && owner !== undefined && chain(owner).includes(role.scopeId);
      })
      .map((g) => g.roleId);
  };
  if (grantRoles(r.id).some((roleId) => permsAt(roleId).some(covers))) return { allowed: true, reason: 'ownership' };

  // 5. Hierarchy inheritance through `inherit` edges.
  const visited = [r.id];
  let cur = r;
  for (let depth = 0; depth < LIMIT; depth++) {
    const edge = edges.filter((e) => e.childResourceId === cur.id).sort((a, b) => (a.id < b.id ? -1 : 1))[0];
    if (!edge || edge.cascade !== 'inherit') break;
    const parent = resources.find((x) => x.id === edge.parentResourceId);
    if (!parent || visited.includes(parent.id)) break;
    visited.push(parent.id);
    const inheritedBy = (p: Permission, patterns: string[]) => actionOk(p) && typeOk(p) && patterns.includes(p.resourcePattern);
    if (heldRoleIds.some((roleId) => permsAt(roleId).some((p) => inheritedBy(p, [parent.id])))) {
      return { allowed: true, reason: 'inherited' };
    }
    const ownerPatterns = ['*', parent.id, parent.externalResourceId];
    if (grantRoles(parent.id).some((roleId) => permsAt(roleId).some((p) => inheritedBy(p, ownerPatterns)))) {
      return { allowed: true, reason: 'inherited' };
    }
    cur = parent;
  }
  return { allowed: false, reason: 'no_match' };
}
