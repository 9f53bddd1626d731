/**
 * A tenant's decision rows at one revision, for both readers of a whole tenant: the Watch
 * snapshot and the control plane's own decision index. One repeatable-read,
 * read-only transaction on a connection of the pool (every kind sees the same revision), one
 * plain-SQL cursor per kind (hydrating an ORM entity per row cost more than everything else),
 * read in batches of `rows` rows, the next batch fetched while the caller handles the current
 * one. A batch is used and dropped before the next: its rows die young (pages of 10,000 rows
 * lived through several scavenges, were promoted, and cost the snapshot a full GC every half
 * second). At most two batches are held: `rows` × the largest row (a row's JSON fields are
 * bounded by the API, 16 KiB each) × 2.
 *
 * Rows come as PostgreSQL's text, an array of strings per row: the snapshot writes most values
 * as they are (kinds.ts changeDataText), and `columns.row()` hydrates a row as the ORM would
 * (pg's own parser per column type) for everything else.
 */
import { createHash } from 'node:crypto';
import Cursor from 'pg-cursor';
import pg, { type Client, type FieldDef } from 'pg';
import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../common/errors.js';
import type { Database } from './db.js';
import { KINDS, TEXT_ISO_TIME, type KindDef, type KindName, type Row, type TextColumns } from './kinds.js';

/** How one kind's rows are read. */
interface KindQuery {
  def: KindDef;
  sql: string;
  /** The tenant's id, not selected: every row has it (PostgreSQL need not send it 2M times). */
  tenantProp: string;
  /** Properties selected as times in text (see kindQuery), hydrated as Date. */
  dates: Set<string>;
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;
const queries = new WeakMap<object, Map<KindName, KindQuery>>();

/**
 * The query of a kind's rows, from the ORM's metadata: every column under its property name (the
 * proto field name), in the order of the (tenant_id, id) index, so PostgreSQL streams them
 * without sorting. A timestamp comes as the ISO text protobuf-es writes (kinds.ts TEXT_ISO_TIME)
 * when it is in protobuf's range (years 1 to 9999), formatted by PostgreSQL; outside it, as epoch
 * milliseconds (exact for timestamptz(3)), which only the generic route handles.
 */
function kindQuery(em: EntityManager, kind: KindName): KindQuery {
  const meta = em.getMetadata();
  let byKind = queries.get(meta);
  if (!byKind) queries.set(meta, (byKind = new Map()));
  let q = byKind.get(kind);
  if (q) return q;
  const def = KINDS[kind] as KindDef;
  const m = meta.get(def.entity.meta.className);
  const dates = new Set<string>();
  const tenantProp = m.props.find((p) => p.fieldNames?.length === 1 && p.fieldNames[0] === 'tenant_id')!.name;
  const columns = m.props.filter((p) => p.fieldNames?.length === 1 && p.name !== tenantProp).map((p) => {
    const col = quote(p.fieldNames[0]);
    if (p.type === 'Date') {
      dates.add(p.name);
      return `case when ${col} between '0001-01-01T00:00:00Z' and '9999-12-31T23:59:59Z'
        then to_char(${col} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
        else round(extract(epoch from ${col}) * 1000)::text end as ${quote(p.name)}`;
    }
    return `${col} as ${quote(p.name)}`;
  });
  q = { def, tenantProp, sql: `select ${columns.join(', ')} from ${quote(m.tableName)} where tenant_id = $1 order by tenant_id, id`, dates };
  byKind.set(kind, q);
  return q;
}

const heldSql = new WeakMap<object, Map<string, string>>();

/**
 * One row: how many rows of each of `kinds` the tenant holds, in order (`$1`: the tenant's id),
 * each counted up to `cap` (an index probe of at most `cap` entries: a count past it only says
 * "more").
 */
function heldKindsSql(em: EntityManager, kinds: readonly KindName[], cap: number): string {
  const meta = em.getMetadata();
  let byKinds = heldSql.get(meta);
  if (!byKinds) heldSql.set(meta, (byKinds = new Map()));
  const key = `${kinds.join(',')}/${cap}`;
  let sql = byKinds.get(key);
  if (sql === undefined) {
    const table = (kind: KindName) => quote(meta.get((KINDS[kind] as KindDef).entity.meta.className).tableName);
    sql = `select array[${kinds.map((k) => `(select count(*) from (select 1 from ${table(k)} where tenant_id = $1 limit ${cap}) as s)::int`).join(', ')}] as held`;
    byKinds.set(key, sql);
  }
  return sql;
}

/**
 * The name of a kind's query as a prepared statement: node-postgres parses a named statement once
 * per connection and then only binds it, so PostgreSQL neither parses nor (after a few runs)
 * plans it again. Named by its text, so a changed query is never confused with an old one.
 */
const statementNames = new Map<string, string>();
function statementName(sql: string): string {
  let name = statementNames.get(sql);
  if (name === undefined) statementNames.set(sql, (name = `authz_rows_${createHash('sha1').update(sql).digest('hex').slice(0, 16)}`));
  return name;
}

/**
 * Holds a client's writes until the returned function runs, so that the messages of one
 * extended-protocol exchange leave in one write (node-postgres does the same for its own queries;
 * pg-cursor does not). A client without a socket stream writes as it would.
 */
function corked(client: Client): () => void {
  const stream = (client as unknown as { connection?: { stream?: { cork?: () => void; uncork?: () => void } } }).connection?.stream;
  if (typeof stream?.cork !== 'function' || typeof stream.uncork !== 'function') return () => {};
  stream.cork();
  return () => stream.uncork!();
}

/**
 * The SQL a whole-tenant read runs for a kind (the tenant's id is `$1`): what a benchmark gives
 * PostgreSQL's `COPY` to price reading the same rows without the control plane.
 */
export function tenantRowSql(db: Database, kind: KindName): string {
  return kindQuery(db.orm.em.fork() as EntityManager, kind).sql;
}

/** How many rows one batch holds. */
export interface BatchLimits {
  rows: number;
}

/** The columns of a kind's rows as read here: what each one's text is, and the row they make. */
export class RowColumns implements TextColumns {
  readonly at: ReadonlyMap<string, number>;
  readonly fixed: ReadonlyMap<string, string>;
  readonly types: TextColumns['types'];
  private readonly names: string[];
  /** The id's column (read once per row by the snapshot). */
  private readonly idAt: number;
  private readonly parsers: ((text: string) => unknown)[];

