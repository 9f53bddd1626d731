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
 * commit. A transaction writes at most one tenant.
 */
export class WriteTx {
  readonly changes: ChangeEntry[] = [];
  tenantId?: string;
  revision?: number;

  constructor(readonly em: EntityManager) {}

  /** Locks and bumps the tenant's revision; a second, different tenant is refused. */
  async useTenant(tenantId: string, field = 'tenantId'): Promise<void> {
    if (this.tenantId === tenantId) return;
    if (this.tenantId !== undefined) {
      throw invalid(field, `belongs to tenant ${tenantId}, but this request writes tenant ${this.tenantId}: one request writes one tenant`);
    }
    const rows = await this.em.execute<{ revision: string }[]>(
      'update tenants set revision = revision + 1 where id = ? returning revision',
      [tenantId],
    );
    if (rows.length === 0) throw notFound('tenant', tenantId, field);
    this.tenantId = tenantId;
    this.revision = Number(rows[0].revision);
  }

  /** Inserts rows of one kind in one multi-row statement and records them. */
  async insert(kind: KindName, rows: Row[]): Promise<void> {
    if (rows.length === 0) return;
    const d = KINDS[kind] as KindDef;
    await this.em.insertMany(d.entity, rows);
    this.record(d, 'upsert', rows);
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
    for (const r of rows) this.changes.push({ op, kind: d.kind, id: r.id as string, data: messageToChangeData(d, r) });
  }

  /** Appends the collected changes under the tenant's revision. */
  async flushChangeLog(): Promise<void> {
    if (this.changes.length === 0) return;
    if (this.tenantId === undefined || this.revision === undefined) {
      throw new Error('tenant-owned changes written without useTenant()');
    }
    const now = new Date();
    await this.em.insertMany(
      ChangeLogEntity,
      this.changes.map((c, seq) => ({
        tenantId: this.tenantId, revision: this.revision, seq, op: c.op, kind: c.kind, entityId: c.id,
        data: c.data ?? null, createdAt: now,
      })),
    );
    await this.em.execute('select pg_notify(?, ?)', [CHANGE_CHANNEL, `${this.tenantId}:${this.revision}`]);
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
