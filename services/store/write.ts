import type { EntityProperty, EntitySchema } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { invalid, notFound } from '../common/errors.js';
import type { Database } from './db.js';
import { KINDS, messageToChangeData, type KindDef, type KindName, type Row } from './kinds.js';
import { ChangeLogEntity } from './schema.js';

export interface ChangeEntry {
  op: 'upsert' | 'delete';
  kind: string;
  id: string;
  data?: Record<string, unknown>;
}

/** The channel PostgreSQL NOTIFY wakes followers on; the payload is `<tenantId>:<revision>`. */
export const CHANGE_CHANNEL = 'authz_changes';

/**
 * One write transaction. The first write that names a tenant bumps that tenant's
 * revision (`UPDATE … RETURNING` row-locks the tenant until commit, so commit order equals
 * revision order); every change is appended to the change log under that revision at
 * commit. A transaction writes at most one existing tenant; the one exception is
 * `useNewTenant`, for tenants created by the transaction itself.
 */
export class WriteTx {
  readonly changes: ChangeEntry[] = [];
  tenantId?: string;
  revision?: number;
  /** Whether every tenant entered so far was created by this transaction (useNewTenant). */
  private onlyNewTenants = true;
  /** Earlier new tenants of this transaction and their changes, flushed with the current one. */
  private readonly finished: { tenantId: string; revision: number; changes: ChangeEntry[] }[] = [];

  constructor(readonly em: EntityManager) {}

  /** Locks and bumps the tenant's revision; a second, different tenant is refused. */
  async useTenant(tenantId: string, field = 'tenantId'): Promise<void> {
    if (this.tenantId === tenantId) return;
    if (this.tenantId !== undefined) {
      throw invalid(field, `belongs to tenant ${tenantId}, but this request writes tenant ${this.tenantId}: one request writes one tenant`);
    }
    this.onlyNewTenants = false;
    const rows = await this.em.execute<{ revision: string }[]>(
      'update tenants set revision = revision + 1 where id = ? returning revision',
      [tenantId],
    );
    if (rows.length === 0) throw notFound('tenant', tenantId, field);
    this.tenantId = tenantId;
    this.revision = Number(rows[0].revision);
  }

  /**
   * Enters a tenant this transaction has just inserted (at revision 0): moves it to revision 1
   * and makes it the tenant later changes are recorded for. Unlike useTenant, one transaction
   * may enter several new tenants in turn (a batch of tenants): nobody can have read or
   * followed a tenant that did not exist before this transaction, so their change logs (each
   * starting at revision 1) cannot interleave with another writer's. Refused once the
   * transaction has entered an existing tenant, and for a tenant not at revision 0.
   */
  async useNewTenant(tenantId: string, field = 'id'): Promise<void> {
    if (this.tenantId === tenantId) return;
    if (!this.onlyNewTenants) {
      throw invalid(field, `tenant ${tenantId} cannot be created in a request that writes existing tenant ${this.tenantId}`);
    }
    const rows = await this.em.execute<{ revision: string }[]>(
      'update tenants set revision = 1 where id = ? and revision = 0 returning revision',
      [tenantId],
    );
    if (rows.length === 0) throw new Error(`useNewTenant: tenant ${tenantId} is not a tenant inserted at revision 0 by this transaction`);
    if (this.tenantId !== undefined && this.revision !== undefined) {
      this.finished.push({ tenantId: this.tenantId, revision: this.revision, changes: this.changes.splice(0) });
    }
    this.tenantId = tenantId;
    this.revision = 1;
  }

  /** Inserts rows of one kind in one multi-row statement and records them. */
  async insert(kind: KindName, rows: Row[]): Promise<void> {
    if (rows.length === 0) return;
    const d = KINDS[kind] as KindDef;
    // The change-log data is built while PostgreSQL runs the insert (the yield lets the query
    // reach the socket first); a failed insert fails the transaction either way.
    const written = bulkInsert(this.em, d.entity, rows);
    try {
      await new Promise<void>((resolve) => setImmediate(resolve));
      this.record(d, 'upsert', rows);
    } finally {
      await written;
    }
  }

  /** Updates one row (the full new row is given) and records it. */
  async update(kind: KindName, row: Row, patch: Row): Promise<void> {
    const d = KINDS[kind] as KindDef;
    await this.em.nativeUpdate(d.entity, { id: row.id }, patch);
    this.record(d, 'upsert', [{ ...row, ...patch }]);
  }

  /** Deletes rows of one kind by id and records them. */
  async delete(kind: KindName, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    const d = KINDS[kind] as KindDef;
    await this.em.nativeDelete(d.entity, { id: { $in: ids } });
    if (d.tenantOwned) for (const id of ids) this.changes.push({ op: 'delete', kind: d.kind, id });
  }

  private record(d: KindDef, op: 'upsert', rows: Row[]) {
    if (!d.tenantOwned) return;
    for (const r of rows) {
      // A row of a tenant-owned kind without a tenant (the subject of a platform API key)
      // belongs to no tenant's change log.
      if (r.tenantId === null) continue;
      this.changes.push({ op, kind: d.kind, id: r.id as string, data: messageToChangeData(d, r) });
    }
  }