  constructor(
    readonly def: KindDef,
    fields: FieldDef[],
    dates: ReadonlySet<string>,
    fixed: ReadonlyMap<string, string>,
  ) {
    this.fixed = fixed;
    this.names = fields.map((f) => f.name);
    this.at = new Map(this.names.map((n, i) => [n, i]));
    this.idAt = this.at.get('id')!;
    this.types = fields.map((f) => (dates.has(f.name) ? 'date' : TEXT_TYPES.get(f.dataTypeID) ?? 'other'));
    // What node-postgres would have made of each column's text; times as the ORM's Date.
    this.parsers = fields.map((f) => (dates.has(f.name) ? dateOfText : pg.types.getTypeParser(f.dataTypeID, 'text')));
  }

  /** The row as the ORM would hydrate it. */
  row(text: (string | null)[]): Row {
    const row: Row = {};
    for (const [name, v] of this.fixed) row[name] = v;
    for (let i = 0; i < text.length; i++) {
      const v = text[i];
      row[this.names[i]] = v === null ? null : this.parsers[i](v);
    }
    return row;
  }

  /** The row's id. */
  id(text: (string | null)[]): string {
    return text[this.idAt] as string;
  }
}

/** PostgreSQL type oids whose text the snapshot writes as it is (kinds.ts TextColumns). */
const TEXT_TYPES = new Map<number, TextColumns['types'][number]>([[25, 'text'], [3802, 'jsonb'], [16, 'bool'], [23, 'int4']]);
const dateOfText = (v: string) => new Date(TEXT_ISO_TIME.test(v) ? Date.parse(v) : Number(v));
/** Every column's text as it is (node-postgres parses nothing). */
const AS_TEXT = { getTypeParser: () => (v: string) => v };

/**
 * One batch of a tenant's rows of one kind, as PostgreSQL's text (one array a row, null for SQL
 * null); `kind` is the caller's name for the kind (see tenantRows).
 */
export interface RowBatch<K = KindName> {
  kind: K;
  def: KindDef;
  columns: RowColumns;
  texts: (string | null)[][];
}

/**
 * Reads every row of the tenant of the given kinds at its committed revision: `onRevision` is
 * told the revision first, then `onResources` (when given) the number of resources the tenant
 * holds, then the batches come in the order of `kinds` (each as `[the caller's name, store
 * kind]`), rows by id within a kind. The transaction ends (rolled back: it only read) and the
 * connection returns to the pool when the generator ends or is returned. `not_found` for an
 * unknown tenant.
 */
export async function* tenantRows<K>(
  db: Database,
  tenantId: string,
  kinds: readonly (readonly [K, KindName])[],
  batch: BatchLimits,
  onRevision: (revision: number) => void,
  onResources?: (count: number) => void,
): AsyncGenerator<RowBatch<K>> {
  const em = db.orm.em.fork() as EntityManager;
  const knex = em.getKnex();
  // Driver errors as MikroORM's typed exceptions, as every other read gives them.
  const typed = (err: unknown) => em.getPlatform().getExceptionConverter().convertException(err as Error);
  const client = (await knex.client.acquireConnection()) as Client;
  const query = async <T>(sql: string, params: unknown[] = []): Promise<T[]> => {
    try {
      return (await client.query(sql, params)).rows as T[];
    } catch (err) {
      throw typed(err);
    }
  };
  type Text = (string | null)[];
  let cursor: Cursor<Text> | undefined;
  let columns: RowColumns | undefined;
  let pending: Promise<Text[]> | undefined;
  let q: KindQuery;
  // A cursor whose read failed is not closed: its portal is gone, and on a broken connection
  // closing would wait for an answer that never comes.
  let failed = false;
  const read = () => {
    const p = new Promise<Text[]>((done, fail) => {
      cursor!.read(batch.rows, (err, rows, result) => {
        if (err) {
          failed = true;
          fail(typed(err));
          return;
        }
        columns ??= new RowColumns(q.def, result.fields, q.dates, new Map([[q.tenantProp, tenantId]]));
        done(rows);
      });
    });
    p.catch(() => undefined); // awaited below; not unhandled if the generator is returned first
    return p;
  };
  try {
    await query('begin isolation level repeatable read read only');
    // The first statement fixes the transaction's snapshot: every read below sees this revision.
    const tenant = await query<{ revision: string }>('select revision from tenants where id = $1', [tenantId]);
    if (tenant.length === 0) throw notFound('tenant', tenantId);
    onRevision(Number(tenant[0].revision));
    if (onResources) {
      const table = quote(em.getMetadata().get((KINDS.resource as KindDef).entity.meta.className).tableName);
      onResources(Number((await query<{ n: string }>(`select count(*) as n from ${table} where tenant_id = $1`, [tenantId]))[0].n));
    }
    // A tenant holds rows of few kinds: one statement says which and how many (up to a batch
    // and one), so an empty kind costs nothing more, and a kind that fits in one batch is read by
    // one prepared statement in one round trip, where a cursor takes two and a fresh plan.
    const held = await query<{ held: number[] }>(heldKindsSql(em, kinds.map(([, storeKind]) => storeKind), batch.rows + 1), [tenantId]);
    for (let k = 0; k < kinds.length; k++) {
      const count = held[0].held[k];
      if (count === 0) continue;
      const [kind, storeKind] = kinds[k];
      q = kindQuery(em, storeKind);
      columns = undefined;
      if (count <= batch.rows) {
        let result: pg.QueryArrayResult<Text>;
        try {
          result = await client.query<Text>({ name: statementName(q.sql), text: q.sql, values: [tenantId], rowMode: 'array', types: AS_TEXT });
        } catch (err) {
          throw typed(err);
        }
        yield { kind, def: q.def, columns: new RowColumns(q.def, result.fields, q.dates, new Map([[q.tenantProp, tenantId]])), texts: result.rows };
        continue;
      }
      // The cursor's messages (parse, bind, describe, execute, flush) leave in one write.
      const uncork = corked(client);
      try {
        cursor = client.query(new Cursor<Text>(q.sql, [tenantId], { rowMode: 'array', types: AS_TEXT }));
        pending = read();
      } finally {
        uncork();
      }
      while (pending) {
        const texts = await pending;
        pending = undefined;
        if (texts.length === 0) break;
        // A short batch is the last: the portal is done.
        if (texts.length === batch.rows) pending = read();
        yield { kind, def: q.def, columns: columns!, texts };
      }
      await cursor.close();
      cursor = undefined;
    }
  } finally {
    await pending?.catch(() => undefined);
    if (cursor && !failed) await cursor.close().catch(() => undefined);
    await client.query('rollback').catch(() => undefined);
    await knex.client.releaseConnection(client);
  }
}
