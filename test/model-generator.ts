/**
 * Generated tenant models for the property tests of TenantModelService: every kind of entity,
 * references that resolve (roles and permissions usable where they are named, resource types
 * defined at or above their resources, an acyclic resource hierarchy the type hierarchy allows,
 * tag limits held), drawn from a list of numbers so fast-check can generate and shrink them.
 * `buildThroughApi` makes the same tenant with the entity APIs, one call after another.
 */
import type { Client } from '@connectrpc/connect';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { TenantModel } from '../services/model/format.js';
import { chainOf, parentPath } from '../services/model/entities.js';
import { ScopeService } from '../gen/authz/v1/scope_service_pb.js';
import { ResourceTypeService } from '../gen/authz/v1/resource_type_service_pb.js';
import { PermissionService } from '../gen/authz/v1/permission_service_pb.js';
import { RoleService } from '../gen/authz/v1/role_service_pb.js';
import { ScopeOverrideService } from '../gen/authz/v1/scope_override_service_pb.js';
import { TagService } from '../gen/authz/v1/tag_service_pb.js';
import { SubjectService } from '../gen/authz/v1/subject_service_pb.js';
import { MembershipService } from '../gen/authz/v1/membership_service_pb.js';
import { ResourceService } from '../gen/authz/v1/resource_service_pb.js';
import { OwnershipGrantService } from '../gen/authz/v1/ownership_grant_service_pb.js';
import { PolicyService } from '../gen/authz/v1/policy_service_pb.js';

/** A scope type the generated models use beside the built-in ones (global: made once per database). */
export const GENERATED_SCOPE_TYPE = 'generated-team';

/**
 * A model drawn from `choices` (each choice a number; the same choices give the same model).
 * With `base`, the model keeps base's scopes and tag groups with their tags (what the API can
 * neither delete nor change), its groups unlocked: the next state of the same tenant.
 */
