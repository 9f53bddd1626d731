import type { EntityProperty, EntitySchema } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { DomainError, invalid, notFound } from '../common/errors.js';
import type { Database } from './db.js';
import { KINDS, prepareMessages, type KindDef, type KindName, type Row } from './kinds.js';
import { ChangeLogEntity } from './schema.js';
import { loadByIds, rawQuery } from './read.js';
import { CHANGE_CHANNEL, KEY_CHANNEL } from './notifications.js';
import { copyData, copyInto, copyText } from './copy.js';

/**
 * One change-log entry. The log stores the row as the store holds it (property names, ISO
 * timestamps); readers turn it into the proto JSON form (kinds.ts `messageToChangeData`), so
 * the write path sends each row once and converts nothing.
 */
export interface ChangeEntry {
  op: 'upsert' | 'delete';
  kind: string;
  id: string;
  seq: number;
  /** The row as JSON; null for a delete. */
  json: string | null;
  /** The row before the change as JSON, for an update or a delete; null for an insert. */
  before?: string | null;
}

/**
 * Who writes a revision: the API key and the subject it acts as, and the reason the caller gave
 * (`x-change-reason`), or `SYSTEM_WRITER` for writes no request made (bootstrap, start-up).
 */
export interface Writer {
  keyId: string;
  subjectId: string;
  reason: string | null;
}

/** The writer of writes without a request. */
export const SYSTEM_WRITER: Writer = Object.freeze({ keyId: 'system', subjectId: 'system', reason: null });

/** The channel a write NOTIFYs on (defined with the listener). */
export { CHANGE_CHANNEL };

/**
 * One write transaction. Entering a tenant (`useTenant`) locks its row first (`select … for no
 * key update`), so every check a handler makes after entering sees the tenant as the last
 * writer left it and no other writer of that tenant can interleave: check and write are one
 * serialized step per tenant. The revision moves only when the transaction records a change:
 * at commit it becomes the entered revision + 1 and every change is appended to the change log
 * under it (the lock makes commit order equal revision order), so each revision has its
 * change-log entries and a transaction that changes nothing consumes no revision. A
 * transaction writes at most one existing tenant; the one exception is `useNewTenant`, for
 * tenants created by the transaction itself.
 */
export class WriteTx {
  readonly changes: ChangeEntry[] = [];
  tenantId?: string;
  /**
   * The revision this transaction's changes are logged under: the tenant's revision when
   * entered, plus one. The tenant row takes it at commit only if a change was recorded.
   */
  revision?: number;
  /** The next change-log `seq` under the current tenant's revision. */
  private seq = 0;
  /** Whether every tenant entered so far was created by this transaction (useNewTenant). */
  private onlyNewTenants = true;
  /** Earlier new tenants of this transaction and their changes, flushed with the current one. */
  private readonly finished: { tenantId: string; revision: number; changes: ChangeEntry[]; logged: number }[] = [];
  /** `<tenantId>:<revision>` of every revision this transaction logged (the NOTIFY payloads). */
  readonly committed: string[] = [];
  /**
   * Prefixes of the API keys this transaction wrote (`*`: unknown, every key). The database
   * NOTIFYs them itself (a trigger on `api_keys`); runWrite also delivers them locally at commit.
   */
  readonly keyPrefixes = new Set<string>();

  /**
   * The transaction's entity manager, for the store's own modules (handlers call them, never
   * SQL); `copies`: whether the database takes `COPY … FROM STDIN` (PostgreSQL does; the
   * embedded database's wire protocol does not).
   */
  constructor(readonly em: EntityManager, private readonly copies = false, private readonly writer: Writer = SYSTEM_WRITER) {}

  /** Locks the tenant's row (until commit) and enters it; a second, different tenant is refused. */
  async useTenant(tenantId: string, field = 'tenantId'): Promise<void> {
    if (this.tenantId === tenantId) return;
    if (this.tenantId !== undefined) {
      throw invalid(field, 'names another tenant than the rest of the request: one request writes one tenant');
    }
    this.onlyNewTenants = false;
    const rows = await this.em.execute<{ revision: string }[]>(
      'select revision from tenants where id = ? for no key update',
      [tenantId],
    );
    if (rows.length === 0) throw notFound('tenant', tenantId, field);
    this.tenantId = tenantId;
    this.revision = Number(rows[0].revision) + 1;
  }

