/**
 * Where a Watch snapshot's time goes on the control plane, per row, phase by phase, over a tenant
 * of N resources (inserted straight into the table): reading pages through the ORM (`em.find`,
 * 2,000 a page) or with plain SQL (`tenantRows`, a cursor read 500 rows a batch), turning rows into
 * entities (proto JSON), encoding the chunks (protobuf-es `toBinary`, or by hand as
 * `snapshotChunks` does), gzip of the encoded
 * chunks (what connect-node does when the client accepts it), and decoding them (the sidecar's
 * `fromBinary`). The phases run interleaved `--rounds` times, so that a loaded machine slows all
 * alike.
 *
 * Usage: DATABASE_URL=postgres://… tsx bench/watch-phases.ts [--resources 200000 --rounds 3]
 */
import { gzipSync } from 'node:zlib';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import type { EntityManager } from '@mikro-orm/postgresql';
import { WatchResponseSchema, type Entity } from '../gen/authz/v1/snapshot_service_pb.js';
import { KINDS, messageToChangeData, type KindDef, type Row } from '../services/store/kinds.js';
import { ChunkEntities, rowEntity } from '../services/control-plane/watch/snapshot.js';
import { tenantRows } from '../services/store/tenant-rows.js';
import { ENGINE_STORE_KINDS } from '../services/control-plane/engine-kinds.js';
import { restClient } from '../test/watch-fixtures.js';
import { startTestControlPlane, TEST_BOOTSTRAP_KEY } from '../test/harness.js';
import { runAsDeployed } from './as-deployed.js';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i].replace(/^--/, ''), process.argv[i + 1]);
const N = Number(args.get('resources') ?? 200_000);
const ROUNDS = Number(args.get('rounds') ?? 3);
if (!process.env.DATABASE_URL) throw new Error('set DATABASE_URL');

// The control plane in this process runs with its deployed V8 flags.
runAsDeployed();
const cp = await startTestControlPlane('postgres');
try {
  const rest = restClient(cp.url, TEST_BOOTSTRAP_KEY);
  const tenant = await rest('POST', '/tenants', { name: 'phases' });
  const type = await rest('POST', '/resource-types', { name: 'Doc', key: 'doc', scopeId: tenant.scopeId });
  await cp.db.orm.em.fork().execute(
    `insert into resources (id, tenant_id, created_at, created_by, resource_type_id, owner_scope_id, external_resource_id, display_name, attributes)
     select 'resource_0192f3a4-0000-7000-8000-' || lpad(g::text, 12, '0'), ?, now(), 'bench', ?, ?, 'doc-' || g, 'Document ' || g, jsonb_build_object('n', g, 'team', 'eng')
     from generate_series(1, ?) g`,
    [tenant.id, type.id, tenant.scopeId, N],
  );
  await cp.db.orm.em.fork().execute('analyze resources');
  const d = KINDS.resource as KindDef;
  const us = (ms: number) => ((ms * 1000) / N).toFixed(2);

  async function orm(): Promise<number> {
    const em = cp.db.orm.em.fork();
    const t = performance.now();
    for (let after = ''; ;) {
      const page = (await em.find(d.entity, { tenantId: tenant.id, id: { $gt: after } } as never, { orderBy: { id: 'asc' } as never, limit: 2000, disableIdentityMap: true })) as Row[];
      for (const r of page) JSON.stringify(messageToChangeData(d, r));
      if (page.length < 2000) break;
      after = page[page.length - 1].id as string;
    }
    return performance.now() - t;
  }

  async function sql(): Promise<{ read: number; convert: number; entities: Entity[] }> {
    let read = 0;
    let convert = 0;
    const entities: Entity[] = [];
    let t = performance.now();
    for await (const batch of tenantRows(cp.db, tenant.id, ENGINE_STORE_KINDS, { rows: 500 }, () => undefined)) {
      read += performance.now() - t;
      t = performance.now();
      if (batch.kind === 'resource') for (const text of batch.texts) entities.push(rowEntity('resource', batch.columns.row(text)));
      convert += performance.now() - t;
      t = performance.now();
    }
    return { read, convert, entities };
  }

  for (let round = 1; round <= ROUNDS; round++) {
    const ormMs = await orm();
    const { read, convert, entities } = await sql();
    // Chunks of about 4 MiB, as the stream cuts them.
    const per = Math.max(1, Math.floor((4 * 1024 * 1024) / (entities[0].json.length + entities[0].id.length + 40)));
    let t = performance.now();
    const bins: Uint8Array[] = [];
    for (let i = 0; i < entities.length; i += per) {
      const chunk = { tenantId: tenant.id, revision: 1n, index: bins.length, last: false, entities: entities.slice(i, i + per), resourceScopeGate: 'off' };
      bins.push(toBinary(WatchResponseSchema, create(WatchResponseSchema, { event: { case: 'snapshot', value: chunk } })));
    }
    const encode = performance.now() - t;
    const bytes = bins.reduce((n, b) => n + b.length, 0);
    // The same chunks with their entities encoded by hand (what snapshotChunks does).
    t = performance.now();
    for (let i = 0; i < entities.length; i += per) {
      const enc = new ChunkEntities(4 * 1024 * 1024);
      for (const e of entities.slice(i, i + per)) enc.add(e.kind, e.id, e.json);
      const chunk = create(WatchResponseSchema, { event: { case: 'snapshot', value: { tenantId: tenant.id, revision: 1n, index: 0, last: false, resourceScopeGate: 'off' } } });
      (chunk.event.value as { $unknown?: unknown }).$unknown = enc.take();
      toBinary(WatchResponseSchema, chunk);
    }
    const byHand = performance.now() - t;
    t = performance.now();
    let gz = 0;
    for (const b of bins) gz += gzipSync(b).length;
    const gzip = performance.now() - t;
    t = performance.now();
    for (const b of bins) fromBinary(WatchResponseSchema, b);
    const decode = performance.now() - t;
    console.log(`round ${round}, ${N} resources, µs per row: ORM page+JSON ${us(ormMs)} | SQL page ${us(read)} + JSON ${us(convert)} = ${us(read + convert)} | ` +
      `toBinary ${us(encode)}, by hand ${us(byHand)} | gzip ${us(gzip)} (${(bytes / 1048576).toFixed(0)} → ${(gz / 1048576).toFixed(0)} MiB) | fromBinary ${us(decode)}`);
  }
} finally {
  await cp.close();
}