export function generateModel(choices: number[], base?: TenantModel): TenantModel {
  let at = 0;
  const n = (bound: number) => (bound <= 1 ? 0 : choices[at++ % choices.length] % bound);
  const chance = (inOf: number) => n(inOf) === 0;
  const pick = <T>(xs: readonly T[]): T => xs[n(xs.length)];
  const some = <T>(xs: readonly T[], most = xs.length) => xs.filter(() => chance(2)).slice(0, most);

  const m: TenantModel = { apiVersion: 'authz/v1', kind: 'TenantModel', scopeTypes: [{ name: GENERATED_SCOPE_TYPE, description: 'generated' }] };
  const paths = ['/'];
  m.scopes = [];
  for (let i = 0, count = n(5); i < count; i++) {
    const parent = pick(paths);
    const path = `${parent === '/' ? '' : parent}/s${i}`;
    paths.push(path);
    m.scopes.push({ path, type: chance(2) ? GENERATED_SCOPE_TYPE : 'project' });
  }
  if (base) {
    m.scopes = base.scopes!.map((s) => ({ ...s }));
    paths.splice(1, paths.length, ...m.scopes.map((s) => s.path));
  }
  // The section lists the scope types the scopes use (what an export lists).
  if (!m.scopes.some((s) => s.type === GENERATED_SCOPE_TYPE)) m.scopeTypes = [];
  const below = (scope: string) => paths.filter((p) => chainOf(p).includes(scope));
  const scoped = (s: string) => (s === '/' ? {} : { scope: s });

  const typeKeys = ['doc', 'folder', 'img'].slice(0, 1 + n(3));
  m.resourceTypes = typeKeys.map((key) => ({ key, ...(chance(2) ? { name: key.toUpperCase() } : {}), ...scoped(chance(3) ? pick(paths) : '/') }));
  const typeScope = new Map(m.resourceTypes.map((t) => [t.key, t.scope ?? '/']));
  const typeEdges = new Set<string>();

  m.permissions = [];
  for (const type of [...typeKeys, '*']) {
    for (const action of ['read', 'write']) {
      if (chance(2)) m.permissions.push({ key: `${type}:${action}:*`, ...scoped(pick(paths)), ...(chance(3) ? { name: `${action} ${type}` } : {}) });
    }
  }
  const visiblePermissions = (scope: string) => m.permissions!.filter((p) => chainOf(scope).includes(p.scope ?? '/')).map((p) => p.key);
  m.roles = [];
  for (let i = 0, count = 1 + n(3); i < count; i++) {
    // The first role is defined at the root: usable everywhere.
    const scope = i === 0 ? '/' : pick(paths);
    m.roles.push({ key: `r${i}`, ...scoped(scope), ...(chance(2) ? { name: `Role ${i}`, description: 'generated' } : {}), permissions: some(visiblePermissions(scope)) });
  }
  const usableRoles = (scope: string) => m.roles!.filter((r) => chainOf(scope).includes(r.scope ?? '/')).map((r) => r.key);
  m.scopeOverrides = [];
  for (const scope of some(paths, 2)) {
    const role = pick(m.roles).key;
    const mode = pick(['block', 'add', 'remove'] as const);
    const perms = some(m.permissions.map((p) => p.key));
    if (mode !== 'block' && perms.length === 0) continue;
    if (m.scopeOverrides.some((o) => (o.scope ?? '/') === scope && o.role === role && o.mode === mode)) continue;
    m.scopeOverrides.push({ ...scoped(scope), role, mode, ...(mode === 'block' ? {} : { permissions: perms }) });
  }
  m.tagGroups = ['env', 'tier'].slice(0, n(3)).map((key) => ({
    key, ...scoped(chance(2) ? '/' : pick(paths)), maxAppliedPerTarget: n(3), locked: chance(3),
    tags: ['a', 'b', 'c'].slice(0, 1 + n(3)).map((identifier) => ({ identifier, ...(chance(2) ? { label: identifier.toUpperCase() } : {}) })),
  }));
  if (base) m.tagGroups = base.tagGroups!.map((g) => ({ ...g, maxAppliedPerTarget: n(3), locked: false }));
  m.subjects = ['alice', 'bob', 'carol'].slice(0, n(4)).map((externalId) => ({
    externalId, ...(chance(3) ? { type: pick(['service', 'agent'] as const) } : {}), ...(chance(2) ? { metadata: { team: pick(['x', 'y']), n: n(5) } } : {}),
  }));
  m.memberships = [];
  for (const s of m.subjects) {
    for (const scope of some(paths, 2)) m.memberships.push({ subject: s.externalId, ...scoped(scope), roles: some(usableRoles(scope)) });
  }
  m.resources = [];
  for (let i = 0, count = n(6); i < count; i++) {
    const type = pick(typeKeys);
    m.resources.push({
      type, externalId: `e${i}`, ...scoped(pick(below(typeScope.get(type)!))),
      ...(chance(2) ? { displayName: `Resource ${i}` } : {}), ...(chance(2) ? { attributes: { size: n(100), tags: ['p', 'q'] } } : {}),
    });
  }
  const ref = (r: { type: string; externalId: string }) => `${r.type}/${r.externalId}`;
  m.resourceHierarchy = [];
  m.resources.forEach((child, i) => {
    if (i === 0 || !chance(2)) return;
    const parent = m.resources![n(i)];
    typeEdges.add(`${parent.type}>${child.type}`);
    m.resourceHierarchy!.push({ parent: ref(parent), child: ref(child), ...(chance(2) ? { cascade: 'inherit' as const } : {}), ...(chance(3) ? { relationshipType: 'contains' } : {}) });
  });
  if (chance(2)) typeEdges.add(`${pick(typeKeys)}>${pick(typeKeys)}`);
  m.resourceTypeHierarchy = [...typeEdges].map((e) => ({ parent: e.split('>')[0], child: e.split('>')[1] }));
  m.scopeLinks = [];
  for (const r of some(m.resources, 3)) {
    const scope = pick(paths);
    const linkType = pick(['share', 'alias', 'mirror'] as const);
    if (!m.scopeLinks.some((l) => l.resource === ref(r) && l.scope === scope && l.linkType === linkType)) {
      m.scopeLinks.push({ resource: ref(r), scope, linkType, ...(chance(2) ? { metadata: { why: 'generated' } } : {}) });
    }
  }
  m.ownershipGrants = [];
  for (const s of m.subjects) {
    for (const r of some(m.resources, 3)) {
      const roles = usableRoles(r.scope ?? '/');
      if (roles.length > 0) m.ownershipGrants.push({ subject: s.externalId, resource: ref(r), role: pick(roles) });
    }
  }
  const dedupe = <T>(xs: T[], key: (x: T) => string) => [...new Map(xs.map((x) => [key(x), x])).values()];
  m.ownershipGrants = dedupe(m.ownershipGrants, (g) => `${g.subject} ${g.resource} ${g.role}`);
  m.tagAssignments = [];
  const targets = [
    ...m.resources.map((r) => ({ resource: ref(r) })), ...m.subjects.map((s) => ({ subject: s.externalId })), ...paths.map((p) => ({ scope: p })),
  ];
  for (const g of m.tagGroups) {
    for (const target of some(targets, 3)) {
      const tags = some(g.tags!.map((t) => t.identifier), g.maxAppliedPerTarget || 3);
      for (const identifier of tags) m.tagAssignments.push({ tag: { group: g.key, identifier }, target });
    }
  }
  m.tagBindings = [];
  for (const g of m.tagGroups) {
    if (!chance(2)) continue;
    const scope = pick(paths);
    const roles = usableRoles(scope);
    if (roles.length > 0) m.tagBindings.push({ tag: { group: g.key, identifier: g.tags![0].identifier }, role: pick(roles), ...scoped(scope) });
  }
  m.collections = typeKeys.filter(() => chance(2)).map((type, i) => ({
    name: `c${i}`, ...scoped(pick(paths)), resourceType: type, ...(chance(2) ? { description: 'generated' } : {}),
    match: m.tagGroups!.length > 0 && chance(2) ? { tags: { [m.tagGroups![0].key]: m.tagGroups![0].tags![0].identifier } } : { fields: { displayName: { startsWith: 'Res' } } },
  }));
  m.policies = [];
  for (let i = 0, count = n(4); i < count; i++) {
    const onCollection = m.collections.length > 0 && (m.resources.length === 0 || chance(2));
    if (!onCollection && m.resources.length === 0) break;
    m.policies.push({
      name: `p${i}`, ...scoped(pick(paths)),
      target: onCollection ? { collection: pick(m.collections).name } : { resource: ref(pick(m.resources)) },
      actions: chance(3) ? ['*'] : some(['read', 'write', 'delete']).concat('read'), effect: pick(['allow', 'deny'] as const),
      ...(chance(2) ? { priority: n(20) - 5 } : {}),
      ...(chance(3) ? { subjectCondition: { '==': [{ var: 'subject.meta.team' }, 'x'] } } : {}),
      ...(chance(3) ? { contextCondition: { '<': [{ var: 'time.hour' }, 18] } } : {}),
      ...(chance(3) ? { validFrom: '2026-01-01T00:00:00.000Z', validUntil: '2027-01-01T00:00:00.000Z' } : {}),
    });
  }
  return m;
}

