/**
 * The scale mode of bench:writes (`npm run bench:writes -- --scale`): one import of 1,000,000
 * resources and 1,000,000 ownership grants (with the 100,000 subjects they name) into a fresh
 * tenant on PostgreSQL, through the real control plane and the import client, as `authz import`
 * sends a file. Target: the whole file in at most 60 s. Reports the time per kind of line (from
 * the client's progress), entities per second, and the CPU each side used: this process (the
 * control plane and the client) and PostgreSQL's backends; the database is dropped at the end.
 *
 * Usage: npm run bench:writes -- --scale [--resources 1000000] [--grants 1000000] [--subjects 100000]
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import pg from 'pg';
import { pino } from 'pino';
import { startControlPlane, type ControlPlane } from '../services/control-plane/app.js';
import { loadConfig } from '../services/control-plane/config.js';
import { runWrite } from '../services/store/write.js';
import { importNdjson, type ImportProgress } from '../services/import/ndjson-client.js';
import { createScratchDatabase } from '../test/databases.js';
import { loadAverageNow, writeResults } from './results-file.js';

/** The whole import must take at most this long. */
export const SCALE_TARGET_SECONDS = 60;
const TENANT = 'tenant_scale';
const SCOPE = `scope_${TENANT}`;

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
}

/** Writes the NDJSON file: subjects, then resources, then grants (each naming lines above it). */
async function writeFile(path: string, subjects: number, resources: number, grants: number): Promise<void> {
  const out = createWriteStream(path);
  const write = async (text: string) => {
    if (!out.write(text)) await once(out, 'drain');
  };
  let chunk = '';
  const line = async (s: string) => {
    chunk += `${s}\n`;
    if (chunk.length > 1 << 20) {
      await write(chunk);
      chunk = '';
    }
  };
  for (let i = 0; i < subjects; i++) await line(`{"subject":{"type":"user","externalId":"user-${i}"}}`);
  for (let i = 0; i < resources; i++) {
    await line(`{"resource":{"type":"doc","externalId":"doc-${i}","displayName":"Document ${i}","attributes":{"department":"d${i % 50}","size":${i % 1000}}}}`);
  }
  for (let i = 0; i < grants; i++) {
    await line(`{"ownershipGrant":{"subject":{"externalId":"user-${i % subjects}"},"resource":{"type":"doc","externalId":"doc-${i % resources}"},"role":"owner"}}`);
  }
  await write(chunk);
  out.end();
  await once(out, 'finish');
}

const TICKS = 100;
/** CPU ms of every PostgreSQL backend of the database (see writes.ts), or null without /proc. */
async function postgresCpuMs(client: pg.Client): Promise<number | null> {
  const { rows } = await client.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database()');
  const { readFileSync } = await import('node:fs');
  let ticks = 0;
  try {
    for (const { pid } of rows) {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(f[11]) + Number(f[12]);
    }
  } catch {
    return null;
  }
  return (ticks * 1000) / TICKS;
}

