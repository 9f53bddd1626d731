/**
 * A decision a month back on a tenant of about 100,000 entities, in process, side by side with a
 * decision of the present. The tenant (`--subjects`, `--resources`, `--grants`: 20,000 / 50,000 /
 * 30,000 by default, inserted with generate_series) then gets `--writes` single-row writes (each
 * its own revision: updates of resources' attributes, grants created and deleted), whose commit
 * times are then spread evenly over the last 30 days. Reported:
 * - the present: the index's first load (snapshot) and one decision;
 * - a month back (`consistency.atTime` 30 days ago, every write after it undone): the revision
 *   lookup, the past index's build (the same snapshot plus the replay), a decision on it, and a
 *   decision once it is kept;
 * - bytes of history per change of this workload (change log, its indexes and the writers).
 *
 * Usage: DATABASE_URL=postgres://… tsx bench/point-in-time.ts [--writes 3000 --subjects 20000 …]
 */
import { evaluate } from '../services/engine/mod.js';
import { TenantIndexes } from '../services/control-plane/decision/indexes.js';
import { PastIndexes } from '../services/control-plane/decision/past-indexes.js';
import { runWrite } from '../services/store/write.js';
import { startTestControlPlane } from '../test/harness.js';
import { insertBigTenant } from './big-tenant.js';
import { runAsDeployed } from './as-deployed.js';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i].replace(/^--/, ''), process.argv[i + 1]);
const SUBJECTS = Number(args.get('subjects') ?? 20_000);
const RESOURCES = Number(args.get('resources') ?? 50_000);
const GRANTS = Number(args.get('grants') ?? 30_000);
const WRITES = Number(args.get('writes') ?? 3_000);
if (!process.env.DATABASE_URL) throw new Error('set DATABASE_URL');

const uuid = (n: number) => `0192f3a4-0000-7000-8000-${String(n).padStart(12, '0')}`;
const ms = (t0: number) => `${(performance.now() - t0).toFixed(1)} ms`;

/** Median of `runs` timings of `f`, µs. */
function micros(f: () => unknown, runs = 2_000): number {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    f();
    times.push((performance.now() - t0) * 1000);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(runs / 2)];
}

runAsDeployed();
const cp = await startTestControlPlane('postgres');
try {
  const { tenantId, scopeId } = await insertBigTenant(cp, { resources: RESOURCES, grants: GRANTS, subjects: SUBJECTS });
  const em = cp.db.orm.em.fork();
  const [role] = (await em.execute('select id from roles where tenant_id = ?', [tenantId])) as { id: string }[];
  const t0 = performance.now();
  for (let i = 1; i <= WRITES; i++) {
    await runWrite(cp.db, async (tx) => {
      await tx.useTenant(tenantId);
      const n = (i * 7919) % RESOURCES + 1;
      if (i % 3 === 0) {
        await tx.insert('ownershipGrant', [{ id: `ownership_grant_${uuid(GRANTS + i)}`, tenantId, createdAt: new Date(), createdBy: 'bench', subjectId: `subject_${uuid(i % SUBJECTS + 1)}`, resourceId: `resource_${uuid(n)}`, roleId: role.id }]);
      } else if (i % 3 === 1) {
        await tx.delete('ownershipGrant', [`ownership_grant_${uuid(i)}`]);
      } else {
        const row = { id: `resource_${uuid(n)}`, tenantId, resourceTypeId: '', ownerScopeId: scopeId, externalResourceId: `doc-${n}`, displayName: `Document ${n}`, attributes: { n, team: 'eng' }, createdAt: new Date(), createdBy: 'bench' };
        const [stored] = (await em.execute('select resource_type_id from resources where id = ?', [row.id])) as { resource_type_id: string }[];
        await tx.update('resource', { ...row, resourceTypeId: stored.resource_type_id }, { attributes: { n, team: i % 2 === 0 ? 'ops' : 'eng' } });
      }
    });
  }
  console.log(`${WRITES} writes in ${ms(t0)}`);
  // Spread the writes over the last 30 days, oldest first (commit times as a month of traffic).
  const [{ revision }] = (await em.execute('select revision from tenants where id = ?', [tenantId])) as { revision: string }[];
  const committed = Number(revision);
  const month = 30 * 86_400_000;
  await em.execute(
    `update revisions set created_at = now() - ((? - revision) * (?::float / ?)) * interval '1 millisecond' where tenant_id = ?`,
    [committed, month, WRITES, tenantId],
  );
  await em.execute('vacuum analyze change_log');
  await em.execute('vacuum analyze revisions');

  const indexes = new TenantIndexes(cp.db, { minRevisionWaitMs: 1000, maxRows: 10_000_000 });
  let t = performance.now();
  const present = await indexes.get(tenantId);
  console.log(`present: first load of the index (snapshot of ${committed} revisions' state) ${ms(t)}`);
  const request = { actor: { subjectId: `subject_${uuid(2)}` }, scopeId, action: 'edit', resource: { resourceId: `resource_${uuid(2)}` } };
  const now = new Date();
  const presentUs = micros(() => evaluate(present, request, { now, gate: 'off' }));
  console.log(`present: one decision ${presentUs.toFixed(2)} µs`);

  const past = new PastIndexes(cp.db, { maxIndexes: 2, maxRows: 10_000_000 });
  const at = { time: new Date(Date.now() - month + 60_000), field: 'consistency.atTime' };
  t = performance.now();
  const pastRevision = await past.revisionOf(tenantId, at);
  console.log(`a month back: revision ${pastRevision} of ${committed} found in ${ms(t)} (${committed - pastRevision} revisions to undo)`);
  const [{ n: changed }] = (await em.execute('select count(distinct (kind, entity_id))::int as n from change_log where tenant_id = ? and revision > ?', [tenantId, pastRevision])) as { n: number }[];
  t = performance.now();
  const cpu = process.cpuUsage();
  const old = await past.at(tenantId, pastRevision, at.field);
  const c = process.cpuUsage(cpu);
  console.log(`a month back: past index built in ${ms(t)} (CPU ${((c.user + c.system) / 1000).toFixed(0)} ms; ${changed} entities put back)`);
  const pastUs = micros(() => evaluate(old, request, { now, gate: 'off' }));
  console.log(`a month back: one decision on it ${pastUs.toFixed(2)} µs (${(pastUs / presentUs).toFixed(2)}× the present's)`);
  t = performance.now();
  await past.at(tenantId, pastRevision, at.field);
  console.log(`a month back, kept: index found in ${ms(t)}`);

  const [sizes] = (await em.execute(
    `select (select count(*) from change_log where tenant_id = ?)::int as changes,
       pg_total_relation_size('change_log')::bigint as log, pg_total_relation_size('revisions')::bigint as writers`,
    [tenantId],
  )) as { changes: number; log: string; writers: string }[];
  console.log(`history: ${sizes.changes} changes, ${((Number(sizes.log) + Number(sizes.writers)) / sizes.changes).toFixed(0)} B per change (log, indexes, writers; the bulk-inserted rows have none)`);
} finally {
  await cp.close();
}
