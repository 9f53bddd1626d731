/**
 * One import batch turned into rows, inside its write transaction (the tenant entered, so the
 * tenant's rows cannot change meanwhile): every reference by external id resolved against the
 * store and the lines before it, and every rule of the single-entity APIs checked (type
 * placement, uniqueness, one parent, no cycle, depth, role reach), each error naming the line.
 * The store is read a fixed number of times per batch, whatever its size.
 */
import { DomainError, constraint, invalid, missingReference } from '../../common/errors.js';
import { newId } from '../../common/ids.js';
import type { Row } from '../../store/kinds.js';
import { importReads, NO_COUNTS, type ImportCounts, type KeyedResource } from '../../store/imports.js';
import { MAX_DEPTH, scopeReads, type ScopeChain } from '../../store/scopes.js';
import type { WriteTx } from '../../store/write.js';
import { atLine, type Origin, type ParsedEntity, type ResourceKey, type SubjectKey } from './entities.js';

/** The rows of a batch by kind, in the order they are written (a row's references come first). */
export interface BatchRows {
  subject: Row[];
  resource: Row[];
  membership: Row[];
  roleAssignment: Row[];
  resourceEdge: Row[];
  resourceScopeLink: Row[];
  ownershipGrant: Row[];
}

export const WRITE_ORDER: readonly (keyof BatchRows)[] = ['subject', 'resource', 'membership', 'roleAssignment', 'resourceEdge', 'resourceScopeLink', 'ownershipGrant'];

export interface PlannedBatch {
  rows: BatchRows;
  counts: ImportCounts;
}

/** The tenant a batch writes and who writes it. */
export interface BatchTarget {
  tenantId: string;
  rootScopeId: string;
  /** The caller's subject id (`createdBy`). */
  by: string;
}

/** A map key of two or three strings (NUL cannot occur in stored text). */
const key = (a: string, b: string, c?: string) => (c === undefined ? `${a}\u0000${b}` : `${a}\u0000${b}\u0000${c}`);

/** A resource as the batch resolves it: stored, or created by an earlier line. */
interface KnownResource {
  id: string;
  typeId: string;
  ownerScopeId: string;
  /** The line that created it; undefined for a stored one. */
  line?: number;
}

/** A subject as the batch resolves it. */
interface KnownSubject {
  id: string;
  type: string;
  line?: number;
}

/**
 * Resolves and checks the batch's entities in order (a line may refer to what earlier lines
 * create) and returns its rows. Throws the first line's error: `missing_reference` for a name
 * that resolves to nothing, `already_exists` for a resource or subject the tenant holds,
 * `invalid_argument` for one an earlier line creates, `failed_precondition` for a broken rule.
 *
 * Without `careful`, the store is not asked whether the resources, memberships, scope links and
 * ownership grants the batch creates exist already: their unique constraints refuse them when
 * the rows are written, and the caller then plans the batch again with `careful`, which finds
 * the line at fault. An import's batches create new entities, so the common case reads less.
 */
