/**
 * LookupResources against its definition, on the differential generator's tenants: the pages
 * of a listing, concatenated, are exactly the tenant's resources (of the type asked) that
 * evaluate allows, by id, each once, under every gate mode, whether the listing visits the
 * query's candidates or walks every resource; the candidates hold every resource allowed; and
 * the reference evaluator agrees. Half the tenants are made boundable (no pattern `*`, no allow
 * policy on a collection, deeper hierarchies) so both paths run often.
 * Seeded like differential.test.ts (rerun with ENGINE_PROP_SEED=<seed>).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AmbiguousSubjectError, ScopeNotFoundError } from './errors.js';
import { evaluate, type EvaluateRequest, type GateMode } from './evaluate.js';
import { CACHED_LISTINGS, cachedCandidates, lookupCandidates } from './lookup-candidates.js';
import { lookupResources, type LookupOptions, type LookupResourcesQuery } from './lookup.js';
import type { Change, Resource, ResourceEdge, TenantSnapshot } from './model.js';
import { TenantIndex } from './tenant-index/mod.js';
import { genRequest, genTenant, int, chance, pick, type Rng } from './testdata/generate.js';
import { RefScopeNotFound, referenceEvaluate } from './testdata/reference.js';
import { mulberry32 } from '../../test/seeded-random.js';

const FIXED_SEED = 20250101;
const envSeed = process.env.ENGINE_PROP_SEED ? Number(process.env.ENGINE_PROP_SEED) : undefined;
const seeds: [string, number][] = envSeed !== undefined ? [['env', envSeed]] : [['fixed', FIXED_SEED], ['random', (Math.random() * 2 ** 31) | 0]];

const TENANTS = 600;
const QUERIES = 6;
const GATES: readonly GateMode[] = ['off', 'links-fallback', 'strict'];

/** More resources than the generator makes (it makes up to 7): copies under new ids, so listings take several pages. */
function withCopies(r: Rng, t: TenantSnapshot): TenantSnapshot {
  const resources = t.rows.resource ?? [];
  if (resources.length === 0 || !chance(r, 0.5)) return t;
  const copies: Resource[] = [];
  const n = int(r, 1, 25);
  for (let i = 0; i < n; i++) {
    const base = pick(r, resources);
    copies.push({ ...base, id: `${base.id}_${String.fromCharCode(97 + (i % 26))}${i}` });
  }
  return { ...t, rows: { ...t.rows, resource: [...copies, ...resources] } };
}

/**
 * A tenant whose listings can be bounded (sometimes): permissions with pattern `*` renamed to a
 * resource's id or external id, allow policies on collections dropped, and the copies hung under
 * other resources, so hierarchies run deeper than the generator's.
 */
function boundable(r: Rng, t: TenantSnapshot): TenantSnapshot {
  if (!chance(r, 0.5)) return t;
  const resources = t.rows.resource ?? [];
  const names = [...resources.map((x) => x.id), ...resources.map((x) => x.externalResourceId), 'zzz'];
  const permission = (t.rows.permission ?? []).map((p) => (p.resourcePattern === '*' && !chance(r, 0.05) ? { ...p, resourcePattern: pick(r, names) } : p));
  const policy = (t.rows.policy ?? []).filter((p) => p.target.kind !== 'collection' || p.effect === 'deny' || chance(r, 0.05));
  const edges: ResourceEdge[] = [...(t.rows.resource_edge ?? [])];
  resources.forEach((child, i) => {
    if (i === 0 || !child.id.includes('_', 'resource_'.length) || !chance(r, 0.7)) return;
    edges.push({ id: `resource_edge_copy_${i}`, parentResourceId: resources[int(r, 0, i - 1)].id, childResourceId: child.id, cascade: chance(r, 0.85) ? 'inherit' : 'none' });
  });
  return { ...t, rows: { ...t.rows, permission, policy, resource_edge: edges } };
}