  /** Appends the collected changes under the tenant's revision (each new tenant's under its own). */
  async flushChangeLog(): Promise<void> {
    for (const f of this.finished) await this.flushOne(f.tenantId, f.revision, f.changes);
    if (this.changes.length === 0) return;
    if (this.tenantId === undefined || this.revision === undefined) {
      throw new Error('tenant-owned changes written without useTenant()');
    }
    await this.flushOne(this.tenantId, this.revision, this.changes);
  }

  private async flushOne(tenantId: string, revision: number, changes: ChangeEntry[]) {
    if (changes.length === 0) return;
    const now = new Date();
    await bulkInsert(
      this.em,
      ChangeLogEntity,
      changes.map((c, seq) => ({
        tenantId, revision, seq, op: c.op, kind: c.kind, entityId: c.id, data: c.data ?? null, createdAt: now,
      })),
    );
    await this.em.execute('select pg_notify(?, ?)', [CHANGE_CHANNEL, `${tenantId}:${revision}`]);
  }
}

/** PostgreSQL takes at most 65,535 bind parameters per statement. */
const MAX_PARAMS = 65_000;

const columnPlans = new WeakMap<EntitySchema<Row>, { table: string; props: EntityProperty[] }>();

/**
 * Inserts rows of one entity in one statement (a multi-row `INSERT … SELECT` over the rows sent
 * as one JSON parameter), or, when some rows leave a column undefined (it then takes the column
 * default) or hold bigints, in multi-row `INSERT … VALUES` statements with bind parameters,
 * chunked under the parameter limit (custom types such as JSON and bigint convert through
 * MikroORM's own types). Same rows as `em.insertMany`, without MikroORM inlining every value
 * into the SQL text, which dominated the cost of large batches.
 */
async function bulkInsert(em: EntityManager, entity: EntitySchema<Row>, rows: Row[]): Promise<void> {
  let plan = columnPlans.get(entity);
  if (!plan) {
    const meta = em.getMetadata().get(entity.meta.className);
    plan = { table: meta.tableName, props: meta.props.filter((p) => p.persist !== false && p.fieldNames?.length === 1) };
    columnPlans.set(entity, plan);
  }
  const platform = em.getPlatform();
  const props = plan.props.filter((p) => rows.some((r) => r[p.name] !== undefined));
  const columns = props.map((p) => `"${p.fieldNames[0]}"`).join(', ');
  const trx = em.getTransactionContext();
  const run = async (sql: string, bindings: unknown[]) => {
    const q = em.getKnex().raw(sql, bindings as never[]);
    if (trx) q.transacting(trx as never);
    try {
      await q;
    } catch (err) {
      throw platform.getExceptionConverter().convertException(err as Error);
    }
  };
  // Usual case: every row sets every column. The rows then travel as one JSON parameter that
  // PostgreSQL unpacks (json_to_recordset): one bind value instead of rows × columns, and
  // cheaper for PostgreSQL than jsonb, which would first build the whole array as jsonb.
  const json = rows.every((r) => props.every((p) => r[p.name] !== undefined)) ? jsonOf(rows) : undefined;
  if (json !== undefined) {
    const record = props.map((p) => `"${p.name}" ${p.columnTypes[0]}`).join(', ');
    const values = props.map((p) => `x."${p.name}"`).join(', ');
    await run(`insert into "${plan.table}" (${columns}) select ${values} from json_to_recordset(?::json) as x(${record})`, [json]);
    return;
  }
  const head = `insert into "${plan.table}" (${columns}) values `;
  const perStatement = Math.max(1, Math.floor(MAX_PARAMS / props.length));
  for (let start = 0; start < rows.length; start += perStatement) {
    const bindings: unknown[] = [];
    const tuples: string[] = [];
    for (const row of rows.slice(start, start + perStatement)) {
      const cells: string[] = [];
      for (const p of props) {
        const v = row[p.name];
        if (v === undefined) {
          cells.push('default');
          continue;
        }
        bindings.push(v !== null && p.customType ? p.customType.convertToDatabaseValue(v, platform, { mode: 'query-data' }) : v);
        cells.push('?');
      }
      tuples.push(`(${cells.join(', ')})`);
    }
    await run(head + tuples.join(', '), bindings);
  }
}

/** The rows as JSON (Dates as ISO strings), or undefined when they hold values JSON cannot carry (bigint). */
function jsonOf(rows: Row[]): string | undefined {
  try {
    return JSON.stringify(rows);
  } catch {
    return undefined;
  }
}

export interface WriteResult<T> {
  result: T;
  /** The tenant the transaction wrote, and its new revision; absent for global writes. */
  tenantId?: string;
  revision?: number;
}

/** Runs `fn` in one transaction; all or nothing. */
export async function runWrite<T>(db: Database, fn: (tx: WriteTx) => Promise<T>): Promise<WriteResult<T>> {
  const em = db.orm.em.fork();
  return em.transactional(async (tem) => {
    const tx = new WriteTx(tem as EntityManager);
    const result = await fn(tx);
    await tx.flushChangeLog();
    return { result, tenantId: tx.tenantId, revision: tx.revision };
  });
}