export async function planBatch(tx: WriteTx, target: BatchTarget, entities: ParsedEntity[], now: Date, careful = true): Promise<PlannedBatch> {
  const { tenantId, rootScopeId, by } = target;
  const reads = importReads(tx);
  const has = (kind: ParsedEntity['kind']) => entities.some((e) => e.kind === kind);

  // --- what the store holds of what the batch names: a fixed number of queries -------------------
  const types = new Map((await reads.resourceTypes(tenantId)).map((t) => [t.key, t]));
  const resourceKeys = new Map<string, { typeId: string; externalId: string }>();
  const subjectIds = new Set<string>();
  const roleKeys = new Set<string>();
  const scopeIds = new Set<string>([rootScopeId]);
  const nameResource = (r: ResourceKey) => {
    const t = types.get(r.type);
    if (t) resourceKeys.set(key(t.id, r.externalId), { typeId: t.id, externalId: r.externalId });
  };
  for (const e of entities) {
    switch (e.kind) {
      case 'resource': if (careful) nameResource(e); if (e.scopeId) scopeIds.add(e.scopeId); break;
      case 'subject': subjectIds.add(e.externalId); break;
      case 'resourceEdge': nameResource(e.parent); nameResource(e.child); break;
      case 'scopeLink': nameResource(e.resource); scopeIds.add(e.scopeId); break;
      case 'ownershipGrant': nameResource(e.resource); subjectIds.add(e.subject.externalId); roleKeys.add(e.role); break;
      case 'membership': subjectIds.add(e.subject.externalId); if (e.scopeId) scopeIds.add(e.scopeId); e.roles.forEach((r) => roleKeys.add(r)); break;
    }
  }
  const resources = new Map<string, KnownResource>();
  const stored: KeyedResource[] = await reads.resourcesByKey(tenantId, [...resourceKeys.values()]);
  for (const r of stored) {
    resources.set(key(r.typeId, r.externalId), { id: r.id, typeId: r.typeId, ownerScopeId: r.ownerScopeId });
    scopeIds.add(r.ownerScopeId);
  }
  const subjects = new Map<string, KnownSubject[]>();
  for (const s of await reads.subjectsByExternalId(tenantId, [...subjectIds])) {
    const list = subjects.get(s.externalId) ?? [];
    list.push({ id: s.id, type: s.type });
    subjects.set(s.externalId, list);
  }
  const chains: Map<string, ScopeChain> = await scopeReads(tx).chains(scopeIds);
  const roles = new Map<string, Map<string, string>>(); // role key -> scope id -> role id
  for (const r of await reads.rolesWithKeys(tenantId, [...roleKeys])) {
    const at = roles.get(r.key) ?? new Map<string, string>();
    at.set(r.scopeId, r.id);
    roles.set(r.key, at);
  }
  const storedSubjectIds = [...subjects.values()].flat().map((s) => s.id);
  const storedResourceIds = stored.map((r) => r.id);
  const memberships = new Set<string>();
  if (careful && has('membership')) for (const m of await reads.membershipsOf(storedSubjectIds)) memberships.add(key(m.subjectId, m.scopeId));
  const grants = new Set<string>();
  if (careful && has('ownershipGrant')) {
    for (const g of await reads.grantsBetween(grantPairs(entities, subjects, types, resources))) grants.add(key(g.subjectId, g.resourceId, g.roleId));
  }
  const links = new Set<string>();
  if (careful && has('scopeLink')) for (const l of await reads.scopeLinksOf(storedResourceIds)) links.add(key(l.resourceId, l.scopeId, l.linkType));
  const hierarchy = has('resourceEdge') ? await Hierarchy.load(tx, tenantId, storedEnds(entities, types, resources)) : undefined;

  // --- the lines, in order ------------------------------------------------------------------------
  const rows: BatchRows = { subject: [], resource: [], membership: [], roleAssignment: [], resourceEdge: [], resourceScopeLink: [], ownershipGrant: [] };
  const counts: ImportCounts = { ...NO_COUNTS };
  // Rows are object literals with the same keys in the same order (no spread of a common base):
  // one shape per kind, built thousands of times per batch.

  const scopeIn = (id: string, field: string): ScopeChain => {
    const chain = chains.get(id);
    if (!chain || chain.tenantId !== tenantId) throw new DomainError('missing_reference', `${field}: scope ${id} does not exist in tenant ${tenantId}`, field);
    return chain;
  };
  const typeOf = (ref: ResourceKey, field: string) => {
    const t = types.get(ref.type);
    if (!t) throw missingReference(`${field}.type`, 'resource type', `"${ref.type}"`);
    return t;
  };
  const resourceOf = (ref: ResourceKey, field: string): KnownResource => {
    const t = typeOf(ref, field);
    const r = resources.get(key(t.id, ref.externalId));
    if (!r) throw missingReference(field, 'resource', `${ref.type}/${ref.externalId}`);
    return r;
  };
  const subjectOf = (ref: SubjectKey, field: string): KnownSubject => {
    const all = subjects.get(ref.externalId) ?? [];
    const found = ref.type === undefined ? all : all.filter((s) => s.type === ref.type);
    if (found.length === 0) throw missingReference(field, 'subject', `with external id "${ref.externalId}"${ref.type ? ` and type ${ref.type}` : ''}`);
    if (found.length > 1) {
      throw constraint(`${found.length} subjects have external id "${ref.externalId}"${ref.type ? ` and type ${ref.type}` : ''}: the reference is ambiguous${ref.type ? '' : ' (name the subject\'s type)'}`, field);
    }
    return found[0];
  };
  /** The nearest role of that key at the scope or an ancestor. */
  const roleAt = (roleKey: string, scopeId: string, field: string): string => {
    const at = roles.get(roleKey);
    const chain = chains.get(scopeId)?.ids ?? [scopeId];
    for (const s of chain) {
      const id = at?.get(s);
      if (id !== undefined) return id;
    }
    throw missingReference(field, 'role', `"${roleKey}" at scope ${scopeId} or an ancestor of it`);
  };

  const plan = (e: ParsedEntity) => {
    const p = e.path;
    switch (e.kind) {
      case 'resource': {
        const t = typeOf(e, p);
        const ownerScopeId = e.scopeId ?? rootScopeId;
        const chain = scopeIn(ownerScopeId, `${p}.scopeId`);
        if (!chain.ids.includes(t.scopeId)) {
          throw constraint(`resource type "${t.key}" is defined at scope ${t.scopeId}, which is neither ${ownerScopeId} nor one of its ancestors`, `${p}.type`);
        }
        const k = key(t.id, e.externalId);
        const held = resources.get(k);
        if (held) {
          const what = `a resource of type "${e.type}" with external id "${e.externalId}"`;
          if (held.line === undefined) throw new DomainError('already_exists', `${p}.externalId: ${what} already exists (${held.id})`, `${p}.externalId`);
          throw invalid(`${p}.externalId`, `${what} is also created by line ${held.line}`);
        }
        const row = {
          id: newId('resource'), tenantId, createdAt: now, createdBy: by,
          resourceTypeId: t.id, ownerScopeId, externalResourceId: e.externalId, displayName: e.displayName, attributes: e.attributes,
        };
        resources.set(k, { id: row.id, typeId: t.id, ownerScopeId, line: e.line });
        rows.resource.push(row);
        counts.resources++;
        return;
      }
      case 'subject': {
        const held = subjects.get(e.externalId)?.[0];
        if (held) {
          const what = `a subject with external id "${e.externalId}"`;
          if (held.line === undefined) throw new DomainError('already_exists', `${p}.externalId: ${what} already exists (${held.id})`, `${p}.externalId`);
          throw invalid(`${p}.externalId`, `${what} is also created by line ${held.line}`);
        }
        const row = { id: newId('subject'), tenantId, createdAt: now, createdBy: by, type: e.type, externalId: e.externalId, metadata: e.metadata };
        subjects.set(e.externalId, [{ id: row.id, type: e.type, line: e.line }]);
        rows.subject.push(row);
        counts.subjects++;
        return;
      }
      case 'resourceEdge': {
        const parent = resourceOf(e.parent, `${p}.parent`);
        const child = resourceOf(e.child, `${p}.child`);
        hierarchy!.check(parent, child, `${p}.child`);
        rows.resourceEdge.push({
          id: newId('resource_edge'), tenantId, createdAt: now, createdBy: by,
          parentResourceId: parent.id, childResourceId: child.id, relationshipType: e.relationshipType, cascade: e.cascade,
        });
        counts.resourceEdges++;
        return;
      }
      case 'scopeLink': {
        const resource = resourceOf(e.resource, `${p}.resource`);
        scopeIn(e.scopeId, `${p}.scopeId`);
        const k = key(resource.id, e.scopeId, e.linkType);
        if (links.has(k)) throw new DomainError('already_exists', `${p}.scopeId: a ${e.linkType} link of resource ${resource.id} to scope ${e.scopeId} already exists`, `${p}.scopeId`);
        links.add(k);
        rows.resourceScopeLink.push({
          id: newId('rsl'), tenantId, createdAt: now, createdBy: by, resourceId: resource.id, scopeId: e.scopeId, linkType: e.linkType, metadata: e.metadata,
        });
        counts.scopeLinks++;
        return;
      }
      case 'ownershipGrant': {
        const subject = subjectOf(e.subject, `${p}.subject`);
        const resource = resourceOf(e.resource, `${p}.resource`);
        const roleId = roleAt(e.role, resource.ownerScopeId, `${p}.role`);
        const k = key(subject.id, resource.id, roleId);
        if (grants.has(k)) throw new DomainError('already_exists', `${p}.role: an ownership grant of resource ${resource.id} to subject ${subject.id} with role ${roleId} already exists`, `${p}.role`);
        grants.add(k);
        rows.ownershipGrant.push({ id: newId('ownership_grant'), tenantId, createdAt: now, createdBy: by, subjectId: subject.id, resourceId: resource.id, roleId });
        counts.ownershipGrants++;
        return;
      }
      case 'membership': {
        const subject = subjectOf(e.subject, `${p}.subject`);
        const scopeId = e.scopeId ?? rootScopeId;
        scopeIn(scopeId, `${p}.scopeId`);
        const k = key(subject.id, scopeId);
        if (memberships.has(k)) throw new DomainError('already_exists', `${p}.scopeId: a membership of subject ${subject.id} in scope ${scopeId} already exists`, `${p}.scopeId`);
        const roleIds = e.roles.map((r, i) => roleAt(r, scopeId, `${p}.roles[${i}]`));
        memberships.add(k);
        const membership = { id: newId('membership'), tenantId, createdAt: now, createdBy: by, subjectId: subject.id, scopeId };
        rows.membership.push(membership);
        for (const roleId of roleIds) {
          rows.roleAssignment.push({ id: newId('role_assignment'), tenantId, createdAt: now, createdBy: by, membershipId: membership.id, roleId });
        }
        counts.memberships++;
        counts.roleAssignments += roleIds.length;
        return;
      }
    }
  };
  for (const e of entities) {
    try {
      plan(e);
    } catch (err) {
      throw atLine(err, (e as Origin).line);
    }
  }
  return { rows, counts };
}