  /**
   * Enters a tenant this transaction has just inserted (at revision 0): its changes are logged
   * under revision 1. Unlike useTenant, one transaction may enter several new tenants in turn (a
   * batch of tenants): nobody can have read or followed a tenant that did not exist before this
   * transaction, so their change logs (each starting at revision 1) cannot interleave with
   * another writer's. Refused once the transaction has entered an existing tenant, and for a
   * tenant not at revision 0.
   */
  async useNewTenant(tenantId: string, field = 'id'): Promise<void> {
    if (this.tenantId === tenantId) return;
    if (!this.onlyNewTenants) {
      throw invalid(field, 'a tenant cannot be created in a request that writes an existing tenant');
    }
    const rows = await this.em.execute<{ revision: string }[]>(
      'select revision from tenants where id = ? and revision = 0 for no key update',
      [tenantId],
    );
    if (rows.length === 0) throw new Error(`useNewTenant: tenant ${tenantId} is not a tenant inserted at revision 0 by this transaction`);
    if (this.tenantId !== undefined && this.revision !== undefined) {
      this.finished.push({ tenantId: this.tenantId, revision: this.revision, changes: this.changes.splice(0), logged: this.seq });
    }
    this.tenantId = tenantId;
    this.revision = 1;
    this.seq = 0;
  }

  /** Whether a change has been recorded for the current tenant. */
  get changed(): boolean {
    return this.seq > 0;
  }

  /**
   * Inserts rows of one kind and records them. Usually one statement: the rows travel as one
   * JSON parameter and the same statement appends their change-log entries. For a large batch,
   * `whileWriting` (default: making the rows' response messages) runs while PostgreSQL runs the
   * insert; a failed insert fails the transaction either way.
   */
  async insert(kind: KindName, rows: Row[], whileWriting: (rows: Row[]) => void = (r) => prepareMessages(kind, r)): Promise<void> {
    if (rows.length === 0) return;
    if (kind === 'apiKey') this.noteKeys(rows);
    const d = KINDS[kind] as KindDef;
    const logged = this.loggedRows(d, rows);
    const whole = logged.length === rows.length && this.revision !== undefined;
    // A large batch on PostgreSQL goes in with COPY: it costs the database less than the JSON.
    const columns = whole && this.copies && rows.length >= OVERLAP_FROM ? completeColumns(this.em, d.entity, rows) : undefined;
    let written: Promise<void>;
    if (columns !== undefined) {
      written = this.copyRows(d, columns, rows);
    } else {
      const json = whole ? completeJson(this.em, d.entity, rows) : undefined;
      if (json === undefined) {
        await bulkInsert(this.em, d.entity, rows);
        this.record(d, logged);
        return;
      }
      const seq = this.seq;
      this.seq += rows.length;
      written = insertJson(this.em, d.entity, json.props, json.text, {
        tenantId: this.tenantId!, revision: this.revision!, seq, kind: d.kind, createdAt: new Date(),
      });
    }
    if (rows.length < OVERLAP_FROM) return written;
    // A large batch: while PostgreSQL runs the insert (the yield lets the query reach the
    // socket first), the response is prepared; a failed insert fails the transaction.
    try {
      await new Promise<void>((resolve) => setImmediate(resolve));
      whileWriting(rows);
    } finally {
      await written;
    }
  }

  /**
   * Inserts rows of one tenant-owned kind at bulk speed and records them, as `insert` does: on
   * PostgreSQL the rows, and then their change-log entries, each in one `COPY … FROM STDIN`; on
   * the embedded database through `insert`. The transaction must have entered the rows' tenant.
   * A row's change-log entry is its stored columns as JSON (property names, timestamps as ISO
   * text), as `insert` logs it.
   */
  async copy(kind: KindName, rows: Row[]): Promise<void> {
    if (rows.length === 0) return;
    if (!this.copies) return this.insert(kind, rows);
    const d = KINDS[kind] as KindDef;
    if (!d.tenantOwned || this.tenantId === undefined || this.revision === undefined) {
      throw new Error(`copy of ${d.kind} rows outside a tenant's write`);
    }
    if (this.loggedRows(d, rows).length !== rows.length) throw new Error(`copy of ${d.kind} rows without a tenant`);
    const columns = completeColumns(this.em, d.entity, rows);
    if (columns === undefined) return this.insert(kind, rows);
    await this.copyRows(d, columns, rows);
  }

  /** The rows (each setting every one of `columns`) and their change-log entries, each one COPY. */
  private async copyRows(d: KindDef, columns: EntityProperty[], rows: Row[]): Promise<void> {
    const { data, log } = copyData(columns, rows, `${copyText(this.tenantId!)}\t${this.revision}\t`, this.seq, `\tupsert\t${d.kind}\t`, `\t${new Date().toISOString()}\n`);
    this.seq += rows.length;
    await copyInto(this.em, planOf(this.em, d.entity).table, columns.map((p) => p.fieldNames[0]), data);
    await copyInto(this.em, 'change_log', CHANGE_LOG_COLUMNS, log);
  }

