/**
 * What one tenant's decision index costs the control plane to build, one build at a time in
 * this process (services/control-plane/decision/indexes.ts on PostgreSQL): wall time, this
 * process's CPU and PostgreSQL's (every backend of the server: run it alone) per build, for
 * `--tenants` tenants of about 1,000 rows (many-tenants-seed.ts), `--rounds` times, each round
 * a fresh cache. For a before/after of the whole-tenant read (services/store/tenant-rows.ts).
 *
 * Usage: DATABASE_URL=postgres://… npx tsx bench/index-builds.ts [--tenants 300 --rounds 3]
 */
import { createScratchDatabase } from '../test/databases.js';
import { postgresCpuMs } from '../test/processes.js';
import { openDatabase } from '../services/store/db.js';
import { TenantIndexes } from '../services/control-plane/decision/indexes.js';
import { benchArgs } from './args.js';
import { idOf, seedTenants, shapeOf } from './many-tenants-seed.js';

const args = benchArgs();
const TENANTS = Number(args.get('tenants') ?? 300);
const ROUNDS = Number(args.get('rounds') ?? 3);
if (!process.env.DATABASE_URL) throw new Error('set DATABASE_URL');

const scratch = await createScratchDatabase(process.env.DATABASE_URL, 'authz_bench_builds');
try {
  const db = await openDatabase({ databaseUrl: scratch.url, dataDir: 'memory://' });
  try {
    await seedTenants(scratch.url, TENANTS + 1, shapeOf(1000));
    for (let r = 0; r < ROUNDS; r++) {
      const indexes = new TenantIndexes(db, { minRevisionWaitMs: 0, maxRows: 1e12 });
      await indexes.get(idOf('tenant', 1, 0)); // the code and caches of a first build
      const cpu0 = process.cpuUsage();
      const pg0 = postgresCpuMs();
      const t0 = performance.now();
      for (let t = 2; t <= TENANTS + 1; t++) await indexes.get(idOf('tenant', t, 0));
      const wall = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      const pg = postgresCpuMs() - pg0;
      const per = (x: number) => (x / TENANTS).toFixed(2);
      console.log(`round ${r + 1}: per build ${per(wall)} ms wall, ${per((cpu.user + cpu.system) / 1000)} ms CPU, PostgreSQL ${per(pg)} ms CPU`);
    }
  } finally {
    await db.close();
  }
} finally {
  await scratch.drop();
}
