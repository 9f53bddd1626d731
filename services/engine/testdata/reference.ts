/**
 * A naive reference evaluator written straight from the spec's decision path and contract §5
 * (plus the interpretations documented in evaluate.ts and roles.ts). It scans the snapshot's
 * arrays on every call and shares no code with the engine except the JSON Logic wrapper and
 * the RE2 regex engine. Used only by the differential tests: slow and simple on purpose.
 */
import { RE2JS } from 're2js';
import { applyJsonLogic, logicTruthy } from '../jsonlogic.js';
import { validateMatchDefinition } from '../match.js';
import type { JsonValue, Permission, Policy, Resource, TenantSnapshot } from '../model.js';

export interface RefRequest {
  actor: { subjectId: string; subjectType?: string };
  scopeId: string;
  action: string;
  resource?: { resourceId: string } | { externalResourceId: string; resourceType: string };
  context?: Record<string, unknown>;
}

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

  const subject = subjects.find((s) => s.id === req.actor.subjectId);
  if (!subject) return { allowed: false, reason: 'no_match' };
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
      const holds = (rule: unknown, data: unknown) => {
        const out = applyJsonLogic(rule, data);
        return out.ok ? logicTruthy(out.value) : p.effect === 'deny';
      };
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

// --- match definitions, interpreted directly --------------------------------------------------

type Tri = 'match' | 'no_match' | 'error';

/** Match definition against a resource and its (group key, identifier) tags; an error does not match. */
export function refMatch(def: JsonValue, r: Resource, resourceTags: [string, string][]): boolean {
  return refMatchOutcome(def, r, resourceTags) === 'match';
}

/** Three-valued: an invalid definition, or one whose regex or condition fails, is an `error`. */
export function refMatchOutcome(def: JsonValue, r: Resource, resourceTags: [string, string][]): Tri {
  if (validateMatchDefinition(def) !== null) return 'error';
  return refMatchValid(def as Record<string, JsonValue>, r, resourceTags);
}

const tri = (b: boolean): Tri => (b ? 'match' : 'no_match');
/** Kleene AND / OR over outcomes. */
const and = (xs: Tri[]): Tri => (xs.includes('no_match') ? 'no_match' : xs.includes('error') ? 'error' : 'match');
const or = (xs: Tri[]): Tri => (xs.includes('match') ? 'match' : xs.includes('error') ? 'error' : 'no_match');
const not = (x: Tri): Tri => (x === 'error' ? x : x === 'match' ? 'no_match' : 'match');

function refRegex(pattern: string, v: unknown): Tri {
  let re: RE2JS;
  try {
    re = RE2JS.compile(pattern);
  } catch {
    return 'error';
  }
  if (typeof v !== 'string') return 'no_match';
  try {
    return tri(re.test(v));
  } catch {
    return 'error';
  }
}

function field(r: Resource, name: string): unknown {
  const own: Record<string, unknown> = {
    id: r.id,
    externalResourceId: r.externalResourceId,
    displayName: r.displayName,
    resourceTypeId: r.resourceTypeId,
    ownerScopeId: r.ownerScopeId,
    createdAt: r.createdAt,
    createdBy: r.createdBy,
  };
  if (name in own) return own[name];
  let v: unknown = r.attributes;
  for (const part of name.slice('attributes.'.length).split('.')) {
    if (v === null || typeof v !== 'object') return undefined;
    if (Array.isArray(v)) {
      const i = Number(part);
      v = String(i) === part ? v[i] : undefined;
    } else v = Object.hasOwn(v, part) ? (v as Record<string, unknown>)[part] : undefined;
  }
  return v;
}

function refOp(op: string, v: unknown, x: unknown): Tri {
  if (op === 'regex') return refRegex(x as string, v);
  return tri(refBoolOp(op, v, x));
}

function refBoolOp(op: string, v: unknown, x: unknown): boolean {
  const same = (a: unknown, b: unknown) => (b === null ? a === null || a === undefined : a === b);
  const comparable = (typeof v === 'number' && typeof x === 'number') || (typeof v === 'string' && typeof x === 'string');
  switch (op) {
    case 'eq': return same(v, x);
    case 'ne': return !same(v, x);
    case 'gt': return comparable && (v as number) > (x as number);
    case 'gte': return comparable && (v as number) >= (x as number);
    case 'lt': return comparable && (v as number) < (x as number);
    case 'lte': return comparable && (v as number) <= (x as number);
    case 'in': return (x as unknown[]).some((e) => same(v, e));
    case 'nin': return !(x as unknown[]).some((e) => same(v, e));
    case 'contains': return typeof v === 'string' ? typeof x === 'string' && v.indexOf(x) >= 0 : Array.isArray(v) && v.indexOf(x) >= 0;
    case 'startsWith': return typeof v === 'string' && v.startsWith(x as string);
    case 'endsWith': return typeof v === 'string' && v.endsWith(x as string);
  }
  return false;
}

function refMatchValid(def: Record<string, JsonValue>, r: Resource, resourceTags: [string, string][]): Tri {
  const parts: Tri[] = [];
  if (def.fields) {
    for (const [name, spec] of Object.entries(def.fields as Record<string, JsonValue>)) {
      const v = field(r, name);
      const ops = spec !== null && typeof spec === 'object' && !Array.isArray(spec) ? Object.entries(spec) : [['eq', spec] as const];
      for (const [op, x] of ops) parts.push(refOp(op, v, x));
    }
  }
  if (def.tags) {
    for (const [group, want] of Object.entries(def.tags as Record<string, JsonValue>)) {
      const wanted = Array.isArray(want) ? want : [want];
      parts.push(tri(resourceTags.some(([g, id]) => g === group && wanted.includes(id))));
    }
  }
  if (def.patterns) {
    for (const [name, re] of Object.entries(def.patterns as Record<string, JsonValue>)) parts.push(refRegex(re as string, field(r, name)));
  }
  if (def.time) {
    const t = def.time as { field: string; before?: string; after?: string; between?: [string, string] };
    const v = field(r, t.field);
    const at = typeof v === 'string' ? Date.parse(v) : NaN;
    parts.push(
      tri(
        !Number.isNaN(at) &&
          (t.before === undefined || at < Date.parse(t.before)) &&
          (t.after === undefined || at > Date.parse(t.after)) &&
          (t.between === undefined || (at >= Date.parse(t.between[0]) && at < Date.parse(t.between[1]))),
      ),
    );
  }
  if (def.condition !== undefined) {
    const data = {
      resource: {
        id: r.id,
        externalResourceId: r.externalResourceId,
        displayName: r.displayName ?? null,
        resourceTypeId: r.resourceTypeId,
        ownerScopeId: r.ownerScopeId,
        createdAt: r.createdAt,
        createdBy: r.createdBy,
        attributes: r.attributes ?? {},
      },
    };
    const out = applyJsonLogic(def.condition, data);
    parts.push(out.ok ? tri(logicTruthy(out.value)) : 'error');
  }
  const sub = (d: JsonValue) => refMatchValid(d as Record<string, JsonValue>, r, resourceTags);
  if (def.any) parts.push(or((def.any as JsonValue[]).map(sub)));
  if (def.all) parts.push(and((def.all as JsonValue[]).map(sub)));
  if (def.none) parts.push(not(or((def.none as JsonValue[]).map(sub))));
  return and(parts);
}
