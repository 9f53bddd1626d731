/**
 * LookupResources on a control-plane process and a sidecar process following it: paging to the
 * end over REST and gRPC gives the same list at both, exactly the resources Evaluate allows; after
 * a write between two pages the control plane answers the next one at the listing's revision
 * (from its history) and a sidecar refuses it (`failed_precondition` on `cursor`); a cursor that is
 * not one is `invalid_argument`; a key or a scope of another tenant is refused as Evaluate
 * refuses it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectError, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { DecisionService } from '../../gen/authz/v1/decision_service_pb.js';
import { ErrorInfoSchema } from '../../gen/authz/v1/error_reason_pb.js';
import { createScratchDatabase } from '../databases.js';
import { startProcess, waitFor200, type RunningProcess } from '../processes.js';
import { restClient, revisionOf, type Reply } from '../rest-client.js';

const BOOTSTRAP = 'azk_e2e_lookup_0123456789abcdefghijklmnop';

const { call, ok } = restClient(BOOTSTRAP);

/** The cursor of a REST page's next one (`x-next-cursor`), '' on the last. */
const nextCursorOf = (r: Reply) => r.headers.get('x-next-cursor') ?? '';

describe.skipIf(!process.env.DATABASE_URL)('LookupResources on a control plane and a sidecar, as real processes', () => {
  let scratch: { url: string; drop: () => Promise<void> };
  const processes: RunningProcess[] = [];
  const w = {} as {
    cp: string; sidecar: string; scopeId: string; tenantId: string; alice: string; serviceKey: string; otherKey: string; otherScopeId: string;
    revision: number; docs: string[]; denied: string;
  };

  beforeAll(async () => {
    scratch = await createScratchDatabase(process.env.DATABASE_URL!, 'authz_e2e_lookup');
    const cp = await startProcess('control-plane', {
      DATABASE_URL: scratch.url, SERVICE_PORT: '0', SERVICE_BOOTSTRAP_API_KEY: BOOTSTRAP, SERVICE_WATCH_HEARTBEAT_MS: '200', SERVICE_LOG_LEVEL: 'info',
    });
    processes.push(cp);
    w.cp = cp.url;
    const tenant = await ok(call(cp.url, 'POST', '/tenants', { name: 'acme' }));
    w.tenantId = tenant.body.id;
    w.scopeId = tenant.body.scopeId;
    w.alice = (await ok(call(cp.url, 'POST', '/subjects', { tenantId: w.tenantId, type: 'user', externalId: 'alice' }))).body.id;
    const role = await ok(call(cp.url, 'POST', '/roles', { scopeId: w.scopeId, key: 'reader', name: 'Reader' }));
    const perm = await ok(call(cp.url, 'POST', '/permissions', { scopeId: w.scopeId, action: 'read', resourceType: 'doc', resourcePattern: '*' }));
    await ok(call(cp.url, 'POST', '/role-permissions', { roleId: role.body.id, permissionId: perm.body.id }));
    const membership = await ok(call(cp.url, 'POST', '/memberships', { subjectId: w.alice, scopeId: w.scopeId }));
    await ok(call(cp.url, 'POST', '/role-assignments', { membershipId: membership.body.id, roleId: role.body.id }));
    const doc = (await ok(call(cp.url, 'POST', '/resource-types', { name: 'Doc', key: 'doc', scopeId: w.scopeId }))).body.id;
    const folder = (await ok(call(cp.url, 'POST', '/resource-types', { name: 'Folder', key: 'folder', scopeId: w.scopeId }))).body.id;
    const items = Array.from({ length: 45 }, (_, i) => ({ resourceTypeId: i % 5 === 0 ? folder : doc, ownerScopeId: w.scopeId, externalResourceId: `r${i}` }));
    const created = (await ok(call(cp.url, 'POST', '/resources/batch', items))).body as { id: string; resourceTypeId: string }[];
    const docs = created.filter((r) => r.resourceTypeId === doc).map((r) => r.id).sort();
    // A deny policy on one doc: the listing leaves it out, as Evaluate denies it.
    w.denied = docs[7];
    const policy = await ok(call(cp.url, 'POST', '/resource-policies', { scopeId: w.scopeId, target: { kind: 'resource', resourceId: w.denied }, actions: ['read'], effect: 'deny' }));
    w.revision = revisionOf(policy);
    w.docs = docs.filter((id) => id !== w.denied);
    w.serviceKey = (await ok(call(cp.url, 'POST', '/api-keys', { name: 'sidecar', kind: 'service', tenantId: w.tenantId }))).body.secretKey;
    const other = await ok(call(cp.url, 'POST', '/tenants', { name: 'other' }));
    w.otherScopeId = other.body.scopeId;
    w.otherKey = (await ok(call(cp.url, 'POST', '/api-keys', { name: 'other', kind: 'service', tenantId: other.body.id }))).body.secretKey;
    const sidecar = await startProcess('sidecar', {
      SIDECAR_CONTROL_PLANE_URL: cp.url, SIDECAR_API_KEY: w.serviceKey, SIDECAR_TENANT_ID: w.tenantId, SIDECAR_PORT: '0',
      SIDECAR_MIN_REVISION_WAIT_MS: '5000', SIDECAR_LOG_LEVEL: 'info',
    });
    processes.push(sidecar);
    w.sidecar = sidecar.url;
    await waitFor200(`${sidecar.url}/readyz`);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    await scratch?.drop();
  });

  const targets = () => [['control plane', w.cp, w.serviceKey], ['sidecar', w.sidecar, w.serviceKey]] as const;
  const query = (extra: Record<string, unknown> = {}) => ({ actor: { subjectId: w.alice }, scopeId: w.scopeId, action: 'read', ...extra });

  async function pagesOverRest(base: string, key: string, pageSize: number, minRevision: number) {
    const ids: string[] = [];
    const revisions = new Set<number>();
    let cursor = '';
    let pages = 0;
    do {
      const page = await ok(call(base, 'POST', '/lookup/resources', query({ pageSize, cursor, consistency: cursor ? undefined : { minRevision } }), key));
      pages++;
      ids.push(...page.body.resources.map((r: { id: string; resourceType: string; ownerScopeId: string; externalResourceId: string }) => {
        expect([r.resourceType, r.ownerScopeId, r.externalResourceId.startsWith('r')]).toEqual(['doc', w.scopeId, true]);
        return r.id;
      }));
      revisions.add(page.body.revision);
      // REST carries the next page's cursor in a header, as every paged REST answer does.
      expect(page.body.nextCursor).toBeUndefined();
      cursor = nextCursorOf(page);
    } while (cursor);
    return { ids, pages, revisions: [...revisions] };
  }

  async function pagesOverGrpc(base: string, key: string, pageSize: number, minRevision: number) {
    const client = createClient(DecisionService, createGrpcTransport({ baseUrl: base }));
    const ids: string[] = [];
    let cursor = '';
    do {
      const page = await client.lookupResources(
        { actor: { subjectId: w.alice }, scopeId: w.scopeId, action: 'read', pageSize, cursor, consistency: { minRevision: BigInt(minRevision) } },
        { headers: { 'x-api-key': key } },
      );
      ids.push(...page.resources.map((r) => r.id));
      cursor = page.nextCursor;
    } while (cursor);
    return ids;
  }

  it('pages to the end over REST and gRPC with the same list at both processes: exactly what Evaluate allows', async () => {
    for (const [name, base, key] of targets()) {
      const rest = await pagesOverRest(base, key, 7, w.revision);
      expect(rest.ids, name).toEqual(w.docs);
      // A full page says more may follow; the page after the last allowed resource may be empty.
      expect(rest.pages - Math.ceil(w.docs.length / 7)).toBeOneOf([0, 1]);
      // Every page at one revision (the tenant's latest: the keys written after the policy count too).
      expect(rest.revisions).toHaveLength(1);
      expect(rest.revisions[0]).toBeGreaterThanOrEqual(w.revision);
      expect(await pagesOverGrpc(base, key, 10, w.revision), name).toEqual(w.docs);
      // Default page size (100): one page, no cursor; one type only; another subject: nothing.
      const all = await ok(call(base, 'POST', '/lookup/resources', query({ consistency: { minRevision: w.revision } }), key));
      expect([all.body.resources.length, nextCursorOf(all)]).toEqual([w.docs.length, '']);
      expect(all.headers.get('x-revision')).toBe(String(all.body.revision));
      const folders = await ok(call(base, 'POST', '/lookup/resources', query({ resourceType: 'folder' }), key));
      expect(folders.body.resources).toEqual([]);
      const byExternal = await ok(call(base, 'POST', '/lookup/resources', query({ actor: { externalId: 'alice' } }), key));
      expect(byExternal.body.resources.map((r: { id: string }) => r.id)).toEqual(w.docs);
      // Evaluate agrees on each resource of the tenant (the one denied by policy included).
      for (const id of [w.denied, ...w.docs.slice(0, 3)]) {
        const d = await ok(call(base, 'POST', '/evaluate', query({ resource: { resourceId: id } }), key));
        expect(d.body.allowed).toBe(id !== w.denied);
      }
    }
  });

  it('answers the next page at the listing\'s revision once a write moved the tenant at the control plane; a sidecar refuses it', async () => {
    const first = await Promise.all(targets().map(([, base, key]) => ok(call(base, 'POST', '/lookup/resources', query({ pageSize: 5, consistency: { minRevision: w.revision } }), key))));
    const role = await ok(call(w.cp, 'POST', '/roles', { scopeId: w.scopeId, key: 'unused', name: 'Unused' }));
    const moved = revisionOf(role);
    for (const [i, [name, base, key]] of targets().entries()) {
      // The process learns the write first (a fresh listing waits for it).
      await ok(call(base, 'POST', '/lookup/resources', query({ pageSize: 1, consistency: { minRevision: moved } }), key));
      const next = await call(base, 'POST', '/lookup/resources', query({ pageSize: 100, cursor: nextCursorOf(first[i]) }), key);
      if (name === 'control plane') {
        // Read from the history: the rest of the listing, at the first page's revision.
        expect([next.status, next.body.revision, next.headers.get('x-revision')], name).toEqual([200, first[i].body.revision, String(first[i].body.revision)]);
        expect([...first[i].body.resources, ...next.body.resources].map((r: { id: string }) => r.id)).toEqual(w.docs);
        continue;
      }
      expect([next.status, next.body.code, next.body.details?.[0]?.field], name).toEqual([400, 'failed_precondition', 'cursor']);
      expect(next.body.message).toContain(`moved from revision ${first[i].body.revision}`);
      expect(next.body.message).toContain(`to revision ${moved}`);
      expect(next.body.message).toContain('start the listing again');
      expect(next.body.details?.[0]).toMatchObject({ type: 'authz.v1.ErrorInfo', reason: 'ERROR_REASON_CONSTRAINT', field: 'cursor' });
      // gRPC says the same.
      const grpc = await createClient(DecisionService, createGrpcTransport({ baseUrl: base }))
        .lookupResources({ actor: { subjectId: w.alice }, scopeId: w.scopeId, action: 'read', pageSize: 5, cursor: nextCursorOf(first[i]) }, { headers: { 'x-api-key': key } })
        .then(() => undefined, (e: unknown) => ConnectError.from(e));
      expect(grpc?.rawMessage).toBe(next.body.message);
      expect(grpc?.findDetails(ErrorInfoSchema)[0]?.field).toBe('cursor');
    }
    w.revision = moved;
  });

  it('refuses a cursor that is not one, or one of another listing, and bad page sizes, naming the field', async () => {
    for (const [name, base, key] of targets()) {
      const page = await ok(call(base, 'POST', '/lookup/resources', query({ pageSize: 2, consistency: { minRevision: w.revision } }), key));
      const forged = Buffer.from(JSON.stringify({ v: 1, r: 'x', a: 'y', q: 'z' })).toString('base64url');
      for (const cursor of ['not a cursor', 'bm90IGpzb24', forged, 'x'.repeat(5000)]) {
        const bad = await call(base, 'POST', '/lookup/resources', query({ cursor }), key);
        expect([bad.status, bad.body.code, bad.body.details?.[0]?.field], `${name} ${cursor.slice(0, 20)}`).toEqual([400, 'invalid_argument', 'cursor']);
      }
      const otherListing = await call(base, 'POST', '/lookup/resources', query({ action: 'write', cursor: nextCursorOf(page) }), key);
      expect([otherListing.status, otherListing.body.details?.[0]?.field]).toEqual([400, 'cursor']);
      for (const pageSize of [-1, 1001, 1.5]) {
        const bad = await call(base, 'POST', '/lookup/resources', query({ pageSize }), key);
        expect([bad.status, bad.body.code, bad.body.details?.[0]?.field], `${name} pageSize ${pageSize}`).toEqual([400, 'invalid_argument', 'pageSize']);
      }
      const noAction = await call(base, 'POST', '/lookup/resources', query({ action: '' }), key);
      expect([noAction.status, noAction.body.details?.[0]?.field]).toEqual([400, 'action']);
      const unknownScope = await call(base, 'POST', '/lookup/resources', query({ scopeId: 'scope_nope' }), key);
      const unknownScopeEvaluate = await call(base, 'POST', '/evaluate', query({ scopeId: 'scope_nope' }), key);
      expect([unknownScope.status, unknownScope.body.code]).toEqual([unknownScopeEvaluate.status, unknownScopeEvaluate.body.code]);
    }
  });

  it('refuses a key or a scope of another tenant as Evaluate refuses it', async () => {
    // The control plane: tenant A's scope with tenant B's service key.
    const lookup = await call(w.cp, 'POST', '/lookup/resources', query(), w.otherKey);
    const evaluate = await call(w.cp, 'POST', '/evaluate', query(), w.otherKey);
    expect(evaluate.status).toBe(403);
    expect([lookup.status, lookup.body.code, lookup.body.message]).toEqual([evaluate.status, evaluate.body.code, evaluate.body.message]);
    const noKey = await call(w.cp, 'POST', '/lookup/resources', query(), null);
    expect(noKey.status).toBe(401);
    // The sidecar: a scope of another tenant.
    const atSidecar = await call(w.sidecar, 'POST', '/lookup/resources', query({ scopeId: w.otherScopeId }));
    const evaluateAtSidecar = await call(w.sidecar, 'POST', '/evaluate', query({ scopeId: w.otherScopeId }));
    expect(evaluateAtSidecar.status).toBe(403);
    expect([atSidecar.status, atSidecar.body.code]).toEqual([evaluateAtSidecar.status, evaluateAtSidecar.body.code]);
  });
});