export async function runScale(): Promise<void> {
  const loadAtStart = loadAverageNow();
  const resources = arg('resources', 1_000_000);
  const grants = arg('grants', 1_000_000);
  const subjects = arg('subjects', 100_000);
  const admin = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const { url, drop } = await createScratchDatabase(admin, 'authz_bench_scale');
  const dir = mkdtempSync(join(tmpdir(), 'authz-bench-scale-'));
  const file = join(dir, 'tenant.ndjson');
  let cp: ControlPlane | undefined;
  const watcher = new pg.Client({ connectionString: url });
  try {
    const secret = `sk_bench_${randomBytes(24).toString('hex')}`;
    cp = await startControlPlane(loadConfig({ DATABASE_URL: url, SERVICE_PORT: '0', SERVICE_BOOTSTRAP_API_KEY: secret, SERVICE_LOG_LEVEL: 'silent' }, []), pino({ level: 'silent' }));
    await runWrite(cp.db, async (tx) => {
      const now = new Date();
      const base = { tenantId: TENANT, createdAt: now, createdBy: 'bench' };
      await tx.insert('tenant', [{ id: TENANT, name: 'scale', scopeId: SCOPE, revision: 0, createdAt: now, createdBy: 'bench' }]);
      await tx.useTenant(TENANT);
      await tx.insert('scope', [{ ...base, id: SCOPE, name: 'root', typeId: 'scope_type_tenant', parentId: null }]);
      await tx.insert('resourceType', [{ ...base, id: 'resource_type_doc', name: 'Doc', key: 'doc', scopeId: SCOPE }]);
      await tx.insert('role', [{ ...base, id: 'role_owner', scopeId: SCOPE, key: 'owner', name: 'Owner', description: '' }]);
    });
    await watcher.connect();
    const t0 = performance.now();
    await writeFile(file, subjects, resources, grants);
    const bytes = statSync(file).size;
    console.log(`wrote ${file}: ${subjects.toLocaleString('en-US')} subjects, ${resources.toLocaleString('en-US')} resources, ${grants.toLocaleString('en-US')} grants, ${(bytes / 2 ** 20).toFixed(0)} MiB in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

    // Where the lines of each kind end, to time them from the client's progress.
    const ends = { subjects: subjects + 1, resources: subjects + resources + 1, grants: subjects + resources + grants + 1 };
    const reached: Record<string, number> = {};
    let last = 0;
    const cpu0 = process.cpuUsage();
    const pg0 = await postgresCpuMs(watcher);
    const start = performance.now();
    const result = await importNdjson({
      baseUrl: cp.server.url, apiKey: secret, tenantId: TENANT, importId: 'scale', source: file,
      onProgress: (p: ImportProgress) => {
        for (const [kind, end] of Object.entries(ends)) if (p.nextLine >= end && reached[kind] === undefined) reached[kind] = p.elapsedMs;
        if (p.elapsedMs - last > 5000) {
          last = p.elapsedMs;
          console.log(`  ${(p.elapsedMs / 1000).toFixed(0)} s: ${p.entities.toLocaleString('en-US')} entities, ${Math.round(p.rate).toLocaleString('en-US')}/s`);
        }
      },
    });
    const seconds = (performance.now() - start) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const pg1 = await postgresCpuMs(watcher);
    const entities = result.entities;
    const nodeCpuS = (cpu.user + cpu.system) / 1e6;
    const pgCpuS = pg0 !== null && pg1 !== null ? (pg1 - pg0) / 1000 : null;
    const phases = {
      subjectsS: Number(((reached.subjects ?? 0) / 1000).toFixed(1)),
      resourcesS: Number((((reached.resources ?? 0) - (reached.subjects ?? 0)) / 1000).toFixed(1)),
      grantsS: Number((((reached.grants ?? 0) - (reached.resources ?? 0)) / 1000).toFixed(1)),
    };
    const [counts] = (await watcher.query<{ r: number; g: number; s: number; l: number }>(
      "select (select count(*)::int from resources) as r, (select count(*)::int from ownership_grants) as g, (select count(*)::int from subjects where tenant_id = $1) as s, (select count(*)::int from change_log where tenant_id = $1 and kind in ('subject', 'resource', 'ownership_grant')) as l",
      [TENANT],
    )).rows;
    console.log(`imported ${entities.toLocaleString('en-US')} entities in ${seconds.toFixed(1)} s (${Math.round(entities / seconds).toLocaleString('en-US')}/s), ${result.batches} batches; ` +
      `subjects ${phases.subjectsS} s, resources ${phases.resourcesS} s, grants ${phases.grantsS} s`);
    console.log(`stored: ${counts.r} resources, ${counts.g} grants, ${counts.s} subjects, ${counts.l} change-log entries`);
    console.log(`CPU: this process (control plane and client) ${nodeCpuS.toFixed(1)} s, PostgreSQL backends ${pgCpuS?.toFixed(1) ?? '?'} s, over ${seconds.toFixed(1)} s on ${(await import('node:os')).cpus().length} CPUs`);
    const saved = {
      subjects, resources, grants, entities, seconds: Number(seconds.toFixed(1)), entitiesPerSecond: Math.round(entities / seconds), batches: result.batches,
      phases, nodeCpuSeconds: Number(nodeCpuS.toFixed(1)), postgresCpuSeconds: pgCpuS === null ? null : Number(pgCpuS.toFixed(1)), targetSeconds: SCALE_TARGET_SECONDS,
      stored: counts,
    };
    const command = ['npm run bench:writes --', ...process.argv.slice(2)].join(' ');
    console.log(`wrote ${writeResults('writes-scale', { command, results: saved, loadAtStart })}`);
    if (counts.r !== resources || counts.g !== grants || counts.l !== subjects + resources + grants) throw new Error('the import did not store every entity once');
    if (seconds > SCALE_TARGET_SECONDS) {
      console.error(`FAIL: the import took ${seconds.toFixed(1)} s; at most ${SCALE_TARGET_SECONDS} s is the target`);
      process.exitCode = 1;
    }
  } finally {
    await watcher.end().catch(() => undefined);
    await cp?.close();
    await drop();
    rmSync(dir, { recursive: true, force: true });
  }
}
