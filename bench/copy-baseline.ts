/**
 * What PostgreSQL alone takes to hand out a tenant's rows: for each kind a whole-tenant read
 * covers, `COPY (<the same select the control plane runs>) TO STDOUT` through `psql` into
 * /dev/null, all kinds in one `psql` call (one connection, as the control plane's read holds one).
 * The floor a cold start is measured against: the same rows, parsed by nobody.
 */
import { spawn } from 'node:child_process';
import { openSync, closeSync, readdirSync, readFileSync } from 'node:fs';
import type { Database } from '../services/store/db.js';
import { tenantRowSql } from '../services/store/tenant-rows.js';
import { ENGINE_STORE_KINDS } from '../services/control-plane/engine-kinds.js';

export interface CopyBaseline {
  /** Wall time of the `psql` call, connection included. */
  ms: number;
  /** CPU time PostgreSQL's processes used meanwhile. */
  postgresCpuMs: number;
}

/**
 * CPU time of PostgreSQL's processes so far, those that exited included: a `psql` call's backend
 * is gone when it ends, and its time is then its parent's (the postmaster's) children's time.
 */
export function postgresCpuMs(): number {
  const tick = 10; // ms per clock tick (USER_HZ 100 on Linux)
  let ms = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'postgres') continue;
      const f = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
      // utime, stime, and for the postmaster (whose parent is not postgres) its reaped children's.
      ms += (Number(f[11]) + Number(f[12])) * tick;
      const parent = readFileSync(`/proc/${f[1]}/comm`, 'utf8').trim();
      if (parent !== 'postgres') ms += (Number(f[13]) + Number(f[14])) * tick;
    } catch {
      /* gone meanwhile */
    }
  }
  return ms;
}

/** The `COPY` statements of a tenant's rows, the tenant's id written in as a literal. */
export function copyStatements(db: Database, tenantId: string): string[] {
  const literal = `'${tenantId.replace(/'/g, "''")}'`;
  return ENGINE_STORE_KINDS.map(([, kind]) => `COPY (${tenantRowSql(db, kind).replace('$1', literal)}) TO STDOUT`);
}

/** Runs the `COPY` statements with `psql` on the database `db` is connected to (admin URL: `adminUrl`). */
export async function copyBaseline(db: Database, adminUrl: string, tenantId: string): Promise<CopyBaseline> {
  const [{ name }] = await db.orm.em.fork().execute<{ name: string }[]>('select current_database() as name');
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const args = ['-X', '-q', '-v', 'ON_ERROR_STOP=1', url.toString()];
  for (const sql of copyStatements(db, tenantId)) args.push('-c', sql.replace(/\s+/g, ' '));
  const devNull = openSync('/dev/null', 'w');
  const pg0 = postgresCpuMs();
  const t0 = performance.now();
  try {
    await new Promise<void>((done, fail) => {
      const child = spawn('psql', args, { stdio: ['ignore', devNull, 'pipe'] });
      let err = '';
      child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
      child.on('error', fail);
      child.on('exit', (code) => (code === 0 ? done() : fail(new Error(`psql exited ${code}: ${err}`))));
    });
  } finally {
    closeSync(devNull);
  }
  return { ms: performance.now() - t0, postgresCpuMs: postgresCpuMs() - pg0 };
}