/** Every page of a listing, with each page's `last`. */
function allPages(index: TenantIndex, q: Omit<LookupResourcesQuery, 'after'>, options: LookupOptions): { ids: string[]; pages: number; via: string } {
  const ids: string[] = [];
  let after: string | undefined;
  let pages = 0;
  let via = '';
  for (;;) {
    const page = lookupResources(index, { ...q, after }, options);
    pages++;
    if (via === '') via = page.via;
    expect(page.via, 'every page of a listing visits the same way').toBe(via);
    expect(page.visited).toBeLessThanOrEqual(options.maxVisits ?? Infinity);
    expect(page.resources.length).toBeLessThanOrEqual(q.pageSize);
    expect(page.revision).toBe(index.revision);
    ids.push(...page.resources.map((x) => x.id));
    if (page.last === undefined) return { ids, pages, via };
    // A page with more to follow is full, unless its visit budget ended it.
    if (options.maxVisits === undefined) expect(page.resources.length, 'a page with more to follow is full').toBe(q.pageSize);
    if (page.resources.length === q.pageSize) expect(page.last).toBe(page.resources[page.resources.length - 1].id);
    expect(after === undefined || page.last > after, 'the cursor moves forward').toBe(true);
    after = page.last;
    if (pages > 100_000) throw new Error('listing does not end');
  }
}

/** The definition: every resource of the tenant (of the type key) that evaluate allows, by id. */
function expected(t: TenantSnapshot, index: TenantIndex, q: Omit<LookupResourcesQuery, 'after' | 'pageSize'>, options: { now: Date; gate: GateMode }): string[] {
  const typeKey = new Map((t.rows.resource_type ?? []).map((x) => [x.id, x.key]));
  return (t.rows.resource ?? [])
    .filter((r) => q.resourceType === undefined || typeKey.get(r.resourceTypeId) === q.resourceType)
    .filter((r) => evaluate(index, { actor: q.actor, scopeId: q.scopeId, action: q.action, resource: { resourceId: r.id }, context: q.context }, options).allowed)
    .map((r) => r.id)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

let listings = 0;
let nonEmpty = 0;
let multiPage = 0;
let byCandidates = 0;
let byCandidatesNonEmpty = 0;
let walked = 0;

describe.each(seeds)('lookupResources equals {r : evaluate(r).allowed} (%s seed %i)', (_label, seed) => {
  it('on generated tenants, subjects, scopes, actions, types and page sizes, under every gate mode', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), (tenantSeed) => {
        const r = mulberry32(tenantSeed);
        const t = boundable(r, withCopies(r, genTenant(r)));
        const index = TenantIndex.fromSnapshot(t);
        for (let i = 0; i < QUERIES; i++) {
          const c = genRequest(r, t);
          const byExternal = chance(r, 0.25);
          const actor: EvaluateRequest['actor'] = byExternal ? { externalId: `ext-${c.request.actor.subjectId}`, subjectType: c.request.actor.subjectType } : c.request.actor;
          const q = {
            actor, scopeId: c.request.scopeId, action: c.request.action, context: c.request.context,
            resourceType: chance(r, 0.4) ? pick(r, ['doc', 'folder', 'image', 'nope', 'resource_type_doc']) : undefined,
            pageSize: pick(r, [1, 2, 3, 5, 100]),
          };
          for (const gate of GATES) {
            const options = { now: c.options.now, gate };
            const where = `tenant seed ${tenantSeed}, query ${i}, gate ${gate}: ${JSON.stringify(q)}`;
            if (index.scope(q.scopeId) === undefined || index.scopePath(q.scopeId).ids.length === 0) {
              expect(() => lookupResources(index, q, options), where).toThrow(ScopeNotFoundError);
              continue;
            }
            const want = expected(t, index, q, options);
            const got = allPages(index, q, options);
            expect(got.ids, where).toEqual(want);
            // The walk over every resource of the type lists the same.
            expect(allPages(index, q, { ...options, walk: true }).ids, `${where}, walked`).toEqual(want);
            // The candidates, when bounded, hold every resource allowed (each once, in id order).
            const subject = index.subjectNode(c.request.actor.subjectId as string);
            const candidates = subject?.row === undefined ? undefined : lookupCandidates(index, subject, index.scopePath(q.scopeId), q.action, q.resourceType);
            const typed = (t.rows.resource ?? []).filter((x) => q.resourceType === undefined || (t.rows.resource_type ?? []).some((y) => y.id === x.resourceTypeId && y.key === q.resourceType)).length;
            if (candidates !== undefined) {
              const ids = candidates.map((n) => index.resourceNodes.idOf(n));
              expect(ids, `${where}, candidates in id order`).toEqual([...new Set(ids)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
              expect(want.filter((id) => !ids.includes(id)), `${where}, allowed but not a candidate`).toEqual([]);
            }
            if (want.length > 0) expect(got.via, where).toBe(candidates === undefined ? 'walk' : 'candidates');
            // With a visit budget of one decision, every page visits one resource (so there is a
            // page per resource visited: per candidate, or per resource of the type), ends short,
            // and the listing is the same.
            const oneByOne = allPages(index, q, { ...options, maxVisits: 1 });
            expect(oneByOne.ids, `${where}, one visit a page`).toEqual(want);
            // A subject allowed anything is walked (an unknown one is not): one page per resource visited.
            if (want.length > 0) expect(oneByOne.pages, `${where}, pages of one visit`).toBe(candidates === undefined ? typed : candidates.length);
            // The reference evaluator, written apart from the engine, allows the same set.
            const typeKey = new Map((t.rows.resource_type ?? []).map((x) => [x.id, x.key]));
            const byReference = (t.rows.resource ?? [])
              .filter((x) => q.resourceType === undefined || typeKey.get(x.resourceTypeId) === q.resourceType)
              .filter((x) => {
                try {
                  return referenceEvaluate(t, { actor: q.actor, scopeId: q.scopeId, action: q.action, resource: { resourceId: x.id }, context: q.context }, options).allowed;
                } catch (e) {
                  if (e instanceof RefScopeNotFound) throw new Error(`${where}: the reference lacks a scope the engine has`);
                  throw e;
                }
              })
              .map((x) => x.id)
              .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
            expect(got.ids, `${where} (reference)`).toEqual(byReference);
            listings++;
            if (want.length > 0) nonEmpty++;
            if (got.via === 'walk') walked++;
            else if (want.length > 0) byCandidatesNonEmpty++;
            if (candidates !== undefined) byCandidates++;
            if (got.pages > 1 && want.length > 1) multiPage++;
          }
        }
      }),
      { seed, numRuns: TENANTS },
    );
    expect(listings).toBeGreaterThan(5000);
    expect(nonEmpty).toBeGreaterThan(500);
    expect(multiPage).toBeGreaterThan(200);
    // Both ways of visiting run often (one seed: about 8,000 bounded, 1,500 of them non-empty, and 900 walked).
    expect(byCandidates).toBeGreaterThan(3000);
    expect(byCandidatesNonEmpty).toBeGreaterThan(600);
    expect(walked).toBeGreaterThan(400);
  });
});