export interface ApiClients {
  scopes: Client<typeof ScopeService>; types: Client<typeof ResourceTypeService>; permissions: Client<typeof PermissionService>;
  roles: Client<typeof RoleService>; overrides: Client<typeof ScopeOverrideService>; tags: Client<typeof TagService>;
  subjects: Client<typeof SubjectService>; memberships: Client<typeof MembershipService>; resources: Client<typeof ResourceService>;
  grants: Client<typeof OwnershipGrantService>; policies: Client<typeof PolicyService>;
}

/**
 * The model's tenant made through the entity APIs, one create at a time in dependency order
 * (tag groups locked last, as an operator would). Role and permission keys are unique in the
 * generated models, so a key names one entity.
 */
export async function buildThroughApi(c: ApiClients, tenantId: string, rootScopeId: string, m: TenantModel): Promise<void> {
  const scope = new Map([['/', rootScopeId]]);
  const typeIds = new Map<string, string>();
  const scopeTypes = (await c.scopes.listScopeTypes({ limit: 1000 })).scopeTypes;
  const typeId = (name: string) => scopeTypes.find((t) => t.name === name)!.id;
  for (const s of [...(m.scopes ?? [])].sort((a, b) => a.path.length - b.path.length)) {
    const created = await c.scopes.createScope({ parentId: scope.get(parentPath(s.path)!)!, name: s.path.slice(s.path.lastIndexOf('/') + 1), typeId: typeId(s.type) });
    scope.set(s.path, created.scope!.id);
  }
  const at = (s: string | undefined) => scope.get(s ?? '/')!;
  for (const t of m.resourceTypes ?? []) typeIds.set(t.key, (await c.types.createResourceType({ key: t.key, name: t.name ?? t.key, scopeId: at(t.scope) })).resourceType!.id);
  for (const e of m.resourceTypeHierarchy ?? []) await c.types.createResourceTypeEdge({ parentTypeId: typeIds.get(e.parent)!, childTypeId: typeIds.get(e.child)! });
  const permissionIds = new Map<string, string>();
  for (const p of m.permissions ?? []) {
    const [resourceType, action, resourcePattern] = p.key.split(':');
    permissionIds.set(p.key, (await c.permissions.createPermission({ scopeId: at(p.scope), resourceType, action, resourcePattern, name: p.name ?? '', description: p.description ?? '' })).permission!.id);
  }
  const roleIds = new Map<string, string>();
  for (const r of m.roles ?? []) {
    const id = (await c.roles.createRole({ scopeId: at(r.scope), key: r.key, name: r.name ?? r.key, description: r.description ?? '' })).role!.id;
    roleIds.set(r.key, id);
    for (const p of r.permissions ?? []) await c.roles.createRolePermission({ roleId: id, permissionId: permissionIds.get(p)! });
  }
  for (const o of m.scopeOverrides ?? []) {
    await c.overrides.createScopeOverride({ scopeId: at(o.scope), roleId: roleIds.get(o.role)!, mode: o.mode, permissionIds: (o.permissions ?? []).map((p) => permissionIds.get(p)!) });
  }
  const tagIds = new Map<string, string>();
  const groupIds = new Map<string, string>();
  for (const g of m.tagGroups ?? []) {
    const id = (await c.tags.createTagGroup({ key: g.key, scopeId: at(g.scope), name: g.name ?? g.key, description: g.description ?? '', maxAppliedPerTarget: g.maxAppliedPerTarget ?? 0 })).tagGroup!.id;
    groupIds.set(g.key, id);
    for (const t of g.tags ?? []) {
      tagIds.set(`${g.key}/${t.identifier}`, (await c.tags.createTag({ tagGroupId: id, identifier: t.identifier, label: t.label ?? '', scopeId: t.scope === undefined ? undefined : at(t.scope) })).tag!.id);
    }
  }
  const subjectIds = new Map<string, string>();
  for (const s of m.subjects ?? []) subjectIds.set(s.externalId, (await c.subjects.createSubject({ tenantId, externalId: s.externalId, type: s.type ?? 'user', metadata: s.metadata as never })).subject!.id);
  for (const ms of m.memberships ?? []) {
    const id = (await c.memberships.createMembership({ subjectId: subjectIds.get(ms.subject)!, scopeId: at(ms.scope) })).membership!.id;
    for (const r of ms.roles ?? []) await c.memberships.createRoleAssignment({ membershipId: id, roleId: roleIds.get(r)! });
  }
  const resourceIds = new Map<string, string>();
  for (const r of m.resources ?? []) {
    const created = await c.resources.createResource({
      resourceTypeId: typeIds.get(r.type)!, externalResourceId: r.externalId, ownerScopeId: at(r.scope), displayName: r.displayName, attributes: r.attributes as never,
    });
    resourceIds.set(`${r.type}/${r.externalId}`, created.resource!.id);
  }
  for (const e of m.resourceHierarchy ?? []) {
    await c.resources.createResourceEdge({ parentResourceId: resourceIds.get(e.parent)!, childResourceId: resourceIds.get(e.child)!, cascade: e.cascade, relationshipType: e.relationshipType });
  }
  for (const l of m.scopeLinks ?? []) await c.resources.createResourceScopeLink({ resourceId: resourceIds.get(l.resource)!, scopeId: at(l.scope), linkType: l.linkType, metadata: l.metadata as never });
  for (const g of m.ownershipGrants ?? []) await c.grants.createOwnershipGrant({ subjectId: subjectIds.get(g.subject)!, resourceId: resourceIds.get(g.resource)!, roleId: roleIds.get(g.role)! });
  for (const a of m.tagAssignments ?? []) {
    const [type, target] = Object.entries(a.target)[0] as ['resource' | 'subject' | 'scope', string];
    const targetId = type === 'resource' ? resourceIds.get(target)! : type === 'subject' ? subjectIds.get(target)! : at(target);
    await c.tags.createTagAssignment({ tagId: tagIds.get(`${a.tag.group}/${a.tag.identifier}`)!, targetType: type, targetId });
  }
  for (const b of m.tagBindings ?? []) await c.tags.createTagBinding({ tagId: tagIds.get(`${b.tag.group}/${b.tag.identifier}`)!, roleId: roleIds.get(b.role)!, scopeId: at(b.scope) });
  const collectionIds = new Map<string, string>();
  for (const col of m.collections ?? []) {
    collectionIds.set(col.name, (await c.policies.createResourceCollection({
      name: col.name, scopeId: at(col.scope), resourceTypeId: typeIds.get(col.resourceType)!, description: col.description ?? '', match: col.match as never,
    })).resourceCollection!.id);
  }
  for (const p of m.policies ?? []) {
    await c.policies.createResourcePolicy({
      scopeId: at(p.scope),
      target: p.target.resource !== undefined ? { kind: 'resource', resourceId: resourceIds.get(p.target.resource)! } : { kind: 'collection', collectionId: collectionIds.get(p.target.collection!)! },
      actions: p.actions, effect: p.effect, priority: p.priority ?? 0,
      subjectCondition: p.subjectCondition as never, contextCondition: p.contextCondition as never,
      validFrom: p.validFrom ? timestampFromDate(new Date(p.validFrom)) : undefined, validUntil: p.validUntil ? timestampFromDate(new Date(p.validUntil)) : undefined,
    });
  }
  for (const g of m.tagGroups ?? []) if (g.locked) await c.tags.updateTagGroup({ id: groupIds.get(g.key)!, isLocked: true });
}
