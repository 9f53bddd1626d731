/**
 * LookupSubjects on a control-plane process and a sidecar process following it: paging to the
 * end over REST and gRPC gives the same subjects and grants at both, exactly the subjects
 * Evaluate allows, with a grant for each allowing reason (role through a membership and through a
 * tag binding, ownership, inherited through a role and through a grant, policy_allow); cursors
 * of LookupResources are refused, as are bad cursors, page sizes and another tenant's key; after a
 * write, the control plane answers the next page at the listing's revision, a sidecar refuses it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { DecisionService } from '../../gen/authz/v1/decision_service_pb.js';
import { createScratchDatabase } from '../databases.js';
import { startProcess, waitFor200, type RunningProcess } from '../processes.js';
import { restClient, revisionOf, type Reply } from '../rest-client.js';

const BOOTSTRAP = 'azk_e2e_lookup_subjects_0123456789abcdefghij';
const { call, ok } = restClient(BOOTSTRAP);
const nextCursorOf = (r: Reply) => r.headers.get('x-next-cursor') ?? '';

interface GrantJson {
  reason: string; roleId?: string; membershipId?: string; tagBindingId?: string; ownershipGrantId?: string;
  sourceScopeId?: string; ancestorResourceId?: string; policyId?: string; trace?: unknown[];
}

describe.skipIf(!process.env.DATABASE_URL)('LookupSubjects on a control plane and a sidecar, as real processes', () => {
  let scratch: { url: string; drop: () => Promise<void> };
  const processes: RunningProcess[] = [];
  const w = {} as {
    cp: string; sidecar: string; scopeId: string; tenantId: string; serviceKey: string; otherKey: string; otherScopeId: string; revision: number;
    parent: string; child: string; users: string[]; services: string[]; agent: string;
    reader: string; parentReader: string; owner: string; memberships: Map<string, string>; binding: string; grantOnChild: string; grantOnParent: string; policy: string;
    allowed: Map<string, Omit<GrantJson, 'trace'>>;
  };

  beforeAll(async () => {
    scratch = await createScratchDatabase(process.env.DATABASE_URL!, 'authz_e2e_lookup_subjects');
    const cp = await startProcess('control-plane', {
      DATABASE_URL: scratch.url, SERVICE_PORT: '0', SERVICE_BOOTSTRAP_API_KEY: BOOTSTRAP, SERVICE_WATCH_HEARTBEAT_MS: '200', SERVICE_LOG_LEVEL: 'info',
    });
    processes.push(cp);
    w.cp = cp.url;
    const post = async (path: string, body: unknown) => (await ok(call(cp.url, 'POST', path, body))).body;
    const tenant = await post('/tenants', { name: 'acme' });
    w.tenantId = tenant.id;
    w.scopeId = tenant.scopeId;
    const s = w.scopeId;
    const subjects = await post('/subjects/batch', [
      ...Array.from({ length: 30 }, (_, i) => ({ tenantId: w.tenantId, type: 'user', externalId: `u${String(i).padStart(2, '0')}` })),
      ...Array.from({ length: 3 }, (_, i) => ({ tenantId: w.tenantId, type: 'service', externalId: `svc${i}` })),
      { tenantId: w.tenantId, type: 'agent', externalId: 'agent0' },
    ]) as { id: string; type: string; externalId: string }[];
    w.users = subjects.filter((x) => x.type === 'user').sort((a, b) => (a.externalId < b.externalId ? -1 : 1)).map((x) => x.id);
    w.services = subjects.filter((x) => x.type === 'service').sort((a, b) => (a.externalId < b.externalId ? -1 : 1)).map((x) => x.id);
    w.agent = subjects.find((x) => x.type === 'agent')!.id;
    const doc = (await post('/resource-types', { name: 'Doc', key: 'doc', scopeId: s })).id;
    w.parent = (await post('/resources', { resourceTypeId: doc, ownerScopeId: s, externalResourceId: 'parent' })).id;
    w.child = (await post('/resources', { resourceTypeId: doc, ownerScopeId: s, externalResourceId: 'child' })).id;
    await post('/resource-type-hierarchy', { parentTypeId: doc, childTypeId: doc });
    await post('/resource-hierarchy', { parentResourceId: w.parent, childResourceId: w.child, cascade: 'inherit' });
    const role = async (key: string, pattern: string) => {
      const r = (await post('/roles', { scopeId: s, key, name: key })).id;
      const p = (await post('/permissions', { scopeId: s, action: 'read', resourceType: 'doc', resourcePattern: pattern })).id;
      await post('/role-permissions', { roleId: r, permissionId: p });
      return r;
    };
    w.reader = await role('reader', '*');
    w.parentReader = await role('parent-reader', w.parent);
    w.owner = await role('owner', '*');
    w.memberships = new Map();
    const member = async (subjectId: string, roleId: string) => {
      const m = (await post('/memberships', { subjectId, scopeId: s })).id;
      await post('/role-assignments', { membershipId: m, roleId });
      w.memberships.set(subjectId, m);
    };
    for (const u of w.users.slice(0, 20)) await member(u, w.reader);
    await member(w.users[20], w.parentReader);
    w.grantOnChild = (await post('/ownership-grants', { subjectId: w.services[0], resourceId: w.child, roleId: w.owner })).id;
    w.grantOnParent = (await post('/ownership-grants', { subjectId: w.services[1], resourceId: w.parent, roleId: w.owner })).id;
    const group = await post('/tag-groups', { scopeId: s, name: 'Level', key: 'level' });
    const tag = await post('/tags', { scopeId: s, tagGroupId: group.id, identifier: 'high' });
    await post('/tag-assignments', { tagId: tag.id, targetType: 'subject', targetId: w.services[2] });
    w.binding = (await post('/tag-bindings', { tagId: tag.id, roleId: w.reader, scopeId: s })).id;
    const policy = await ok(call(cp.url, 'POST', '/resource-policies', {
      scopeId: s, target: { kind: 'resource', resourceId: w.child }, actions: ['read'], effect: 'allow', subjectCondition: { '==': [{ var: 'subject.type' }, 'agent'] },
    }));
    w.policy = policy.body.id;
    w.revision = revisionOf(policy);
    w.allowed = new Map<string, Omit<GrantJson, 'trace'>>([
      ...w.users.slice(0, 20).map((u) => [u, { reason: 'role', roleId: w.reader, membershipId: w.memberships.get(u), sourceScopeId: s }] as const),
      [w.users[20], { reason: 'inherited', roleId: w.parentReader, membershipId: w.memberships.get(w.users[20]), sourceScopeId: s, ancestorResourceId: w.parent }],
      [w.services[0], { reason: 'ownership', roleId: w.owner, ownershipGrantId: w.grantOnChild }],
      [w.services[1], { reason: 'inherited', roleId: w.owner, ownershipGrantId: w.grantOnParent, ancestorResourceId: w.parent }],
      [w.services[2], { reason: 'role', roleId: w.reader, tagBindingId: w.binding, sourceScopeId: s }],
      [w.agent, { reason: 'policy_allow', policyId: w.policy }],
    ]);
    w.serviceKey = (await post('/api-keys', { name: 'sidecar', kind: 'service', tenantId: w.tenantId })).secretKey;
    const other = await post('/tenants', { name: 'other' });
    w.otherScopeId = other.scopeId;
    w.otherKey = (await post('/api-keys', { name: 'other', kind: 'service', tenantId: other.id })).secretKey;
    const sidecar = await startProcess('sidecar', {
      SIDECAR_CONTROL_PLANE_URL: cp.url, SIDECAR_API_KEY: w.serviceKey, SIDECAR_TENANT_ID: w.tenantId, SIDECAR_PORT: '0',
      SIDECAR_MIN_REVISION_WAIT_MS: '5000', SIDECAR_LOG_LEVEL: 'info',
    });
    processes.push(sidecar);
    w.sidecar = sidecar.url;
    await waitFor200(`${sidecar.url}/readyz`);
  }, 90_000);

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    await scratch?.drop();
  });

  const targets = () => [['control plane', w.cp, w.serviceKey], ['sidecar', w.sidecar, w.serviceKey]] as const;
  const query = (extra: Record<string, unknown> = {}) => ({ scopeId: w.scopeId, action: 'read', resource: { resourceId: w.child }, ...extra });
  const sorted = (ids: Iterable<string>) => [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const withoutTrace = ({ trace: _trace, ...g }: GrantJson) => g;

  async function pagesOverRest(base: string, key: string, extra: Record<string, unknown>) {
    const out: { id: string; externalId: string; type: string; grant?: GrantJson }[] = [];
    const revisions = new Set<number>();
    let cursor = '';
    do {
      const page = await ok(call(base, 'POST', '/lookup/subjects', query({ ...extra, cursor, consistency: cursor ? undefined : { minRevision: w.revision } }), key));
      out.push(...page.body.subjects);
      revisions.add(page.body.revision);
      expect(page.body.nextCursor).toBeUndefined();
      expect(page.headers.get('x-revision')).toBe(String(page.body.revision));
      cursor = nextCursorOf(page);
    } while (cursor);
    return { subjects: out, revisions: [...revisions] };
  }

  async function pagesOverGrpc(base: string, key: string, pageSize: number, explain: boolean) {
    const client = createClient(DecisionService, createGrpcTransport({ baseUrl: base }));
    const out: { id: string; grant?: Omit<GrantJson, 'trace'> }[] = [];
    let cursor = '';
    do {
      const page = await client.lookupSubjects(
        { scopeId: w.scopeId, action: 'read', resource: { resourceId: w.child }, pageSize, cursor, explain, consistency: { minRevision: BigInt(w.revision) } },
        { headers: { 'x-api-key': key } },
      );
      for (const x of page.subjects) {
        const g = x.grant;
        // Fields the reason does not set are absent (optional), as in REST's JSON.
        const grant = g && Object.fromEntries(Object.entries({ ...g, trace: undefined, $typeName: undefined }).filter(([, v]) => v !== undefined)) as Omit<GrantJson, 'trace'>;
        out.push(grant ? { id: x.id, grant } : { id: x.id });
      }
      cursor = page.nextCursor;
    } while (cursor);
    return out;
  }

  it('pages to the end over REST and gRPC with the same subjects at both processes: exactly what Evaluate allows', async () => {
    const want = sorted(w.allowed.keys());
    for (const [name, base, key] of targets()) {
      const rest = await pagesOverRest(base, key, { pageSize: 4 });
      expect(rest.subjects.map((x) => x.id), name).toEqual(want);
      expect(rest.revisions).toHaveLength(1);
      expect(rest.subjects.every((x) => x.grant === undefined)).toBe(true);
      expect((await pagesOverGrpc(base, key, 3, false)).map((x) => x.id), name).toEqual(want);
      // One type only; the users by external id.
      const services = await pagesOverRest(base, key, { subjectType: 'service' });
      expect(services.subjects.map((x) => [x.id, x.type]), name).toEqual(sorted(w.services).map((id) => [id, 'service']));
      expect(rest.subjects.find((x) => x.id === w.users[0])?.externalId).toBe('u00');
      // Evaluate agrees on every subject of the tenant.
      for (const subjectId of [...w.users, ...w.services, w.agent]) {
        const d = await ok(call(base, 'POST', '/evaluate', query({ actor: { subjectId } }), key));
        expect(d.body.allowed, `${name} ${subjectId}`).toBe(w.allowed.has(subjectId));
      }
    }
  });

  it('explains each subject: the grant of each reason, the same over REST and gRPC at both processes, its trace Evaluate\'s', async () => {
    for (const [name, base, key] of targets()) {
      const rest = await pagesOverRest(base, key, { pageSize: 5, explain: true });
      const grants = new Map(rest.subjects.map((x) => [x.id, withoutTrace(x.grant!)]));
      expect(grants, name).toEqual(w.allowed);
      const grpc = await pagesOverGrpc(base, key, 7, true);
      expect(new Map(grpc.map((x) => [x.id, x.grant])), `${name} gRPC`).toEqual(w.allowed);
      for (const subjectId of [w.users[0], w.users[20], ...w.services, w.agent]) {
        const d = await ok(call(base, 'POST', '/evaluate', query({ actor: { subjectId }, explain: true }), key));
        const grant = rest.subjects.find((x) => x.id === subjectId)!.grant!;
        expect([grant.reason, grant.trace], `${name} ${subjectId}`).toEqual([d.body.reason, d.body.trace]);
      }
    }
  });

  it('lists nobody for an unknown resource id, and the scope alone without a resource', async () => {
    for (const [name, base, key] of targets()) {
      const none = await ok(call(base, 'POST', '/lookup/subjects', query({ resource: { resourceId: 'resource_nope' } }), key));
      expect([none.body.subjects, nextCursorOf(none)], name).toEqual([[], '']);
      // Without a resource only permissions with pattern * apply: the reader role's holders.
      const scopeOnly = await pagesOverRest(base, key, { resource: undefined, pageSize: 100 });
      expect(scopeOnly.subjects.map((x) => x.id), name).toEqual(sorted([...w.users.slice(0, 20), w.services[2]]));
    }
  });

  it('refuses bad cursors, a LookupResources cursor, bad page sizes, a missing field and an unknown scope, naming the field', async () => {
    for (const [name, base, key] of targets()) {
      const forged = Buffer.from(JSON.stringify({ v: 1, r: 'x', a: 'y', q: 'z' })).toString('base64url');
      for (const cursor of ['not a cursor', 'bm90IGpzb24', forged, 'x'.repeat(5000)]) {
        const bad = await call(base, 'POST', '/lookup/subjects', query({ cursor }), key);
        expect([bad.status, bad.body.code, bad.body.details?.[0]?.field], `${name} ${cursor.slice(0, 20)}`).toEqual([400, 'invalid_argument', 'cursor']);
      }
      const page = await ok(call(base, 'POST', '/lookup/subjects', query({ pageSize: 2 }), key));
      const otherQuery = await call(base, 'POST', '/lookup/subjects', query({ action: 'write', cursor: nextCursorOf(page) }), key);
      expect([otherQuery.status, otherQuery.body.details?.[0]?.field], name).toEqual([400, 'cursor']);
      // A cursor of the other listing kind is refused, and this one is refused there.
      const resources = await ok(call(base, 'POST', '/lookup/resources', { actor: { subjectId: w.users[0] }, scopeId: w.scopeId, action: 'read', pageSize: 1 }, key));
      expect(nextCursorOf(resources)).not.toBe('');
      const crossed = await call(base, 'POST', '/lookup/subjects', query({ cursor: nextCursorOf(resources) }), key);
      expect([crossed.status, crossed.body.code, crossed.body.details?.[0]?.field], name).toEqual([400, 'invalid_argument', 'cursor']);
      const crossedBack = await call(base, 'POST', '/lookup/resources', { actor: { subjectId: w.users[0] }, scopeId: w.scopeId, action: 'read', cursor: nextCursorOf(page) }, key);
      expect([crossedBack.status, crossedBack.body.details?.[0]?.field], name).toEqual([400, 'cursor']);
      for (const pageSize of [-1, 1001, 1.5]) {
        const bad = await call(base, 'POST', '/lookup/subjects', query({ pageSize }), key);
        expect([bad.status, bad.body.code, bad.body.details?.[0]?.field], `${name} pageSize ${pageSize}`).toEqual([400, 'invalid_argument', 'pageSize']);
      }
      for (const field of ['action', 'scopeId']) {
        const missing = await call(base, 'POST', '/lookup/subjects', query({ [field]: '' }), key);
        expect([missing.status, missing.body.code, missing.body.details?.[0]?.field], `${name} ${field}`).toEqual([400, 'invalid_argument', field]);
      }
      const halfResource = await call(base, 'POST', '/lookup/subjects', query({ resource: { externalResourceId: 'child' } }), key);
      expect([halfResource.status, halfResource.body.details?.[0]?.field], name).toEqual([400, 'resource.resourceType']);
      const unknownScope = await call(base, 'POST', '/lookup/subjects', query({ scopeId: 'scope_nope' }), key);
      const unknownScopeEvaluate = await call(base, 'POST', '/evaluate', query({ scopeId: 'scope_nope', actor: { subjectId: w.users[0] } }), key);
      expect([unknownScope.status, unknownScope.body.code], name).toEqual([unknownScopeEvaluate.status, unknownScopeEvaluate.body.code]);
    }
    // A key that may reach every tenant learns that the scope does not exist.
    const unknownScope = await call(w.cp, 'POST', '/lookup/subjects', query({ scopeId: 'scope_nope' }));
    expect([unknownScope.status, unknownScope.body.code, unknownScope.body.details?.[0]?.field]).toEqual([404, 'not_found', 'scopeId']);
  });

  it('refuses a key or a scope of another tenant as Evaluate refuses it', async () => {
    const lookup = await call(w.cp, 'POST', '/lookup/subjects', query(), w.otherKey);
    const evaluate = await call(w.cp, 'POST', '/evaluate', query({ actor: { subjectId: w.users[0] } }), w.otherKey);
    expect(evaluate.status).toBe(403);
    expect([lookup.status, lookup.body.code, lookup.body.message]).toEqual([evaluate.status, evaluate.body.code, evaluate.body.message]);
    expect((await call(w.cp, 'POST', '/lookup/subjects', query(), null)).status).toBe(401);
    const atSidecar = await call(w.sidecar, 'POST', '/lookup/subjects', query({ scopeId: w.otherScopeId }));
    const evaluateAtSidecar = await call(w.sidecar, 'POST', '/evaluate', query({ scopeId: w.otherScopeId, actor: { subjectId: w.users[0] } }));
    expect(evaluateAtSidecar.status).toBe(403);
    expect([atSidecar.status, atSidecar.body.code]).toEqual([evaluateAtSidecar.status, evaluateAtSidecar.body.code]);
  });

  it('answers the next page at the listing\'s revision once a write moved the tenant at the control plane; a sidecar refuses it', async () => {
    const first = await Promise.all(targets().map(([, base, key]) => ok(call(base, 'POST', '/lookup/subjects', query({ pageSize: 3, consistency: { minRevision: w.revision } }), key))));
    const moved = revisionOf(await ok(call(w.cp, 'POST', '/roles', { scopeId: w.scopeId, key: 'unused', name: 'Unused' })));
    for (const [i, [name, base, key]] of targets().entries()) {
      // The process learns the write first (a fresh listing waits for it).
      await ok(call(base, 'POST', '/lookup/subjects', query({ pageSize: 1, consistency: { minRevision: moved } }), key));
      const next = await call(base, 'POST', '/lookup/subjects', query({ pageSize: 100, cursor: nextCursorOf(first[i]) }), key);
      if (name === 'control plane') {
        // Read from the history: the rest of the listing, at the first page's revision.
        expect([next.status, next.body.revision], name).toEqual([200, first[i].body.revision]);
        expect([...first[i].body.subjects, ...next.body.subjects].map((s: { id: string }) => s.id)).toEqual(sorted(w.allowed.keys()));
        continue;
      }
      expect([next.status, next.body.code, next.body.details?.[0]?.field], name).toEqual([400, 'failed_precondition', 'cursor']);
      expect(next.body.message).toContain(`to revision ${moved}`);
    }
  });
});