describe('lookupResources', () => {
  const t = genTenant(mulberry32(7));
  const resources = Array.from({ length: 30 }, (_, i) => ({
    id: `resource_${String(29 - i).padStart(2, '0')}`, tenantId: 'tenant_1', resourceTypeId: i % 3 === 0 ? 'resource_type_folder' : 'resource_type_doc',
    ownerScopeId: 'scope_0', externalResourceId: `x${i}`, createdAt: '2025-01-01T00:00:00.000Z', createdBy: 'subject_a',
  })) as Resource[];
  const snapshot: TenantSnapshot = {
    revision: 1,
    rows: {
      scope: [{ id: 'scope_0', tenantId: 'tenant_1', typeId: 'scope_type_x', name: 'root', parentId: null }],
      resource_type: t.rows.resource_type,
      subject: [{ id: 'subject_a', type: 'user', externalId: 'a', metadata: {} }, { id: 'subject_b', type: 'user', externalId: 'a', metadata: {} }],
      role: [{ id: 'role_r', scopeId: 'scope_0', key: 'r', name: 'r' }],
      permission: [{ id: 'permission_p', scopeId: 'scope_0', action: 'read', resourceType: 'doc', resourcePattern: '*', key: 'doc:read:*' }],
      role_permission: [{ id: 'role_permission_1', roleId: 'role_r', permissionId: 'permission_p' }],
      membership: [{ id: 'membership_1', subjectId: 'subject_a', scopeId: 'scope_0' }],
      role_assignment: [{ id: 'role_assignment_1', membershipId: 'membership_1', roleId: 'role_r' }],
      resource: resources,
    },
  } as TenantSnapshot;
  const options = { now: new Date('2025-01-01T00:00:00Z'), gate: 'off' as const };
  const docs = resources.filter((r) => r.resourceTypeId === 'resource_type_doc').map((r) => r.id).sort();
  const q = { actor: { subjectId: 'subject_a' }, scopeId: 'scope_0', action: 'read', pageSize: 7 };

  it('pages in id order and follows the index after a change (the order is rebuilt)', () => {
    const index = TenantIndex.fromSnapshot(snapshot);
    expect(allPages(index, q, options).ids).toEqual(docs);
    expect(allPages(index, { ...q, resourceType: 'doc' }, options).ids).toEqual(docs);
    expect(allPages(index, { ...q, resourceType: 'folder' }, options).ids).toEqual([]);
    // Deleted, added, and retyped resources are seen at the next revision.
    const added = { ...resources[1], id: 'resource_15a', externalResourceId: 'new' };
    const retyped = { ...resources.find((r) => r.resourceTypeId === 'resource_type_folder')!, resourceTypeId: 'resource_type_doc' };
    index.apply(2, [
      { op: 'delete', kind: 'resource', id: docs[0] },
      { op: 'upsert', kind: 'resource', id: added.id, row: added },
      { op: 'upsert', kind: 'resource', id: retyped.id, row: retyped },
    ]);
    const now = [...docs.slice(1), added.id, retyped.id].sort();
    expect(allPages(index, q, options).ids).toEqual(now);
    expect(allPages(index, { ...q, resourceType: 'doc' }, options).ids).toEqual(now);
  });

  it('starts after the cursor id, whether or not that id still exists', () => {
    const index = TenantIndex.fromSnapshot(snapshot);
    expect(lookupResources(index, { ...q, after: docs[3] }, options).resources.map((r) => r.id)).toEqual(docs.slice(4, 11));
    expect(lookupResources(index, { ...q, after: `${docs[3]}~` }, options).resources.map((r) => r.id)).toEqual(docs.slice(4, 11));
    expect(lookupResources(index, { ...q, after: 'resource_99' }, options)).toMatchObject({ resources: [], revision: 1 });
  });

  it('lists each resource with only the fields the response carries (no row: no createdAt, no attributes)', () => {
    const index = TenantIndex.fromSnapshot(snapshot);
    const listed = lookupResources(index, q, options).resources;
    expect(listed.length).toBe(7);
    for (const r of listed) {
      const row = resources.find((x) => x.id === r.id)!;
      expect(r).toStrictEqual({ id: row.id, externalResourceId: row.externalResourceId, resourceTypeId: 'resource_type_doc', resourceType: 'doc', ownerScopeId: 'scope_0' });
    }
  });

  it('lists nothing for an unknown subject or another type, throws for an unknown scope or an ambiguous external id', () => {
    const index = TenantIndex.fromSnapshot(snapshot);
    expect(lookupResources(index, { ...q, actor: { subjectId: 'subject_zz' } }, options).resources).toEqual([]);
    expect(lookupResources(index, { ...q, actor: { subjectId: 'subject_a', subjectType: 'agent' } }, options).resources).toEqual([]);
    expect(lookupResources(index, { ...q, actor: { externalId: 'a', subjectType: 'agent' } }, options).resources).toEqual([]);
    expect(() => lookupResources(index, { ...q, scopeId: 'scope_zz' }, options)).toThrow(ScopeNotFoundError);
    expect(() => lookupResources(index, { ...q, actor: { externalId: 'a' } }, options)).toThrow(AmbiguousSubjectError);
    expect(() => lookupResources(index, { ...q, pageSize: 0 }, options)).toThrow(RangeError);
  });
});

