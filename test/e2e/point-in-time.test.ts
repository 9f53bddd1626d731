/**
 * Point-in-time decisions on every surface of a control plane (REST on the lean path, Connect
 * JSON and binary, gRPC, gRPC-Web): `consistency.atRevision` and `atTime` give the same answer
 * everywhere, the answer of the state at that revision, and the same refusals naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { startTestControlPlane, TEST_BOOTSTRAP_KEY, BACKENDS, backendAvailable } from '../harness.js';
import { SURFACES, evaluateOn, type Outcome } from '../conformance/surfaces.js';
import { restClient, revisionOf } from '../rest-client.js';

const { call, ok } = restClient(TEST_BOOTSTRAP_KEY);
const KEY = { 'x-api-key': TEST_BOOTSTRAP_KEY };

for (const backend of BACKENDS) {
  describe.skipIf(!backendAvailable(backend))(`point-in-time decisions on every surface (${backend})`, () => {
    let cp: Awaited<ReturnType<typeof startTestControlPlane>>;
    const w = {} as { scopeId: string; alice: string; doc: string; before: number; between: number; after: number };

    beforeAll(async () => {
      cp = await startTestControlPlane(backend);
      const post = (path: string, body: unknown) => ok(call(cp.url, 'POST', path, body));
      const tenant = (await post('/tenants', { name: 'past' })).body;
      w.scopeId = tenant.scopeId;
      w.alice = (await post('/subjects', { tenantId: tenant.id, type: 'user', externalId: 'alice' })).body.id;
      const type = (await post('/resource-types', { scopeId: w.scopeId, key: 'doc', name: 'Doc' })).body;
      w.doc = (await post('/resources', { resourceTypeId: type.id, ownerScopeId: w.scopeId, externalResourceId: 'readme' })).body.id;
      const role = (await post('/roles', { scopeId: w.scopeId, key: 'reader', name: 'Reader' })).body;
      const permission = (await post('/permissions', { scopeId: w.scopeId, action: 'read', resourceType: 'doc', resourcePattern: '*' })).body;
      w.before = revisionOf(await post('/role-permissions', { roleId: role.id, permissionId: permission.id }));
      await new Promise((r) => setTimeout(r, 20));
      w.between = Date.now();
      await new Promise((r) => setTimeout(r, 20));
      const membership = (await post('/memberships', { subjectId: w.alice, scopeId: w.scopeId })).body;
      w.after = revisionOf(await post('/role-assignments', { membershipId: membership.id, roleId: role.id }));
    }, 60_000);
    afterAll(() => cp?.close());

    const ask = (consistency: Record<string, unknown>) =>
      ({ actor: { subjectId: w.alice }, scopeId: w.scopeId, action: 'read', resource: { resourceId: w.doc }, consistency }) as never;

    /** The outcome on every surface; all must agree. */
    async function everywhere(consistency: Record<string, unknown>): Promise<Outcome> {
      const outcomes = await Promise.all(SURFACES.map((s) => evaluateOn(s, cp.url, ask(consistency), KEY)));
      for (const [i, o] of outcomes.entries()) expect(o, `${SURFACES[i]} differs from rest`).toEqual(outcomes[0]);
      return outcomes[0];
    }

    it('answers at a past revision and at a past time as the tenant was then, the same on every surface', async () => {
      expect(await everywhere({})).toMatchObject({ ok: { allowed: true, reason: 'role', revision: w.after } });
      expect(await everywhere({ atRevision: BigInt(w.before) })).toMatchObject({ ok: { allowed: false, reason: 'no_match', revision: w.before } });
      expect(await everywhere({ atTime: timestampFromMs(w.between) })).toMatchObject({ ok: { allowed: false, revision: w.before } });
      expect(await everywhere({ atRevision: BigInt(w.after) })).toMatchObject({ ok: { allowed: true, revision: w.after } });
    });

    it('refuses a revision not committed yet and a mix with minRevision, naming the field, the same on every surface', async () => {
      expect(await everywhere({ atRevision: 1_000_000n })).toMatchObject({ error: { code: 'InvalidArgument', field: 'consistency.atRevision' } });
      expect(await everywhere({ atTime: timestampFromMs(w.between), minRevision: 1n })).toMatchObject({ error: { code: 'InvalidArgument', field: 'consistency.atTime' } });
    });
  });
}
