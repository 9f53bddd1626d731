/**
 * The consistency modes of the control plane's decisions (README, "Consistency"), between two
 * replicas on one PostgreSQL database: a replica answers at the revision it knows from NOTIFY;
 * while a commit's NOTIFY is still on its way (held here), a plain decision answers from the
 * earlier revision, `minRevision` waits for the commit, and `fullyConsistent` asks the database
 * and answers from it at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANGE_CHANNEL } from '../../store/notifications.js';
import { startTestControlPlane, TEST_BOOTSTRAP_KEY } from '../../../test/harness.js';

type CP = Awaited<ReturnType<typeof startTestControlPlane>>;

describe.skipIf(!process.env.DATABASE_URL)('consistency modes across two replicas (postgres)', () => {
  let a: CP;
  let b: CP;
  beforeAll(async () => {
    a = await startTestControlPlane('postgres');
    b = await startTestControlPlane('postgres', { DATABASE_URL: a.db.orm.config.get('clientUrl') as string });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  const call = async (cp: CP, path: string, body: unknown) => {
    const res = await fetch(cp.url + path, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TEST_BOOTSTRAP_KEY }, body: JSON.stringify(body) });
    const json = (await res.json()) as Record<string, unknown>;
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
    return { json, revision: Number(res.headers.get('x-revision')) };
  };

  it('answers a plain decision at the known revision, minRevision after waiting, fullyConsistent from the database', async () => {
    const tenant = (await call(a, '/tenants', { name: 'modes' })).json;
    const scopeId = tenant.scopeId as string;
    const subject = (await call(a, '/subjects', { tenantId: tenant.id, type: 'user', externalId: 'u' })).json;
    const role = (await call(a, '/roles', { scopeId, key: 'reader' })).json;
    const permission = (await call(a, '/permissions', { scopeId, action: 'read', resourceType: 'doc', resourcePattern: '*' })).json;
    await call(a, '/role-permissions', { roleId: role.id, permissionId: permission.id });
    const membership = await call(a, '/memberships', { subjectId: subject.id, scopeId });
    const ask = { actor: { subjectId: subject.id }, scopeId, action: 'read' };
    // B knows the tenant at the membership's revision.
    await expect.poll(async () => (await call(b, '/evaluate', ask)).json.revision).toBe(membership.revision);

    // Hold B's commit notifications, as if the next one were still in flight.
    const n = b.db.notifications as unknown as { dispatch(channel: string, payload: string): void };
    const dispatch = n.dispatch.bind(n);
    const held: [string, string][] = [];
    n.dispatch = (channel, payload) => (channel === CHANGE_CHANNEL ? void held.push([channel, payload]) : dispatch(channel, payload));
    try {
      const grant = await call(a, '/role-assignments', { membershipId: membership.json.id, roleId: role.id });
      await expect.poll(() => held.length).toBeGreaterThan(0);

      const plain = (await call(b, '/evaluate', ask)).json;
      expect([plain.allowed, plain.revision]).toEqual([false, membership.revision]);
      const full = (await call(b, '/evaluate', { ...ask, consistency: { fullyConsistent: true } })).json;
      expect([full.allowed, full.revision]).toEqual([true, grant.revision]);
      // After a fully consistent read, B answers from that revision (it never goes back).
      expect((await call(b, '/evaluate', ask)).json.revision).toBeGreaterThanOrEqual(grant.revision);

      // A minRevision ahead of what B knows: waits, and is answered once B has caught up.
      const revoke = await fetch(`${a.url}/role-assignments/${grant.json.id as string}`, { method: 'DELETE', headers: { 'x-api-key': TEST_BOOTSTRAP_KEY } });
      const revoked = Number(revoke.headers.get('x-revision'));
      const waiting = call(b, '/evaluate', { ...ask, consistency: { minRevision: revoked } });
      await new Promise((r) => setTimeout(r, 100));
      for (const [c, p] of held.splice(0)) dispatch(c, p);
      n.dispatch = dispatch;
      const after = (await waiting).json;
      expect([after.allowed, after.revision]).toEqual([false, revoked]);
    } finally {
      n.dispatch = dispatch;
    }
  });
});