  /**
   * The rows that belong in the change log: those of tenant-owned kinds, except rows with no
   * tenant (the subject of a platform API key). A logged row of another tenant than the one
   * this transaction entered would be a bug that leaks a row into the wrong tenant's log, so
   * it fails the transaction.
   */
  private loggedRows(d: KindDef, rows: Row[]): Row[] {
    if (!d.tenantOwned) return [];
    const out = rows.filter((r) => r.tenantId !== null);
    for (const r of out) {
      if (this.tenantId !== undefined && r.tenantId !== undefined && r.tenantId !== this.tenantId) {
        throw new Error(`${d.kind} ${String(r.id)} of tenant ${String(r.tenantId)} written in a transaction of tenant ${this.tenantId}`);
      }
    }
    return out;
  }

  /** Updates one row (`row`: the whole row as stored, `patch`: what changes) and records it with its row before. */
  async update(kind: KindName, row: Row, patch: Row): Promise<void> {
    const d = KINDS[kind] as KindDef;
    if (kind === 'apiKey') this.noteKeys([row, patch]);
    await this.em.nativeUpdate(d.entity, { id: row.id }, patch);
    const full = { ...row, ...patch };
    this.record(d, this.loggedRows(d, [full]), JSON.stringify(row));
  }

  /**
   * Deletes rows of one kind by id and records them, each with its row before (read first, in
   * this transaction: the tenant is locked, so it is the row the delete removes).
   */
  async delete(kind: KindName, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    const d = KINDS[kind] as KindDef;
    if (kind === 'apiKey') this.keyPrefixes.add('*');
    const before = d.tenantOwned ? await loadByIds(this.em, kind, ids) : undefined;
    await this.em.nativeDelete(d.entity, { id: { $in: ids } });
    if (!before) return;
    for (const id of ids) {
      const row = before.get(id);
      this.changes.push({ op: 'delete', kind: d.kind, id, seq: this.seq++, json: null, before: row ? JSON.stringify(row) : null });
    }
  }

  /** Records the prefixes of API-key rows written (`*` when a row does not carry its prefix). */
  private noteKeys(rows: Row[]): void {
    for (const r of rows) {
      if (typeof r.prefix === 'string') this.keyPrefixes.add(r.prefix);
      else if (r === rows[0]) this.keyPrefixes.add('*');
    }
  }

  /** Queues upserts for the change log (written at flush); `before`: the row before an update. */
  private record(d: KindDef, rows: Row[], before: string | null = null) {
    for (const r of rows) this.changes.push({ op: 'upsert', kind: d.kind, id: r.id as string, seq: this.seq++, json: JSON.stringify(r), before });
  }

  /** Appends the collected changes under the tenant's revision (each new tenant's under its own). */
  async flushChangeLog(): Promise<void> {
    for (const f of this.finished) await this.flushOne(f.tenantId, f.revision, f.changes, f.logged);
    if (this.seq === 0) return;
    if (this.tenantId === undefined || this.revision === undefined) {
      throw new Error('tenant-owned changes written without useTenant()');
    }
    await this.flushOne(this.tenantId, this.revision, this.changes, this.seq);
  }

  /**
   * Writes the queued entries of one tenant and who wrote the revision, and wakes its followers
   * (`logged` counts every entry).
   */
  private async flushOne(tenantId: string, revision: number, changes: ChangeEntry[], logged: number) {
    if (logged === 0) return;
    const now = new Date();
    await this.em.execute('update tenants set revision = ? where id = ?', [revision, tenantId]);
    await this.em.execute(
      'insert into revisions (tenant_id, revision, key_id, subject_id, reason, created_at) values (?, ?, ?, ?, ?, ?)',
      [tenantId, revision, this.writer.keyId, this.writer.subjectId, this.writer.reason, now],
    );
    if (changes.length > 0) {
      const head = `{"tenantId":${JSON.stringify(tenantId)},"revision":${revision},"createdAt":${JSON.stringify(now)},"seq":`;
      const rows = changes.map((c) =>
        `${head}${c.seq},"op":${JSON.stringify(c.op)},"kind":${JSON.stringify(c.kind)},"entityId":${JSON.stringify(c.id)},"data":${c.json ?? 'null'},"before":${c.before ?? 'null'}}`);
      await insertJson(this.em, ChangeLogEntity, CHANGE_LOG_PROPS, `[${rows.join(',')}]`);
    }
    await this.em.execute('select pg_notify(?, ?)', [CHANGE_CHANNEL, `${tenantId}:${revision}`]);
    this.committed.push(`${tenantId}:${revision}`);
  }
}

