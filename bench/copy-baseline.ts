/**
 * What PostgreSQL alone takes to hand out a tenant's rows: for each kind a whole-tenant read
 * covers, `COPY (<the same select the control plane runs>) TO STDOUT` through `psql` into
 * /dev/null, all kinds in one `psql` call (one connection, as the control plane's read holds one).
 * The floor a cold start is measured against: the same rows, parsed by nobody.
 */
import { spawn } from 'node:child_process';
import { openSync, closeSync, readFileSync } from 'node:fs';
import type { Database } from '../services/store/db.js';
import { tenantRowSql } from '../services/store/tenant-rows.js';
import { ENGINE_STORE_KINDS } from '../services/control-plane/engine-kinds.js';

export interface CopyBaseline {
  /** Wall time of the `psql` call, connection included. */
  ms: number;
}

/**
 * CPU time of the PostgreSQL backends connected to `db`'s database (the control plane's pool)
 * from start() to stop(): PostgreSQL's share of a read, apart from what other databases of a
 * shared server do. Sampled every 100 ms, so that a backend that ends meanwhile (a pool's idle
 * connection) keeps what it had used when last seen.
 */
export class BackendCpu {
  private readonly first = new Map<number, number>();
  private readonly last = new Map<number, number>();
  private timer: NodeJS.Timeout | undefined;
  private sampling: Promise<void> = Promise.resolve();

  constructor(private readonly db: Database) {}

  private async sample(): Promise<void> {
    const rows = await this.db.orm.em.fork().execute<{ pid: number }[]>('select pid from pg_stat_activity where datname = current_database()');
    for (const { pid } of rows) {
      try {
        const f = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
        const ms = (Number(f[11]) + Number(f[12])) * 10; // utime + stime, clock ticks of 10 ms
        if (!this.first.has(pid)) this.first.set(pid, this.timer === undefined ? ms : 0);
        this.last.set(pid, ms);
      } catch {
        /* not on this machine, or gone */
      }
    }
  }

  async start(): Promise<void> {
    await this.sample();
    this.timer = setInterval(() => {
      this.sampling = this.sampling.then(() => this.sample()).catch(() => undefined);
    }, 100);
    this.timer.unref();
  }

  /** CPU (ms) the database's backends used since start(). */
  async stop(): Promise<number> {
    clearInterval(this.timer);
    await this.sampling;
    await this.sample();
    let ms = 0;
    for (const [pid, last] of this.last) ms += last - (this.first.get(pid) ?? 0);
    return ms;
  }
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
  return { ms: performance.now() - t0 };
}
