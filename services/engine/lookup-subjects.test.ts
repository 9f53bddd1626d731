/**
 * LookupSubjects against its definition, on the differential generator's tenants: the pages of
 * a listing, concatenated, are exactly the tenant's subjects (of the type asked) that evaluate
 * allows for the request, by id, each once, under every gate mode; the reference evaluator
 * agrees; and with `explain` each subject's grant names rows of the tenant that do give it the
 * decision. Seeded like differential.test.ts (rerun with ENGINE_PROP_SEED=<seed>).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ScopeNotFoundError } from './errors.js';
import { evaluate, resolveResource, type GateMode } from './evaluate.js';
import { lookupSubjects, type LookupSubjectsQuery, type SubjectGrant } from './lookup-subjects.js';
import type { Change, Subject, TenantSnapshot } from './model.js';
import { TenantIndex } from './tenant-index/mod.js';
import { genRequest, genTenant, int, chance, pick, type Rng } from './testdata/generate.js';
import { RefScopeNotFound, referenceEvaluate } from './testdata/reference.js';
import { mulberry32 } from '../../test/seeded-random.js';

const FIXED_SEED = 20250101;
const envSeed = process.env.ENGINE_PROP_SEED ? Number(process.env.ENGINE_PROP_SEED) : undefined;
const seeds: [string, number][] = envSeed !== undefined ? [['env', envSeed]] : [['fixed', FIXED_SEED], ['random', (Math.random() * 2 ** 31) | 0]];

const TENANTS = 500;
const QUERIES = 6;
const GATES: readonly GateMode[] = ['off', 'links-fallback', 'strict'];
const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * More subjects than the generator makes (it makes 4): copies of its subjects under new ids,
 * each with copies of the memberships (and their role assignments), ownership grants and tag
 * assignments of the one copied, so copies are allowed as their originals are and listings
 * take several pages.
 */
function withCopies(r: Rng, t: TenantSnapshot): TenantSnapshot {
  const subjects = t.rows.subject ?? [];
  if (!chance(r, 0.6)) return t;
  const rows = { ...t.rows };
  const n = int(r, 1, 12);
  const copy = <T extends { id: string }>(xs: readonly T[] | undefined, out: T[], match: (x: T) => boolean, make: (x: T, id: string) => T, suffix: string) => {
    for (const x of xs ?? []) if (match(x)) out.push(make(x, `${x.id}_${suffix}`));
  };
  const subject: Subject[] = [...subjects];
  const membership = [...(rows.membership ?? [])];
  const roleAssignment = [...(rows.role_assignment ?? [])];
  const grant = [...(rows.ownership_grant ?? [])];
  const tagAssignment = [...(rows.tag_assignment ?? [])];
  for (let i = 0; i < n; i++) {
    const base = pick(r, subjects);
    const suffix = `c${i}`;
    const id = `${base.id}_${suffix}`;
    subject.push({ ...base, id, externalId: `ext-${id}` });
    const newMemberships: typeof membership = [];
    copy(t.rows.membership, newMemberships, (m) => m.subjectId === base.id, (m, mid) => ({ ...m, id: mid, subjectId: id }), suffix);
    membership.push(...newMemberships);
    copy(t.rows.role_assignment, roleAssignment, (a) => newMemberships.some((m) => m.id === `${a.membershipId}_${suffix}`), (a, aid) => ({ ...a, id: aid, membershipId: `${a.membershipId}_${suffix}` }), suffix);
    copy(t.rows.ownership_grant, grant, (g) => g.subjectId === base.id, (g, gid) => ({ ...g, id: gid, subjectId: id }), suffix);
    copy(t.rows.tag_assignment, tagAssignment, (a) => a.targetType === 'subject' && a.targetId === base.id, (a, aid) => ({ ...a, id: aid, targetId: id }), suffix);
  }
  return { ...t, rows: { ...rows, subject, membership, role_assignment: roleAssignment, ownership_grant: grant, tag_assignment: tagAssignment } };
}