/** The (subject, resource) pairs of the batch's grant lines whose subject and resource are stored. */
function grantPairs(
  entities: ParsedEntity[], subjects: Map<string, KnownSubject[]>, types: Map<string, { id: string }>, resources: Map<string, KnownResource>,
): { subjectId: string; resourceId: string }[] {
  const out: { subjectId: string; resourceId: string }[] = [];
  for (const e of entities) {
    if (e.kind !== 'ownershipGrant') continue;
    const t = types.get(e.resource.type);
    const r = t && resources.get(key(t.id, e.resource.externalId));
    if (!r) continue;
    for (const s of subjects.get(e.subject.externalId) ?? []) out.push({ subjectId: s.id, resourceId: r.id });
  }
  return out;
}

/** The stored resources the batch's edge lines name: as either end, and as children. */
function storedEnds(entities: ParsedEntity[], types: Map<string, { id: string }>, resources: Map<string, KnownResource>): { ends: string[]; children: string[] } {
  const ends = new Set<string>();
  const children = new Set<string>();
  const id = (r: ResourceKey) => {
    const t = types.get(r.type);
    return t && resources.get(key(t.id, r.externalId))?.id;
  };
  for (const e of entities) {
    if (e.kind !== 'resourceEdge') continue;
    const parent = id(e.parent);
    const child = id(e.child);
    if (parent) ends.add(parent);
    if (child) ends.add(child), children.add(child);
  }
  return { ends: [...ends], children: [...children] };
}

