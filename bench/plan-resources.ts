/**
 * PlanResources in process: a subject with 100 role grants (memberships with one role each at
 * 100 scopes of a tenant of 100,000 resources, each role with a `*` permission of another type
 * and two patterned to ids), plus a few ownership grants, a deny policy on a collection and
 * hierarchy edges; the plan of one type compiled and rendered as SQL, median and p99 ms, next to
 * one evaluate of one resource in the same run. `--resources N` changes the tenant's size (half
 * of it of each type: `--resources 2000000` for 1,000,000 of the type planned).
 */
import { evaluate, TenantIndex, type TenantSnapshot } from '../services/engine/mod.js';
import { planResources } from '../services/engine/plan/compile.js';
import { planToSql } from '../services/engine/plan/sql.js';
import { loadAverageNow, writeResults } from './results-file.js';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const RESOURCES = arg('--resources', 100_000);
const GRANTS = 100;
const RUNS = arg('--runs', 300);

function tenant(): TenantSnapshot {
  const scope: { id: string; tenantId: string; typeId: string; name: string; parentId: string | null }[] = [{ id: 'scope_root', tenantId: 't', typeId: 'x', name: 'root', parentId: null }];
  for (let i = 0; i < GRANTS; i++) scope.push({ id: `scope_${i}`, tenantId: 't', typeId: 'x', name: `s${i}`, parentId: i === 0 ? 'scope_root' : `scope_${i - 1}` });
  const resource = Array.from({ length: RESOURCES }, (_, i) => ({
    id: `resource_${i}`, tenantId: 't', resourceTypeId: i % 2 ? 'resource_type_doc' : 'resource_type_folder', ownerScopeId: `scope_${i % GRANTS}`,
    externalResourceId: `e${i}`, attributes: { tier: i % 7 ? 'open' : 'secret', size: i % 100 }, createdAt: '2025-01-01T00:00:00.000Z', createdBy: 'x',
  }));
  const role: Record<string, string>[] = [], permission: Record<string, string>[] = [], role_permission: Record<string, string>[] = [];
  const membership: Record<string, string>[] = [], role_assignment: Record<string, string>[] = [];
  for (let i = 0; i < GRANTS; i++) {
    role.push({ id: `role_${i}`, scopeId: 'scope_root', key: `r${i}`, name: `r${i}` });
    const perms = [
      { id: `permission_${i}_a`, scopeId: 'scope_root', action: 'read', resourceType: 'folder', resourcePattern: '*', key: `folder:read:*${i}` },
      { id: `permission_${i}_b`, scopeId: 'scope_root', action: 'read', resourceType: 'doc', resourcePattern: `resource_${(i * 7919) % RESOURCES | 1}`, key: `doc:read:b${i}` },
      { id: `permission_${i}_c`, scopeId: 'scope_root', action: 'read', resourceType: 'doc', resourcePattern: `e${(i * 104729) % RESOURCES | 1}`, key: `doc:read:c${i}` },
    ];
    permission.push(...perms);
    perms.forEach((p, k) => role_permission.push({ id: `role_permission_${i}_${k}`, roleId: role[i].id, permissionId: p.id }));
    membership.push({ id: `membership_${i}`, subjectId: 'subject_u', scopeId: `scope_${i}` });
    role_assignment.push({ id: `role_assignment_${i}`, membershipId: `membership_${i}`, roleId: role[i].id });
  }
  const ownership_grant = Array.from({ length: 20 }, (_, i) => ({ id: `ownership_grant_${i}`, subjectId: 'subject_u', resourceId: `resource_${i * 2 + 1}`, roleId: 'role_0' }));
  const resource_edge = Array.from({ length: 1000 }, (_, i) => ({ id: `resource_edge_${i}`, parentResourceId: `resource_${i * 2 + 1}`, childResourceId: `resource_${i * 2 + 3001}`, cascade: 'inherit' as const }));
  return {
    revision: 1,
    rows: {
      scope, resource, role, permission, role_permission, membership, role_assignment, ownership_grant, resource_edge,
      subject: [{ id: 'subject_u', type: 'user', externalId: 'u', metadata: {} }],
      resource_type: [{ id: 'resource_type_doc', key: 'doc', scopeId: 'scope_root', name: 'Doc' }, { id: 'resource_type_folder', key: 'folder', scopeId: 'scope_root', name: 'Folder' }],
      collection: [{ id: 'collection_secret', scopeId: 'scope_root', resourceTypeId: 'resource_type_doc', name: 'secret', matchDefinition: { fields: { 'attributes.tier': 'secret' } } }],
      policy: [{ id: 'policy_deny_secret', scopeId: 'scope_root', target: { kind: 'collection', collectionId: 'collection_secret' }, actions: ['read'], effect: 'deny', priority: 0 }],
    },
  } as unknown as TenantSnapshot;
}

function timeMs(runs: number, f: () => void): { median: number; p99: number } {
  const t: number[] = [];
  for (let i = 0; i < runs; i++) {
    const s = performance.now();
    f();
    t.push(performance.now() - s);
  }
  t.sort((a, b) => a - b);
  return { median: t[Math.floor(runs / 2)], p99: t[Math.min(runs - 1, Math.floor(runs * 0.99))] };
}

const loadAtStart = loadAverageNow();
const index = TenantIndex.fromSnapshot(tenant());
const query = { actor: { subjectId: 'subject_u' }, scopeId: `scope_${GRANTS - 1}`, action: 'read' };
const options = { now: new Date('2025-06-01T00:00:00Z'), gate: 'strict' as const };
const results: Record<string, unknown> = { resources: RESOURCES, roleGrants: GRANTS, runs: RUNS };
for (const type of ['folder', 'doc']) {
  const q = { ...query, resourceType: type };
  const plan = planResources(index, q, options);
  const sql = planToSql(plan.condition, type);
  for (let i = 0; i < 20; i++) planToSql(planResources(index, q, options).condition, type); // warm
  const planMs = timeMs(RUNS, () => planToSql(planResources(index, q, options).condition, type));
  results[type] = { kind: plan.kind, sqlChars: sql.sql.length, params: sql.params.length, planMs };
  console.log(`${type}: ${plan.kind}, SQL ${sql.sql.length} chars, ${sql.params.length} params; plan + SQL median ${planMs.median.toFixed(3)} ms, p99 ${planMs.p99.toFixed(3)} ms`);
}
const one = { ...query, resource: { resourceId: 'resource_3001' } };
for (let i = 0; i < 1000; i++) evaluate(index, one, options);
const evalMs = timeMs(RUNS * 10, () => evaluate(index, one, options));
results.evaluateMs = evalMs;
console.log(`one evaluate: median ${(evalMs.median * 1000).toFixed(1)} µs, p99 ${(evalMs.p99 * 1000).toFixed(1)} µs`);
console.log(`wrote ${writeResults('plan-resources', { command: `npm run bench:plan-resources${process.argv.slice(2).length ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`, results, loadAtStart })}`);