type Query = Omit<LookupSubjectsQuery, 'after'>;
type Options = { now: Date; gate: GateMode; maxVisits?: number };

/** Every page of a listing. */
function allPages(index: TenantIndex, q: Query, options: Options): { ids: string[]; pages: number; grants: Map<string, SubjectGrant> } {
  const ids: string[] = [];
  const grants = new Map<string, SubjectGrant>();
  let after: string | undefined;
  let pages = 0;
  for (;;) {
    const page = lookupSubjects(index, { ...q, after }, options);
    pages++;
    expect(page.subjects.length).toBeLessThanOrEqual(q.pageSize);
    expect(page.revision).toBe(index.revision);
    for (const s of page.subjects) {
      ids.push(s.subject.id);
      expect(s.grant !== undefined, 'a grant exactly when explained').toBe(q.explain === true);
      if (s.grant) grants.set(s.subject.id, s.grant);
    }
    if (page.last === undefined) return { ids, pages, grants };
    if (options.maxVisits === undefined) expect(page.subjects.length, 'a page with more to follow is full').toBe(q.pageSize);
    if (page.subjects.length === q.pageSize) expect(page.last).toBe(page.subjects[page.subjects.length - 1].subject.id);
    expect(after === undefined || page.last > after, 'the cursor moves forward').toBe(true);
    after = page.last;
    if (pages > 100_000) throw new Error('listing does not end');
  }
}

/** The definition: every subject of the tenant (of the type) that evaluate allows, by id. */
function expected(t: TenantSnapshot, index: TenantIndex, q: Query, options: Options): string[] {
  return (t.rows.subject ?? [])
    .filter((s) => !q.subjectType || s.type === q.subjectType)
    .filter((s) => evaluate(index, { actor: { subjectId: s.id }, scopeId: q.scopeId, action: q.action, resource: q.resource, context: q.context }, options).allowed)
    .map((s) => s.id)
    .sort(byId);
}

/** The grant names rows of the tenant that give `subjectId` its decision, as its reason says. */
function checkGrant(t: TenantSnapshot, index: TenantIndex, q: Query, options: Options, subjectId: string, g: SubjectGrant, where: string): void {
  const d = evaluate(index, { actor: { subjectId }, scopeId: q.scopeId, action: q.action, resource: q.resource, context: q.context, explain: true }, options);
  expect(g.reason, where).toBe(d.reason);
  expect(g.trace, where).toEqual(d.trace);
  const set = (g: SubjectGrant) => Object.keys(g).filter((k) => k !== 'trace' && k !== 'reason').sort();
  const path = index.scopePath(q.scopeId).set;
  const viaSource = () => {
    if (g.membershipId !== undefined) {
      const m = t.rows.membership?.find((x) => x.id === g.membershipId);
      expect(m?.subjectId, `${where}: membership of the subject`).toBe(subjectId);
      expect(m?.scopeId, `${where}: membership's scope`).toBe(g.sourceScopeId);
      expect(t.rows.role_assignment?.some((a) => a.membershipId === g.membershipId && a.roleId === g.roleId), `${where}: membership assigns the role`).toBe(true);
    } else {
      const b = t.rows.tag_binding?.find((x) => x.id === g.tagBindingId);
      expect(b?.roleId, `${where}: the binding's role`).toBe(g.roleId);
      expect(b?.scopeId, `${where}: the binding's scope`).toBe(g.sourceScopeId);
      expect(t.rows.tag_assignment?.some((a) => a.tagId === b?.tagId && a.targetType === 'subject' && a.targetId === subjectId), `${where}: the subject has the tag`).toBe(true);
    }
    expect(path.has(g.sourceScopeId as string), `${where}: source scope on the path`).toBe(true);
  };
  const grantOn = (resourceId: string | undefined) => {
    const og = t.rows.ownership_grant?.find((x) => x.id === g.ownershipGrantId);
    expect([og?.subjectId, og?.roleId, og?.resourceId], `${where}: the ownership grant`).toEqual([subjectId, g.roleId, resourceId]);
  };
  const resourceId = q.resource === undefined ? undefined : resolveResource(index, q.scopeId, q.resource)?.id;
  switch (g.reason) {
    case 'policy_allow':
      expect(set(g), where).toEqual(['policyId']);
      expect(g.policyId, where).toBe(d.evaluatedPolicy?.id);
      expect(t.rows.policy?.find((p) => p.id === g.policyId)?.effect, where).toBe('allow');
      break;
    case 'role':
      expect(set(g), where).toEqual(['roleId', g.membershipId !== undefined ? 'membershipId' : 'tagBindingId', 'sourceScopeId'].sort());
      viaSource();
      break;
    case 'ownership':
      expect(set(g), where).toEqual(['ownershipGrantId', 'roleId']);
      grantOn(resourceId);
      break;
    case 'inherited':
      expect(g.ancestorResourceId, where).toBeDefined();
      if (g.ownershipGrantId !== undefined) {
        expect(set(g), where).toEqual(['ancestorResourceId', 'ownershipGrantId', 'roleId']);
        grantOn(g.ancestorResourceId);
      } else {
        expect(set(g), where).toEqual(['ancestorResourceId', 'roleId', g.membershipId !== undefined ? 'membershipId' : 'tagBindingId', 'sourceScopeId'].sort());
        viaSource();
      }
      break;
    default:
      throw new Error(`${where}: an allowed subject with reason ${g.reason}`);
  }
}