/** Inserts of at least this many rows overlap their JSON work with the database (see insert). */
const OVERLAP_FROM = 100;

/** PostgreSQL takes at most 65,535 bind parameters per statement. */
const MAX_PARAMS = 65_000;

const columnPlans = new WeakMap<EntitySchema<Row>, { table: string; props: EntityProperty[] }>();

/** Every column of the change log, as flushOne writes them. */
const CHANGE_LOG_PROPS = ['tenantId', 'revision', 'seq', 'op', 'kind', 'entityId', 'data', 'before', 'createdAt'];
/** The same columns by name, in the order `copy` writes them. */
const CHANGE_LOG_COLUMNS = ['tenant_id', 'revision', 'seq', 'op', 'kind', 'entity_id', 'data', 'created_at'];

function planOf(em: EntityManager, entity: EntitySchema<Row>) {
  let plan = columnPlans.get(entity);
  if (!plan) {
    const meta = em.getMetadata().get(entity.meta.className);
    plan = { table: meta.tableName, props: meta.props.filter((p) => p.persist !== false && p.fieldNames?.length === 1) };
    columnPlans.set(entity, plan);
  }
  return plan;
}

/** Where the rows of an insert go in the change log. */
interface LogTarget {
  tenantId: string;
  revision: number;
  /** `seq` of the first row; the rest follow in array order. */
  seq: number;
  kind: string;
  createdAt: Date;
}

/**
 * Inserts the rows of a JSON array (objects keyed by property name, every object setting every
 * one of `propNames`) in one statement: one bind value instead of rows × columns. With `log`,
 * the same statement appends each row, as sent, to the change log (a data-modifying CTE), so
 * the rows cross the wire once.
 */
async function insertJson(em: EntityManager, entity: EntitySchema<Row>, propNames: string[], json: string, log?: LogTarget): Promise<void> {
  const plan = planOf(em, entity);
  const props = propNames.map((n) => {
    const p = plan.props.find((x) => x.name === n);
    if (!p) throw new Error(`${plan.table} has no property ${n}`);
    return p;
  });
  const columns = props.map((p) => `"${p.fieldNames[0]}"`).join(', ');
  const record = props.map((p) => `"${p.name}" ${p.columnTypes[0]}`).join(', ');
  const values = props.map((p) => `x."${p.name}"`).join(', ');
  if (!log) {
    await rawQuery(em, `insert into "${plan.table}" (${columns}) select ${values} from json_to_recordset(?::json) as x(${record})`, [json]);
    return;
  }
  await rawQuery(em, `with src as (select e.value as j, e.ordinality as n from json_array_elements(?::json) with ordinality as e),
    ins as (insert into "${plan.table}" (${columns}) select ${values} from src cross join lateral json_to_record(src.j) as x(${record}))
    insert into change_log (tenant_id, revision, seq, op, kind, entity_id, data, created_at)
    select ?, ?, ? + src.n - 1, 'upsert', ?, src.j->>'id', src.j, ? from src`,
  [json, log.tenantId, log.revision, log.seq, log.kind, log.createdAt]);
}

/** The columns the rows set, when every row sets every one of them (else undefined: some take their default). */
function completeColumns(em: EntityManager, entity: EntitySchema<Row>, rows: Row[]): EntityProperty[] | undefined {
  const props = planOf(em, entity).props.filter((p) => rows.some((r) => r[p.name] !== undefined));
  return rows.every((r) => props.every((p) => r[p.name] !== undefined)) ? props : undefined;
}

/** The rows as one JSON array when every row sets every column, with the columns' property names. */
function completeJson(em: EntityManager, entity: EntitySchema<Row>, rows: Row[]): { props: string[]; text: string } | undefined {
  const props = planOf(em, entity).props.filter((p) => rows.some((r) => r[p.name] !== undefined));
  if (!rows.every((r) => props.every((p) => r[p.name] !== undefined))) return undefined;
  const names = props.map((p) => p.name);
  const text = jsonOf(rows, names);
  return text === undefined ? undefined : { props: names, text };
}

