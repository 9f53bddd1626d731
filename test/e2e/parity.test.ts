/**
 * One evaluator: a sidecar following a control plane answers exactly what the control plane
 * answers, decision by decision, trace included. The tenant is the fuzz suite's world (every
 * create RPC with valid generated requests: scopes, roles, policies, collections, tags and
 * bindings, overrides, ownership grants, resource hierarchies), built over REST on a real
 * control-plane process; the sidecar receives it over the Watch stream (entities as proto JSON),
 * the control plane reads it from its own store, so this also checks that both routes give the
 * same index.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { mulberry32 } from '../seeded-random.js';
import { startSidecar, type Sidecar } from '../../sidecar/app.js';
import { describeEachBackend } from '../harness.js';
import { startFuzzServer, PLATFORM_SECRET, type FuzzServer } from '../fuzz/control-plane.js';
import { buildWorld, createSpare } from '../fuzz/world.js';
import { METHODS, type World } from '../fuzz/generator.js';
import { waitFor200 } from '../processes.js';

const SEED = Number(process.env.PARITY_SEED ?? 20261125);

async function post(base: string, path: string, body: unknown, key: string) {
  const res = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key }, body: JSON.stringify(body) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

describeEachBackend('control plane and sidecar decide alike (%s)', (backend) => {
  let server: FuzzServer;
  let sidecar: Sidecar;
  let world: World;
  let serviceKey: string;
  /** Resources the policies above target, asked about in every combination. */
  let focus: string[] = [];

  beforeAll(async () => {
    server = await startFuzzServer(backend, { SERVICE_WATCH_HEARTBEAT_MS: '200' });
    const r = mulberry32(SEED);
    const built = await buildWorld(server, PLATFORM_SECRET, r);
    world = built.world;
    serviceKey = built.keys.service;
    // More of what decisions read: grants, assignments, policies, tags, overrides.
    const creates = METHODS.filter((m) => m.op === 'create' && m.kind &&
      /RoleAssignment|OwnershipGrant|ResourcePolicy|TagAssignment|TagBinding|ScopeOverride|ResourceEdge|Membership|ResourceScopeLink/.test(m.name));
    for (let i = 0; i < 40; i++) await createSpare(server, PLATFORM_SECRET, world, creates[i % creates.length], 'A', r).catch(() => undefined);
    // And policies every request grid below meets: a deny, a conditional allow, a collection's allow.
    const t = world.A;
    const docs = (t.core.resource ?? []).filter((e) => e.data.resourceTypeId === t.childTypeId).map((e) => e.id);
    const collection = (t.core.collection ?? [])[0].id;
    focus = docs.slice(0, 3);
    const policy = (body: Record<string, unknown>) => post(server.url, '/resource-policies', { scopeId: t.rootScopeId, ...body }, PLATFORM_SECRET);
    await policy({ target: { kind: 'resource', resourceId: docs[0] }, actions: ['edit', 'read'], effect: 'deny', priority: 5 });
    await policy({ target: { kind: 'resource', resourceId: docs[1] }, actions: ['delete'], effect: 'allow', subjectCondition: { '==': [{ var: 'subject.type' }, 'user'] } });
    await policy({ target: { kind: 'collection', collectionId: collection }, actions: ['share'], effect: 'allow', contextCondition: { '>=': [{ var: 'time.hour' }, 9] } });
    // And an ownership grant on a focus resource, so the ownership leg is compared too (the
    // random creates above may or may not give one that a request meets).
    const owner = await post(server.url, '/roles', { scopeId: t.rootScopeId, key: 'parity-owner' }, PLATFORM_SECRET);
    const deletePermission = await post(server.url, '/permissions', { scopeId: t.rootScopeId, resourceType: 'doc', action: 'delete', resourcePattern: '*' }, PLATFORM_SECRET);
    await post(server.url, '/role-permissions', { roleId: owner.id, permissionId: deletePermission.id }, PLATFORM_SECRET);
    const subject = (t.core.subject ?? [])[0].id;
    await post(server.url, '/ownership-grants', { subjectId: subject, resourceId: docs[2], roleId: owner.id }, PLATFORM_SECRET);
    sidecar = await startSidecar({
      controlPlaneUrl: server.url, apiKey: serviceKey, tenantId: world.A.tenantId, host: '127.0.0.1', port: 0,
      maxStalenessMs: 30_000, minRevisionWaitMs: 5_000, watchCompression: 'none', logLevel: 'silent',
    }, pino({ level: 'silent' }));
    await waitFor200(`${sidecar.server.url}/readyz`);
  }, 240_000);

  afterAll(async () => {
    await sidecar?.close();
    await server?.close();
  });

  it('gives identical answers over every subject, scope, action and resource of the tenant', async () => {
    const t = world.A;
    const ids = (kind: string) => [...(t.core[kind as never] ?? []), ...(t.spare[kind as never] ?? [])].map((e) => (e as { id: string }).id);
    const subjects = ids('subject');
    const scopes = ids('scope');
    const resources = ids('resource');
    const actions = ['read', 'write', 'edit', 'share', 'delete'];
    const requests: unknown[] = [];
    const r = mulberry32(SEED + 1);
    for (const subjectId of subjects) {
      for (const scopeId of scopes) {
        for (const action of actions) {
          // Every request without a resource, and with a few of the tenant's resources each.
          requests.push({ actor: { subjectId }, scopeId, action, explain: true });
          for (let k = 0; k < 3 + focus.length; k++) {
            const resourceId = k < focus.length ? focus[k] : resources[Math.floor(r() * resources.length)];
            requests.push({ actor: { subjectId }, scopeId, action, resource: { resourceId }, explain: true, context: { time: { hour: 10, minute: 0, dayOfWeek: 3, iso: '2026-11-25T10:00:00Z' } } });
          }
          requests.push({ actor: { subjectId }, scopeId, action, resource: { externalResourceId: `d${Math.floor(r() * 60)}`, resourceType: 'doc' } });
          requests.push({ actor: { subjectId }, scopeId, action, resource: { resourceId: 'resource_not_in_tenant' } });
        }
      }
    }
    // A subject id the tenant does not hold, at every scope and action.
    for (const scopeId of scopes) {
      for (const action of actions) {
        requests.push({ actor: { subjectId: 'subject_not_in_tenant' }, scopeId, action, explain: true });
        requests.push({ actor: { subjectId: 'subject_not_in_tenant' }, scopeId, action, resource: { resourceId: focus[0] }, explain: true });
      }
    }
    const tenant = await fetch(`${server.url}/tenants/${t.tenantId}`, { headers: { 'x-api-key': PLATFORM_SECRET } }).then((x) => x.json() as Promise<{ revision: string | number }>);
    const revision = Number(tenant.revision);
    let compared = 0;
    let allowed = 0;
    const reasons = new Set<string>();
    for (let i = 0; i < requests.length; i += 1000) {
      const batch = requests.slice(i, i + 1000).map((q) => ({ ...(q as object), consistency: { minRevision: revision } }));
      const fromControlPlane = (await post(server.url, '/evaluate/batch', { requests: batch }, serviceKey)).results;
      const fromSidecar = (await post(sidecar.server.url, '/evaluate/batch', { requests: batch }, serviceKey)).results;
      expect(fromSidecar.length).toBe(batch.length);
      for (let j = 0; j < batch.length; j++) {
        // All of it, the explanation step by step included.
        expect(fromSidecar[j], JSON.stringify(batch[j])).toEqual(fromControlPlane[j]);
        compared++;
        if (fromControlPlane[j].allowed) allowed++;
        reasons.add(fromControlPlane[j].reason);
      }
    }
    console.log(`parity (${backend}): ${compared} decisions identical at revision ${revision}, ${allowed} allowed; reasons: ${[...reasons].sort().join(', ')}`);
    // Both outcomes and several paths must be represented for the comparison to mean anything.
    expect(compared).toBeGreaterThan(2_000);
    expect(allowed).toBeGreaterThan(compared * 0.02);
    expect(compared - allowed).toBeGreaterThan(compared * 0.02);
    // Every path the tenant above is built to reach (the grid meets each of them).
    for (const reason of ['role', 'ownership', 'policy_allow', 'policy_deny', 'no_match', 'resource_not_found', 'subject_not_found']) expect([...reasons]).toContain(reason);
  }, 120_000);
});
