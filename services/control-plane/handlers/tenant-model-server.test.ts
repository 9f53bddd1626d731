/**
 * TenantModelService on a real control plane: the REST paths, the tiers the server enforces
 * (a `service` key is refused), and a Watch client (what a sidecar follows) that sees a whole
 * apply as one revision: every change in one message, none before or after it.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { SnapshotService, type RevisionChanges } from '../../../gen/authz/v1/snapshot_service_pb.js';
import { Follower } from '../../../sidecar/follower.js';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { sidecarMetrics } from '../../../sidecar/metrics.js';
import { ENTITY_KINDS } from '../../engine/mod.js';
import { TenantIndexes } from '../decision/indexes.js';
import { describeEachBackend, startTestControlPlane, TEST_BOOTSTRAP_KEY } from '../../../test/harness.js';
import { indexDigest } from '../../../test/watch-fixtures.js';

async function until(cond: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const EXAMPLE = readFileSync(new URL('../../model/testdata/acme.yaml', import.meta.url), 'utf8');

describeEachBackend('TenantModelService on a real control plane (%s)', (backend) => {
  let cp: Awaited<ReturnType<typeof startTestControlPlane>>;
  beforeAll(async () => {
    cp = await startTestControlPlane(backend, { SERVICE_WATCH_HEARTBEAT_MS: '100' });
  });
  afterAll(() => cp?.close());

  const rest = async (method: string, path: string, body?: unknown, key = TEST_BOOTSTRAP_KEY) => {
    const res = await fetch(`${cp.url}${path}`, {
      method, headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown>, revision: res.headers.get('x-revision') };
  };
  const newTenant = async (name: string) => (await rest('POST', '/tenants', { name })).body as { id: string; revision: number };
  /** The control plane's own index of the tenant, built from the database. */
  const ownIndex = (tenantId: string) => new TenantIndexes(cp.db, { minRevisionWaitMs: 0, maxRows: 1e9 }).get(tenantId);
  const keyOf = async (tenantId: string, kind: string) => ((await rest('POST', '/api-keys', { name: kind, tenantId, kind })).body as { secretKey: string }).secretKey;

  it('serves plan, apply and export on their REST paths, to the tenant\'s user key; a service key is refused', async () => {
    const t = await newTenant(`rest-${backend}`);
    const user = await keyOf(t.id, 'user');
    const service = await keyOf(t.id, 'service');
    const doc = 'apiVersion: authz/v1\nkind: TenantModel\nsubjects: [{ externalId: ann, metadata: { team: a } }]\n';
    const at = (await rest('GET', `/tenants/${t.id}`)).body.revision as number;
    const plan = await rest('POST', `/tenants/${t.id}/model:plan`, { document: doc }, user);
    expect(plan).toMatchObject({ status: 200, body: { revision: at, changes: [{ kind: 'subject', action: 'create', key: 'subject ann', path: 'subjects[0]' }] } });
    const applied = await rest('POST', `/tenants/${t.id}/model:apply`, { document: doc, expectedRevision: at }, user);
    expect(applied).toMatchObject({ status: 200, body: { revision: at + 1 }, revision: String(at + 1) });
    const exported = await rest('GET', `/tenants/${t.id}/model?sections=subjects&format=json`, undefined, user);
    expect(exported.status).toBe(200);
    expect(JSON.parse(exported.body.document as string)).toEqual({ apiVersion: 'authz/v1', kind: 'TenantModel', subjects: [{ externalId: 'ann', metadata: { team: 'a' } }] });
    for (const [method, path, body] of [['POST', `/tenants/${t.id}/model:plan`, { document: doc }], ['POST', `/tenants/${t.id}/model:apply`, { document: doc }], ['GET', `/tenants/${t.id}/model`, undefined]] as const) {
      const refused = await rest(method, path, body, service);
      expect(refused.status, `${method} ${path}`).toBe(403);
      expect(refused.body.code).toBe('permission_denied');
    }
    const stale = await rest('POST', `/tenants/${t.id}/model:apply`, { document: doc, expectedRevision: at }, user);
    expect(stale).toMatchObject({ status: 409, body: { code: 'aborted' } });
  });

  it('reaches a Watch client, and a sidecar\'s follower, as one revision holding every change', async () => {
    const t = await newTenant(`watch-${backend}`);
    const service = await keyOf(t.id, 'service');
    const from = (await rest('GET', `/tenants/${t.id}`)).body.revision as number;
    const ac = new AbortController();
    const seen: RevisionChanges[] = [];
    let heartbeatsAfter = 0;
    const client = createClient(SnapshotService, createGrpcTransport({ baseUrl: cp.url }));
    const watching = (async () => {
      try {
        for await (const m of client.watch({ tenantId: t.id, fromRevision: BigInt(from) }, { signal: ac.signal, headers: { 'x-api-key': service } })) {
          if (m.event.case === 'changes') seen.push(m.event.value);
          if (m.event.case === 'heartbeat' && seen.length > 0 && ++heartbeatsAfter >= 3) break;
        }
      } catch (err) {
        if (ConnectError.from(err).code !== Code.Canceled) throw err;
      }
    })();
    const metrics = sidecarMetrics(new Registry(), () => follower);
    const follower: Follower = new Follower({ controlPlaneUrl: cp.url, apiKey: service, tenantId: t.id, maxStalenessMs: 5_000, logger: pino({ level: 'silent' }), metrics });
    follower.start();
    try {
      await until(() => follower.revision === from, 'the follower\'s snapshot');
      const applied = await rest('POST', `/tenants/${t.id}/model:apply`, { document: EXAMPLE });
      expect(applied.status).toBe(200);
      await watching;
      ac.abort();
      expect(seen.map((c) => Number(c.revision))).toEqual([applied.body.revision]);
      // Every change-log row of the revision the stream carries (decision data: not the scope
      // type, global, nor the resource type hierarchy, which only creates check).
      const logged = (await cp.db.orm.em.fork().execute('select kind from change_log where tenant_id = ? and revision = ?', [t.id, applied.body.revision])) as { kind: string }[];
      const carried = logged.filter((l) => (ENTITY_KINDS as readonly string[]).includes(l.kind));
      expect(carried.length).toBe((applied.body.changes as unknown[]).length - 3);
      expect(seen[0].changes.length).toBe(carried.length);
      await until(() => follower.revision === applied.body.revision, 'the follower at the applied revision');
      expect(await indexDigest(cp.db, t.id, follower.index!)).toBe(await indexDigest(cp.db, t.id, await ownIndex(t.id)));
    } finally {
      await follower.stop();
    }
  });
});