describe.each(seeds)('the id order follows applied revisions (%s seed %i)', (_label, seed) => {
  it('equals a sort of the rows after random creates, deletes, retypes and type changes', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), (tenantSeed) => {
        const r = mulberry32(tenantSeed);
        const t = withCopies(r, genTenant(r));
        const index = TenantIndex.fromSnapshot(t);
        const rows = new Map((t.rows.resource ?? []).map((x) => [x.id, x]));
        const types = new Map((t.rows.resource_type ?? []).map((x) => [x.id, x]));
        const keys = ['doc', 'folder', 'image', 'nope'];
        const typeIds = ['resource_type_doc', 'resource_type_folder', 'resource_type_doc2'];
        const check = (where: string) => {
          for (const key of [undefined, ...keys]) {
            const want = [...rows.values()]
              .filter((x) => key === undefined || types.get(x.resourceTypeId)?.key === key)
              .map((x) => x.id)
              .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
            expect(index.resourcesInIdOrder(key).map((n) => index.resourceNodes.idOf(n)), `${where}, key ${key}`).toEqual(want);
          }
        };
        // Only some keys asked before the changes: the others are first built after them.
        if (chance(r, 0.7)) index.resourcesInIdOrder();
        if (chance(r, 0.5)) index.resourcesInIdOrder('doc');
        for (let revision = t.revision + 1; revision < t.revision + 6; revision++) {
          const changes: Change[] = [];
          const n = chance(r, 0.1) ? 300 : int(r, 1, 4);
          for (let i = 0; i < n; i++) {
            const k = int(r, 0, 9);
            if (k <= 2 && rows.size > 0) {
              const id = pick(r, [...rows.keys()]);
              rows.delete(id);
              changes.push({ op: 'delete', kind: 'resource', id });
            } else if (k <= 7) {
              const id = chance(r, 0.5) && rows.size > 0 ? pick(r, [...rows.keys()]) : `resource_n${int(r, 0, 400)}`;
              const row = { id, tenantId: 'tenant_1', resourceTypeId: pick(r, typeIds), ownerScopeId: 'scope_0', externalResourceId: 'e1', createdAt: '2025-01-01T00:00:00.000Z', createdBy: 'subject_a' } as Resource;
              rows.set(id, row);
              changes.push({ op: 'upsert', kind: 'resource', id, row });
            } else if (k === 8) {
              const id = pick(r, typeIds);
              const row = { id, key: pick(r, keys), scopeId: 'scope_0', name: id };
              types.set(id, row);
              changes.push({ op: 'upsert', kind: 'resource_type', id, row });
            } else {
              const id = pick(r, typeIds);
              types.delete(id);
              changes.push({ op: 'delete', kind: 'resource_type', id });
            }
          }
          index.apply(revision, changes);
          check(`tenant seed ${tenantSeed}, revision ${revision}`);
        }
      }),
      { seed, numRuns: 200 },
    );
  });
});