/**
 * The resource hierarchy around a batch's edges: the stored edges above every stored resource its
 * edges name and below those named as children (what the depth of an edge's subtree depends on), the type pairs the tenant allows, and the batch's own edges as they are
 * added, so that each edge is checked as if the lines before it were written.
 */
class Hierarchy {
  private readonly parentOf = new Map<string, string>();
  private readonly childrenOf = new Map<string, string[]>();

  private constructor(private readonly allowed: Set<string>) {}

  static async load(tx: WriteTx, tenantId: string, stored: { ends: string[]; children: string[] }): Promise<Hierarchy> {
    const reads = importReads(tx);
    const h = new Hierarchy(new Set((await reads.resourceTypeEdges(tenantId)).map((e) => key(e.parentTypeId, e.childTypeId))));
    for (const e of await reads.edgesAbove(stored.ends)) h.link(e.parent, e.child);
    for (const e of await reads.edgesBelow(stored.children)) h.link(e.parent, e.child);
    return h;
  }

  private link(parent: string, child: string) {
    if (this.parentOf.has(child)) return;
    this.parentOf.set(child, parent);
    const kids = this.childrenOf.get(parent) ?? [];
    kids.push(child);
    this.childrenOf.set(parent, kids);
  }

  /** Levels of the subtree under `root` (1 for a leaf), counted up to MAX_DEPTH + 1. */
  private height(root: string): number {
    let level = [root];
    let h = 0;
    while (level.length > 0 && h <= MAX_DEPTH) {
      h++;
      level = level.flatMap((n) => this.childrenOf.get(n) ?? []);
    }
    return h;
  }

  /** Checks the edge parent → child (one parent, allowed types, no cycle, depth) and adds it. */
  check(parent: KnownResource, child: KnownResource, field: string): void {
    if (parent.id === child.id) throw constraint('a resource cannot be its own parent', field);
    const current = this.parentOf.get(child.id);
    if (current !== undefined) throw constraint(`resource ${child.id} already has parent ${current}; a resource has at most one parent`, field);
    if (!this.allowed.has(key(parent.typeId, child.typeId))) {
      throw constraint(`the resource type hierarchy does not allow type ${parent.typeId} to contain type ${child.typeId}`, field);
    }
    let above = 0;
    for (let cur: string | undefined = parent.id; cur !== undefined && above <= MAX_DEPTH; cur = this.parentOf.get(cur)) {
      if (cur === child.id) throw constraint(`making ${parent.id} the parent of ${child.id} would create a cycle`, field);
      above++;
    }
    const depth = above + this.height(child.id);
    if (depth > MAX_DEPTH) throw constraint(`the edge would make the hierarchy ${depth} levels deep; at most ${MAX_DEPTH} are allowed`, field);
    this.link(parent.id, child.id);
  }
}