/**
 * Inserts rows of one entity in one statement (a multi-row `INSERT … SELECT` over the rows sent
 * as one JSON parameter), or, when some rows leave a column undefined (it then takes the column
 * default) or hold bigints, in multi-row `INSERT … VALUES` statements with bind parameters,
 * chunked under the parameter limit (custom types such as JSON and bigint convert through
 * MikroORM's own types). Same rows as `em.insertMany`, without MikroORM inlining every value
 * into the SQL text, which dominated the cost of large batches.
 */
async function bulkInsert(em: EntityManager, entity: EntitySchema<Row>, rows: Row[]): Promise<void> {
  const plan = planOf(em, entity);
  const platform = em.getPlatform();
  // Usual case: every row sets every column, and the rows travel as one JSON parameter.
  const json = completeJson(em, entity, rows);
  if (json !== undefined) return insertJson(em, entity, json.props, json.text);
  const props = plan.props.filter((p) => rows.some((r) => r[p.name] !== undefined));
  const head = `insert into "${plan.table}" (${props.map((p) => `"${p.fieldNames[0]}"`).join(', ')}) values `;
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
    await rawQuery(em, head + tuples.join(', '), bindings);
  }
}

/**
 * The rows as a JSON array of objects of the `props` (every row sets every one; Dates as ISO
 * strings, each distinct Date converted once), or undefined when they hold values JSON cannot
 * carry (bigint).
 */
function jsonOf(rows: Row[], props: string[]): string | undefined {
  const keys = props.map((p) => `${JSON.stringify(p)}:`);
  let lastDate: Date | undefined;
  let lastText = '';
  try {
    let out = '[';
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i];
      let text = '{';
      for (let k = 0; k < props.length; k++) {
        const v = r[props[k]];
        let value: string;
        if (v instanceof Date) {
          if (v !== lastDate) {
            lastDate = v;
            lastText = JSON.stringify(v);
          }
          value = lastText;
        } else {
          value = JSON.stringify(v);
        }
        text += k === 0 ? `${keys[k]}${value}` : `,${keys[k]}${value}`;
      }
      out += i === 0 ? `${text}}` : `,${text}}`;
    }
    return `${out}]`;
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

/**
 * Runs `fn` in one transaction; all or nothing. After the commit, this process's followers hear
 * of the revisions it wrote, and its key caches of the keys it wrote, at once (`deliverLocal`),
 * before the database's NOTIFY comes back. A unique or foreign-key violation that slipped past
 * the caller's checks fails it as a DomainError (`already_exists`, `constraint`). Every revision
 * it makes records `writer` (a request's writes pass the caller's; SYSTEM_WRITER otherwise).
 */
export async function runWrite<T>(db: Database, fn: (tx: WriteTx) => Promise<T>, writer: Writer = SYSTEM_WRITER): Promise<WriteResult<T>> {
  try {
    return await transaction(db, fn, writer);
  } catch (err) {
    throw asDomainError(err);
  }
}

async function transaction<T>(db: Database, fn: (tx: WriteTx) => Promise<T>, writer: Writer): Promise<WriteResult<T>> {
  const em = db.orm.em.fork();
  let committed: string[] = [];
  let keys: Set<string> | undefined;
  const out = await em.transactional(async (tem) => {
    const tx = new WriteTx(tem as EntityManager, db.backend === 'postgres', writer);
    const result = await fn(tx);
    await tx.flushChangeLog();
    committed = tx.committed;
    keys = tx.keyPrefixes;
    // A transaction that entered a tenant but changed nothing leaves it at the revision it found.
    const revision = tx.revision === undefined ? undefined : tx.changed ? tx.revision : tx.revision - 1;
    return { result, tenantId: tx.tenantId, revision };
  });
  for (const prefix of keys ?? []) db.notifications.deliverLocal(KEY_CHANNEL, prefix);
  for (const payload of committed) db.notifications.deliverLocal(CHANGE_CHANNEL, payload);
  return out;
}

/** A database constraint violation as the DomainError clients get; any other error as it is. */
function asDomainError(err: unknown): unknown {
  if (err instanceof DomainError) return err;
  const name = (err as { name?: string })?.name ?? '';
  const code = (err as { code?: string })?.code;
  const constraint = String((err as { constraint?: string })?.constraint ?? 'constraint');
  if (name === 'UniqueConstraintViolationException' || code === '23505') {
    return new DomainError('already_exists', `an entity with the same unique fields already exists (${constraint})`);
  }
  if (name === 'ForeignKeyConstraintViolationException' || code === '23503') {
    return new DomainError('constraint', `the write would leave a dangling reference (${constraint})`);
  }
  return err;
}