describe('lookupResources visits only the candidates, one source of an allow at a time', () => {
  const options = { now: new Date('2025-06-01T00:00:00Z'), gate: 'off' as const };
  const res = (id: string, ext = `x-${id}`, type = 'resource_type_doc'): Resource =>
    ({ id, resourceTypeId: type, ownerScopeId: 'scope_0', externalResourceId: ext, createdAt: '2025-01-01T00:00:00.000Z', createdBy: 'subject_s' }) as Resource;
  const edge = (parent: string, child: string, cascade: 'inherit' | 'none' = 'inherit'): ResourceEdge => ({ id: `edge_${parent}_${child}`, parentResourceId: parent, childResourceId: child, cascade });
  const perm = (id: string, pattern: string, action = 'read', type = 'doc') => ({ id, scopeId: 'scope_0', action, resourceType: type, resourcePattern: pattern, key: `${type}:${action}:${pattern}` });
  const FILLER = 1000;
  // Each resource the subject may read is allowed by exactly one source, so dropping a source loses it.
  const allowed = [
    'resource_named', // a role permission naming its id
    'resource_ext_1', 'resource_ext_2', // a role permission naming their external id
    'resource_child', 'resource_grandchild', // below resource_folder, which a role permission names
    'resource_owned', // an ownership grant
    'resource_gchild', // below a granted resource (the grant's role covers folders only)
    'resource_policy', // a direct allow policy
    'resource_added', // a permission an `add` override gives at scope_1
    'resource_tagged', // a role bound to a tag the subject carries
  ].sort();
  const snapshot = (): TenantSnapshot => ({
    revision: 1,
    rows: {
      scope: [{ id: 'scope_0', tenantId: 't', typeId: 'st', name: 'root', parentId: null }, { id: 'scope_1', tenantId: 't', typeId: 'st', name: 'one', parentId: 'scope_0' }],
      resource_type: [{ id: 'resource_type_doc', key: 'doc', scopeId: 'scope_0', name: 'Doc' }, { id: 'resource_type_folder', key: 'folder', scopeId: 'scope_0', name: 'Folder' }],
      subject: [{ id: 'subject_s', type: 'user', externalId: 's', metadata: {} }],
      role: [
        { id: 'role_named', scopeId: 'scope_0', key: 'named', name: 'named' },
        { id: 'role_owner', scopeId: 'scope_0', key: 'owner', name: 'owner' },
        { id: 'role_folder_owner', scopeId: 'scope_0', key: 'fo', name: 'fo' },
        { id: 'role_tag', scopeId: 'scope_0', key: 'tag', name: 'tag' },
      ],
      permission: [
        perm('permission_named', 'resource_named'), perm('permission_ext', 'x-shared'), perm('permission_folder', 'resource_folder'),
        perm('permission_any', '*', 'read', 'doc'), perm('permission_added', 'resource_added'),
        perm('permission_tagged', 'resource_tagged'), perm('permission_write', 'resource_write_only', 'write'),
      ],
      role_permission: [
        { id: 'rp_1', roleId: 'role_named', permissionId: 'permission_named' }, { id: 'rp_2', roleId: 'role_named', permissionId: 'permission_ext' },
        { id: 'rp_3', roleId: 'role_named', permissionId: 'permission_folder' }, { id: 'rp_4', roleId: 'role_named', permissionId: 'permission_write' },
        { id: 'rp_5', roleId: 'role_owner', permissionId: 'permission_any' }, { id: 'rp_6', roleId: 'role_tag', permissionId: 'permission_tagged' },
        // Docs only: granted on a folder it covers not the folder, but the folder's doc children inherit it.
        { id: 'rp_7', roleId: 'role_folder_owner', permissionId: 'permission_any' },
      ],
      membership: [{ id: 'membership_1', subjectId: 'subject_s', scopeId: 'scope_0' }],
      role_assignment: [{ id: 'ra_1', membershipId: 'membership_1', roleId: 'role_named' }],
      scope_override: [{ id: 'override_1', scopeId: 'scope_1', roleId: 'role_named', mode: 'add', permissionIds: ['permission_added'] }],
      ownership_grant: [
        { id: 'grant_1', subjectId: 'subject_s', resourceId: 'resource_owned', roleId: 'role_owner' },
        { id: 'grant_2', subjectId: 'subject_s', resourceId: 'resource_gparent', roleId: 'role_folder_owner' },
      ],
      tag_group: [{ id: 'tag_group_team', key: 'team', scopeId: 'scope_0' }],
      tag: [{ id: 'tag_t', tagGroupId: 'tag_group_team', identifier: 'red' }],
      tag_assignment: [{ id: 'ta_1', tagId: 'tag_t', targetType: 'subject', targetId: 'subject_s' }],
      tag_binding: [{ id: 'tb_1', tagId: 'tag_t', roleId: 'role_tag', scopeId: 'scope_0' }],
      resource: [
        ...Array.from({ length: FILLER }, (_, i) => res(`resource_f${String(i).padStart(4, '0')}`)),
        res('resource_named'), res('resource_ext_1', 'x-shared'), res('resource_ext_2', 'x-shared'), res('resource_folder', 'x-folder', 'resource_type_folder'),
        res('resource_child'), res('resource_grandchild'), res('resource_cut'), res('resource_owned'), res('resource_gparent', 'x-gp', 'resource_type_folder'),
        res('resource_gchild'), res('resource_policy'), res('resource_added'), res('resource_tagged'), res('resource_write_only'),
      ],
      resource_edge: [
        edge('resource_folder', 'resource_child'), edge('resource_child', 'resource_grandchild'), edge('resource_folder', 'resource_cut', 'none'),
        edge('resource_gparent', 'resource_gchild'),
      ],
      policy: [{ id: 'policy_1', scopeId: 'scope_0', target: { kind: 'resource', resourceId: 'resource_policy' }, actions: ['read'], effect: 'allow', priority: 0 }],
    },
  }) as TenantSnapshot;
  const q = { actor: { subjectId: 'subject_s' }, scopeId: 'scope_1', action: 'read', resourceType: 'doc', pageSize: 100 };
  const byEvaluate = (index: TenantIndex, query: Omit<LookupResourcesQuery, 'after' | 'pageSize'>) =>
    index.resourcesInIdOrder(query.resourceType).filter((n) => evaluate(index, { ...query, resource: { resourceId: index.resourceNodes.idOf(n) } }, options).allowed).map((n) => index.resourceNodes.idOf(n));

  it('lists every source of an allow, visiting the candidates and not the tenant', () => {
    const index = TenantIndex.fromSnapshot(snapshot());
    expect(byEvaluate(index, q)).toEqual(allowed);
    const page = lookupResources(index, q, options);
    expect(page.resources.map((r) => r.id)).toEqual(allowed);
    expect(page.via).toBe('candidates');
    // The allowed, the other named resources (resource_cut is below a `none` edge, the folders are
    // not docs) and nothing of the filler.
    expect(page.visited).toBe(allowed.length);
    expect(page.last).toBeUndefined();
    // Without a type: the folders named by a permission or granted are candidates too.
    const untyped = lookupResources(index, { ...q, resourceType: undefined }, options);
    expect(untyped.resources.map((r) => r.id)).toEqual(byEvaluate(index, { ...q, resourceType: undefined }));
    expect(untyped.visited).toBeLessThan(20);
    // Pages of 3 (and of one visit) list the same, and the walk too.
    expect(allPages(index, { ...q, pageSize: 3 }, options).ids).toEqual(allowed);
    expect(allPages(index, q, { ...options, maxVisits: 1 }).pages).toBe(allowed.length);
    const walked = lookupResources(index, q, { ...options, walk: true });
    expect(walked.resources.map((r) => r.id)).toEqual(allowed);
    expect(walked.via).toBe('walk');
    expect(walked.visited).toBe(FILLER + 12);
    // At scope_0 the `add` override does not apply.
    expect(lookupResources(index, { ...q, scopeId: 'scope_0' }, options).resources.map((r) => r.id)).toEqual(allowed.filter((id) => id !== 'resource_added'));
    // Another action: only the one permission of that action, naming its resource.
    expect(lookupResources(index, { ...q, action: 'write' }, options).resources.map((r) => r.id)).toEqual(['resource_write_only']);
  });

  it('follows writes: a new child, a deleted grant, a retyped policy', () => {
    const index = TenantIndex.fromSnapshot(snapshot());
    index.apply(2, [
      { op: 'upsert', kind: 'resource', id: 'resource_new', row: res('resource_new') },
      { op: 'upsert', kind: 'resource_edge', id: 'edge_resource_grandchild_resource_new', row: edge('resource_grandchild', 'resource_new') },
      { op: 'delete', kind: 'ownership_grant', id: 'grant_1' },
      { op: 'upsert', kind: 'policy', id: 'policy_1', row: { id: 'policy_1', scopeId: 'scope_0', target: { kind: 'resource', resourceId: 'resource_policy' }, actions: ['write'], effect: 'allow', priority: 0 } },
      // The edge to resource_child no longer cascades: it and its subtree go.
      { op: 'upsert', kind: 'resource_edge', id: 'edge_resource_folder_resource_child', row: edge('resource_folder', 'resource_child', 'none') },
    ]);
    const want = allowed.filter((id) => !['resource_owned', 'resource_policy', 'resource_child', 'resource_grandchild'].includes(id));
    expect(byEvaluate(index, q)).toEqual(want);
    const page = lookupResources(index, q, options);
    expect(page.resources.map((r) => r.id)).toEqual(want);
    expect(page.via).toBe('candidates');
    index.apply(3, [{ op: 'upsert', kind: 'resource_edge', id: 'edge_resource_folder_resource_child', row: edge('resource_folder', 'resource_child') }]);
    expect(lookupResources(index, q, options).resources.map((r) => r.id)).toEqual([...want, 'resource_child', 'resource_grandchild', 'resource_new'].sort());
  });

  it('reaches descendants as deep as evaluate walks up, and no deeper', () => {
    const t = snapshot();
    const chain = Array.from({ length: 70 }, (_, i) => `resource_z${String(i).padStart(2, '0')}`);
    t.rows.resource = [...(t.rows.resource ?? []), ...chain.map((id) => res(id))];
    t.rows.resource_edge = [...(t.rows.resource_edge ?? []), edge('resource_owned', chain[0]), ...chain.slice(1).map((id, i) => edge(chain[i], id))];
    const index = TenantIndex.fromSnapshot(t);
    const want = byEvaluate(index, q);
    // resource_owned's grant reaches 64 levels below it.
    expect(want.filter((id) => id.startsWith('resource_z'))).toEqual(chain.slice(0, 64));
    const page = lookupResources(index, q, options);
    expect(page.resources.map((r) => r.id)).toEqual(want);
    expect(page.visited).toBe(want.length);
  });

  it('lists every grant of a subject holding more than a flat list keeps (its grants in maps)', () => {
    const t = snapshot();
    const granted = Array.from({ length: 40 }, (_, i) => `resource_f${String(i * 7).padStart(4, '0')}`);
    t.rows.ownership_grant = [...(t.rows.ownership_grant ?? []), ...granted.map((resourceId, i) => ({ id: `grant_many_${i}`, subjectId: 'subject_s', resourceId, roleId: 'role_owner' }))];
    const index = TenantIndex.fromSnapshot(t);
    const want = [...allowed, ...granted].sort();
    expect(byEvaluate(index, q)).toEqual(want);
    const page = lookupResources(index, q, options);
    expect(page.resources.map((r) => r.id)).toEqual(want);
    expect(page.visited).toBe(want.length);
  });

  it('keeps the candidates of its last listings, at most CACHED_LISTINGS, dropped at the next revision', () => {
    const index = TenantIndex.fromSnapshot(snapshot());
    lookupResources(index, q, options);
    expect(cachedCandidates(index)).toEqual({ listings: 1, candidates: allowed.length });
    // Another page of the same listing, or the same query by external id, builds nothing new.
    lookupResources(index, { ...q, after: allowed[3] }, options);
    lookupResources(index, { ...q, actor: { externalId: 's' } }, options);
    expect(cachedCandidates(index).listings).toBe(1);
    for (let k = 0; k < CACHED_LISTINGS + 8; k++) lookupResources(index, { ...q, action: `act${k}` }, options);
    expect(cachedCandidates(index).listings).toBe(CACHED_LISTINGS);
    index.apply(2, []);
    expect(cachedCandidates(index)).toEqual({ listings: 0, candidates: 0 });
  });

  it('walks when a held permission has pattern * or an allow policy targets a collection at the scope', () => {
    const star = snapshot();
    star.rows.role_permission = [...(star.rows.role_permission ?? []), { id: 'rp_star', roleId: 'role_named', permissionId: 'permission_any' }];
    const starIndex = TenantIndex.fromSnapshot(star);
    const page = lookupResources(starIndex, q, options);
    expect(page.via).toBe('walk');
    expect(page.resources.length).toBe(100);
    // A pattern * of another type or action still bounds.
    expect(lookupResources(starIndex, { ...q, resourceType: 'folder' }, options).via).toBe('candidates');
    expect(lookupResources(starIndex, { ...q, action: 'write' }, options).via).toBe('candidates');

    const collection = (scopeId: string, typeId: string, effect: 'allow' | 'deny', actions: string[]) => {
      const t = snapshot();
      t.rows.collection = [{ id: 'collection_1', scopeId, resourceTypeId: typeId, name: 'c', matchDefinition: { fields: { externalResourceId: 'x-resource_f0007' } } }];
      t.rows.policy = [...(t.rows.policy ?? []), { id: 'policy_c', scopeId, target: { kind: 'collection', collectionId: 'collection_1' }, actions, effect, priority: 0 }];
      return TenantIndex.fromSnapshot(t);
    };
    const viaCollection = collection('scope_0', 'resource_type_doc', 'allow', ['read']);
    const listed = lookupResources(viaCollection, q, options);
    expect(listed.via).toBe('walk');
    expect(listed.resources.map((r) => r.id)).toEqual([...allowed, 'resource_f0007'].sort());
    expect(lookupResources(collection('scope_0', 'resource_type_doc', 'allow', ['*']), q, options).via).toBe('walk');
    // A deny, another action, another type, or a scope below the evaluation scope: still bounded.
    expect(lookupResources(collection('scope_0', 'resource_type_doc', 'deny', ['read']), q, options).via).toBe('candidates');
    expect(lookupResources(collection('scope_0', 'resource_type_doc', 'allow', ['write']), q, options).via).toBe('candidates');
    expect(lookupResources(collection('scope_0', 'resource_type_folder', 'allow', ['read']), q, options).via).toBe('candidates');
    expect(lookupResources(collection('scope_1', 'resource_type_doc', 'allow', ['read']), { ...q, scopeId: 'scope_0' }, options).via).toBe('candidates');
  });
});
