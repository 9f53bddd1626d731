/**
 * Bytes of history per change: a workload of single-row writes (creates, updates, deletes of
 * subjects with metadata, one revision each, as API calls make them) on a fresh PostgreSQL
 * database, then the change log's size (table, TOAST and indexes) and the writers' table per
 * change-log row. `--root DIR` runs the same workload with the store of another checkout (the
 * figure before this change: `--root /path/to/older/checkout`).
 *
 * Usage: tsx bench/history-bytes.ts [--writes 6000] [--root DIR]
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { pino } from 'pino';
import { createScratchDatabase } from '../test/databases.js';

const arg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? undefined : process.argv[i + 1];
};
const WRITES = Number(arg('writes') ?? 6000);
const ROOT = resolve(arg('root') ?? resolve(import.meta.dirname, '..'));
const load = (path: string) => import(pathToFileURL(resolve(ROOT, path)).href);

const { openDatabase } = await load('services/store/db.ts');
const { runWrite } = await load('services/store/write.ts');
const admin = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const scratch = await createScratchDatabase(admin, 'authz_bench_history');
const db = await openDatabase({ databaseUrl: scratch.url, logger: pino({ level: 'silent' }), createDatabase: false });
try {
  const tenantId = 'tenant_bench';
  await runWrite(db, async (tx: any) => {
    await tx.insert('tenant', [{ id: tenantId, name: 'bench', scopeId: `scope_${tenantId}`, revision: 0, createdAt: new Date(), createdBy: 'bench' }]);
    await tx.useNewTenant(tenantId);
    await tx.insert('scope', [{ id: `scope_${tenantId}`, tenantId, name: 'bench', typeId: 'scope_type_tenant', parentId: null, createdAt: new Date(), createdBy: 'bench' }]);
  });
  // A third each: creates, then updates of those, then deletes of half the rest.
  const live: Record<string, unknown>[] = [];
  const writer = { keyId: 'apk_01a22248-308f-7013-a0b4-1725ed24faec', subjectId: 'subject_01a22248-308f-7014-8220-cc792bdbf297', reason: null };
  for (let i = 0; i < WRITES; i++) {
    const phase = Math.floor((3 * i) / WRITES);
    await runWrite(db, async (tx: any) => {
      await tx.useTenant(tenantId);
      if (phase === 0 || live.length === 0) {
        const row = { id: `subject_${String(i).padStart(8, '0')}-3778-71df-b2d3-29c296fc47ff`, tenantId, type: 'user', externalId: `user-${i}@example.com`, metadata: { team: `team-${i % 17}`, level: i % 5 }, createdAt: new Date(), createdBy: writer.subjectId };
        await tx.insert('subject', [row]);
        live.push(row);
      } else if (phase === 1) {
        const row = live[i % live.length];
        const patch = { metadata: { team: `team-${(i + 3) % 17}`, level: i % 5 } };
        await tx.update('subject', row, patch);
        Object.assign(row, patch);
      } else {
        const row = live.pop()!;
        await tx.delete('subject', [row.id]);
      }
    }, writer);
  }
  const em = db.orm.em.fork();
  await em.execute('vacuum analyze change_log');
  const [log] = (await em.execute(`select count(*)::int as rows, pg_table_size('change_log')::bigint as heap, pg_indexes_size('change_log')::bigint as indexes from change_log`)) as { rows: number; heap: string; indexes: string }[];
  const [writers] = (await em.execute(`select coalesce(pg_total_relation_size(to_regclass('revisions')), 0)::bigint as bytes`)) as { bytes: string }[];
  const per = (n: string | number) => (Number(n) / log.rows).toFixed(0);
  const total = Number(log.heap) + Number(log.indexes) + Number(writers.bytes);
  console.log(`${ROOT}: ${log.rows} change-log rows from ${WRITES} writes`);
  console.log(`  change_log table (with TOAST): ${per(log.heap)} B/change; its indexes: ${per(log.indexes)} B/change; revisions: ${per(writers.bytes)} B/change; total ${per(total)} B/change`);
} finally {
  await db.close();
  await scratch.drop();
}