const counts = { listings: 0, nonEmpty: 0, multiPage: 0, reasons: new Map<string, number>() };

describe.each(seeds)('lookupSubjects equals {s : evaluate(s).allowed} (%s seed %i)', (_label, seed) => {
  it('on generated tenants, scopes, actions, resources, types and page sizes, under every gate mode', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), (tenantSeed) => {
        const r = mulberry32(tenantSeed);
        const t = withCopies(r, genTenant(r));
        const index = TenantIndex.fromSnapshot(t);
        for (let i = 0; i < QUERIES; i++) {
          const c = genRequest(r, t);
          const q: Query = {
            scopeId: c.request.scopeId, action: c.request.action, resource: c.request.resource, context: c.request.context,
            subjectType: chance(r, 0.3) ? pick(r, ['user', 'service', 'agent', 'nope', '']) : undefined,
            pageSize: pick(r, [1, 2, 3, 5, 100]),
            explain: chance(r, 0.5),
          };
          for (const gate of GATES) {
            const options = { now: c.options.now, gate };
            const where = `tenant seed ${tenantSeed}, query ${i}, gate ${gate}: ${JSON.stringify(q)}`;
            if (index.scope(q.scopeId) === undefined || index.scopePath(q.scopeId).ids.length === 0) {
              expect(() => lookupSubjects(index, q, options), where).toThrow(ScopeNotFoundError);
              continue;
            }
            const want = expected(t, index, q, options);
            const got = allPages(index, q, options);
            expect(got.ids, where).toEqual(want);
            for (const [id, g] of got.grants) {
              checkGrant(t, index, q, options, id, g, `${where}, subject ${id}`);
              counts.reasons.set(g.reason, (counts.reasons.get(g.reason) ?? 0) + 1);
            }
            // One decision a page: the same listing, a page per subject visited.
            const oneByOne = allPages(index, q, { ...options, maxVisits: 1 });
            expect(oneByOne.ids, `${where}, one visit a page`).toEqual(want);
            const ofType = (t.rows.subject ?? []).filter((s) => !q.subjectType || s.type === q.subjectType).length;
            if (want.length > 0) expect(oneByOne.pages, `${where}, pages of one visit`).toBe(ofType);
            // The reference evaluator, written apart from the engine, allows the same set.
            const byReference = (t.rows.subject ?? [])
              .filter((s) => !q.subjectType || s.type === q.subjectType)
              .filter((s) => {
                try {
                  return referenceEvaluate(t, { actor: { subjectId: s.id }, scopeId: q.scopeId, action: q.action, resource: q.resource, context: q.context }, options).allowed;
                } catch (e) {
                  if (e instanceof RefScopeNotFound) throw new Error(`${where}: the reference lacks a scope the engine has`);
                  throw e;
                }
              })
              .map((s) => s.id)
              .sort(byId);
            expect(got.ids, `${where} (reference)`).toEqual(byReference);
            counts.listings++;
            if (want.length > 0) counts.nonEmpty++;
            if (got.pages > 1 && want.length > 1) counts.multiPage++;
          }
        }
      }),
      { seed, numRuns: TENANTS },
    );
    expect(counts.listings).toBeGreaterThan(4000);
    expect(counts.nonEmpty).toBeGreaterThan(500);
    expect(counts.multiPage).toBeGreaterThan(100);
    // Every allowing reason was explained.
    for (const reason of ['role', 'ownership', 'inherited', 'policy_allow']) expect(counts.reasons.get(reason) ?? 0, reason).toBeGreaterThan(10);
  });
});

describe('lookupSubjects', () => {
  const t = genTenant(mulberry32(7));
  const subjects: Subject[] = Array.from({ length: 30 }, (_, i) => ({ id: `subject_${String(29 - i).padStart(2, '0')}`, type: i % 3 === 0 ? 'service' : 'user', externalId: `x${i}`, metadata: {} }));
  const users = subjects.filter((s) => s.type === 'user').map((s) => s.id).sort(byId);
  const snapshot = {
    revision: 1,
    rows: {
      scope: [{ id: 'scope_0', tenantId: 'tenant_1', typeId: 'scope_type_x', name: 'root', parentId: null }],
      resource_type: t.rows.resource_type,
      resource: [{ id: 'resource_1', tenantId: 'tenant_1', resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_0', externalResourceId: 'r1', createdAt: '2025-01-01T00:00:00.000Z', createdBy: 'subject_00' }],
      subject: subjects,
      role: [{ id: 'role_r', scopeId: 'scope_0', key: 'r', name: 'r' }],
      permission: [{ id: 'permission_p', scopeId: 'scope_0', action: 'read', resourceType: 'doc', resourcePattern: '*', key: 'doc:read:*' }],
      role_permission: [{ id: 'role_permission_1', roleId: 'role_r', permissionId: 'permission_p' }],
      membership: subjects.filter((s) => s.type === 'user').map((s) => ({ id: `membership_${s.id}`, subjectId: s.id, scopeId: 'scope_0' })),
      role_assignment: subjects.filter((s) => s.type === 'user').map((s) => ({ id: `role_assignment_${s.id}`, membershipId: `membership_${s.id}`, roleId: 'role_r' })),
    },
  } as unknown as TenantSnapshot;
  const options = { now: new Date('2025-01-01T00:00:00Z'), gate: 'strict' as const };
  const q: Query = { scopeId: 'scope_0', action: 'read', resource: { resourceId: 'resource_1' }, pageSize: 7 };

  it('pages in id order, by type, and follows the index after creates, deletes and type changes', () => {
    const index = TenantIndex.fromSnapshot(snapshot);
    expect(allPages(index, q, options).ids).toEqual(users);
    expect(allPages(index, { ...q, subjectType: 'user' }, options).ids).toEqual(users);
    expect(allPages(index, { ...q, subjectType: 'service' }, options).ids).toEqual([]);
    const retyped = { ...subjects.find((s) => s.id === users[3])!, type: 'service' };
    index.apply(2, [
      { op: 'delete', kind: 'subject', id: users[0] },
      { op: 'upsert', kind: 'subject', id: retyped.id, row: retyped },
    ]);
    const now = users.filter((id) => id !== users[0]);
    expect(allPages(index, q, options).ids).toEqual(now);
    expect(allPages(index, { ...q, subjectType: 'user' }, options).ids).toEqual(now.filter((id) => id !== users[3]));
    expect(allPages(index, { ...q, subjectType: 'service' }, options).ids).toEqual([users[3]]);
  });

  it('starts after the cursor id, whether or not that id still exists', () => {
    const index = TenantIndex.fromSnapshot(snapshot);
    expect(lookupSubjects(index, { ...q, after: users[3] }, options).subjects.map((s) => s.subject.id)).toEqual(users.slice(4, 11));
    expect(lookupSubjects(index, { ...q, after: `${users[3]}~` }, options).subjects.map((s) => s.subject.id)).toEqual(users.slice(4, 11));
    expect(lookupSubjects(index, { ...q, after: 'subject_99' }, options)).toEqual({ subjects: [], revision: 1 });
  });

  it('lists nobody for an unknown resource id or an unreachable resource, without a walk; throws for an unknown scope', () => {
    const index = TenantIndex.fromSnapshot(snapshot);
    // One visit a page: a walk would end the first page with a cursor; the shortcut answers the end.
    const counting = { ...options, maxVisits: 1 };
    expect(lookupSubjects(index, { ...q, resource: { resourceId: 'resource_zz' } }, counting)).toEqual({ subjects: [], revision: 1 });
    // Linked nowhere under the strict gate: unreachable from a scope it is not owned at.
    const other = TenantIndex.fromSnapshot({ ...snapshot, rows: { ...snapshot.rows, scope: [...snapshot.rows.scope!, { id: 'scope_1', tenantId: 'tenant_1', typeId: 'scope_type_x', name: 'x', parentId: null }] } } as TenantSnapshot);
    expect(lookupSubjects(other, { ...q, scopeId: 'scope_1' }, counting)).toEqual({ subjects: [], revision: 1 });
    expect(() => lookupSubjects(index, { ...q, scopeId: 'scope_zz' }, options)).toThrow(ScopeNotFoundError);
    expect(() => lookupSubjects(index, { ...q, pageSize: 0 }, options)).toThrow(RangeError);
  });
});

describe.each(seeds)('the subject order follows applied revisions (%s seed %i)', (_label, seed) => {
  it('equals a sort of the rows after random creates, deletes and retypes', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), (tenantSeed) => {
        const r = mulberry32(tenantSeed);
        const t = withCopies(r, genTenant(r));
        const index = TenantIndex.fromSnapshot(t);
        const rows = new Map((t.rows.subject ?? []).map((x) => [x.id, x]));
        const types = ['user', 'service', 'agent', 'nope'];
        const check = (where: string) => {
          for (const type of [undefined, ...types]) {
            const want = [...rows.values()].filter((x) => type === undefined || x.type === type).map((x) => x.id).sort(byId);
            expect(index.subjectsInIdOrder(type).map((n) => n.id), `${where}, type ${type}`).toEqual(want);
          }
        };
        if (chance(r, 0.7)) index.subjectsInIdOrder();
        if (chance(r, 0.5)) index.subjectsInIdOrder('user');
        for (let revision = t.revision + 1; revision < t.revision + 6; revision++) {
          const changes: Change[] = [];
          const n = chance(r, 0.1) ? 300 : int(r, 1, 4);
          for (let i = 0; i < n; i++) {
            if (chance(r, 0.3) && rows.size > 0) {
              const id = pick(r, [...rows.keys()]);
              rows.delete(id);
              changes.push({ op: 'delete', kind: 'subject', id });
            } else {
              const id = chance(r, 0.5) && rows.size > 0 ? pick(r, [...rows.keys()]) : `subject_n${int(r, 0, 400)}`;
              const row: Subject = { id, type: pick(r, types), externalId: `n-${id}`, metadata: {} };
              rows.set(id, row);
              changes.push({ op: 'upsert', kind: 'subject', id, row });
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
