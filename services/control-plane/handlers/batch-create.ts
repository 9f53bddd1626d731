/**
 * Creates of one or many entities of a kind (the create and batch-create endpoints): items are
 * validated into rows, references resolved against the batch and the store, the tenant entered
 * (locked) before the checks, and all rows written in one transaction.
 */
import type { HandlerContext } from '@connectrpc/connect';
import { DomainError, alreadyExists, duplicateId, invalid, missingReference } from '../../common/errors.js';
import { newId } from '../../common/ids.js';
import { KINDS, rowToMessage, type KindDef, type KindName, type MessageOf, type Row } from '../../store/kinds.js';
import { rowReads, type RowReads } from '../../store/rows.js';
import { runWrite, type Writer, type WriteTx } from '../../store/write.js';
import { assertTenantReach, principalOf, type Principal } from '../auth/principal.js';
import { writerOfCall } from '../auth/writer.js';
import { batchItems, clientId } from '../../common/validate.js';
import type { Deps } from './deps.js';
import { setRevision } from './writes.js';

/**
 * The state of one create request (single or batch) while its items are turned into rows.
 * References resolve against rows created earlier in the same batch first, then the store.
 */
export class Batch {
  readonly now = new Date();
  /** The store's rows, read in this request's transaction. */
  readonly rows: RowReads;
  private readonly local = new Map<string, Map<string, Row>>();
  private readonly loaded = new Map<string, Map<string, Row>>();
  private readonly ids = new Map<string, string>(); // id -> field path of its first use
  readonly before: { kind: KindName; row: Row }[] = [];
  readonly after: { kind: KindName; row: Row }[] = [];

  constructor(readonly tx: WriteTx, readonly principal: Principal) {
    this.rows = rowReads(tx);
  }

  /** Loads referenced rows of a kind in one query (call before the per-item loop). */
  async preload(kind: KindName, ids: Iterable<string | undefined>) {
    const want = [...ids].filter((x): x is string => !!x && !this.cached(kind, x));
    if (want.length === 0) return;
    const rows = await this.rows.byIds(kind, want);
    const m = this.loaded.get(kind) ?? new Map<string, Row>();
    for (const [id, r] of rows) m.set(id, r);
    this.loaded.set(kind, m);
  }

  private cached(kind: KindName, id: string): Row | undefined {
    return this.local.get(kind)?.get(id) ?? this.loaded.get(kind)?.get(id);
  }

  /** A row loaded or created earlier in this batch, without a query (undefined otherwise). */
  peek(kind: KindName, id: string | undefined): Row | undefined {
    return id ? this.cached(kind, id) : undefined;
  }

  /** A referenced row; `failed_precondition` naming the field when it does not exist. */
  async ref(kind: KindName, id: string, field: string): Promise<Row> {
    const hit = this.cached(kind, id) ?? (await this.preload(kind, [id]), this.cached(kind, id));
    if (!hit) throw missingReference(field, (KINDS[kind] as KindDef).label, id);
    return hit;
  }

  /** Rows of a kind created so far in this batch (for rules that look at siblings). */
  created(kind: KindName): Iterable<Row> {
    return this.local.get(kind)?.values() ?? [];
  }

  /** The caller must reach the tenant; the transaction then writes it (its row locked until commit). */
  async tenant(tenantId: string, field: string) {
    assertTenantReach(this.principal, tenantId, field);
    await this.tx.useTenant(tenantId, field);
  }

  /**
   * Enters the tenant of the entity `id` of `kind` (a tenant id itself for kind `tenant`). An
   * unknown id enters nothing: the item's build then reports it as a missing reference.
   */
  async enterTenantOf(kind: KindName, id: string | undefined, field: string) {
    if (!id) return;
    const tenantId = await this.rows.tenantOf(kind, id);
    if (tenantId === undefined) return;
    await this.tenant(kind === 'tenant' ? id : (tenantId as string), field);
  }

  /** The item's id: its validated client id (unique within the batch) or a new one. */
  id(kind: KindName, supplied: string | undefined, field: string): string {
    const ns = (KINDS[kind] as KindDef).namespace;
    const id = clientId(ns, supplied, field) ?? newId(ns);
    if (this.ids.has(id)) throw duplicateId(field, id);
    this.ids.set(id, field);
    return id;
  }

  /** Registers a row (main or extra) so later items can reference it. */
  remember(kind: KindName, row: Row) {
    const m = this.local.get(kind) ?? new Map<string, Row>();
    m.set(row.id as string, row);
    this.local.set(kind, m);
  }

  /** Common columns of a new row. */
  base(id: string, tenantId?: string): Row {
    return { id, ...(tenantId !== undefined ? { tenantId } : {}), createdAt: this.now, createdBy: this.principal.subjectId };
  }

  /** Checks that none of the given ids already exists in the store. */
  async assertNew(kind: KindName, ids: string[]) {
    const existing = await this.rows.existing(kind, ids);
    for (const id of ids) {
      if (existing.has(id)) throw alreadyExists((KINDS[kind] as KindDef).label, id, this.ids.get(id));
    }
  }
}

export interface CreateSpec<I, K extends KindName> {
  kind: K;
  /**
   * The entity whose tenant an item writes, as `[kind, id, field]` (`field` without the item's
   * path). createMany enters that tenant for the first item before `preload`, which locks the
   * tenant's row: every check of the request then reads the tenant as its last writer left it,
   * and no other writer of the tenant interleaves (one serialized step per tenant). Required for
   * tenant-owned kinds; an undefined id (a platform key has no tenant) enters nothing.
   */
  tenantRef?: (item: I, principal: Principal) => [KindName, string | undefined, string];
  /** Bulk-loads what the items reference, before the per-item loop. */
  preload?: (b: Batch, items: I[]) => Promise<void>;
  /** Validates one item and returns its row; `path` prefixes field names (`items[3].`). */
  build: (b: Batch, item: I, path: string) => Promise<Row>;
}

/**
 * Creates one or many entities of a kind in one transaction (all or nothing) and answers
 * the created messages in request order.
 */
export async function createMany<I, K extends KindName>(
  deps: Deps, ctx: HandlerContext, spec: CreateSpec<I, K>, items: I[], batch: boolean,
): Promise<MessageOf<K>[]> {
  const { rows, revision } = await createRows(deps, principalOf(ctx), spec, items, batch, writerOfCall(ctx));
  setRevision(ctx, revision);
  return rows.map((r) => rowToMessage(spec.kind, r));
}

/**
 * createMany's work, for any way of answering: the created rows in request order and the
 * tenant's new revision. `whileWriting` runs on the rows while PostgreSQL inserts them (see
 * WriteTx.insert; by default their messages are made).
 */
export async function createRows<I, K extends KindName>(
  deps: Deps, principal: Principal, spec: CreateSpec<I, K>, items: I[], batch: boolean, writer: Writer, whileWriting?: (rows: Row[]) => void,
): Promise<{ rows: Row[]; revision?: number }> {
  if (batch) batchItems(items);
  const { result, revision } = await runWrite(deps.db, (tx) => createInTx(tx, principal, spec, items, (i) => (batch ? `items[${i}].` : ''), whileWriting), writer);
  return { rows: result, revision };
}

/**
 * The rows of `items` built, checked and inserted in a transaction the caller runs (with other
 * writes of the same tenant: a model apply); `pathOf(i)` prefixes the field names of item i.
 */
export async function createInTx<I, K extends KindName>(
  tx: WriteTx, principal: Principal, spec: CreateSpec<I, K>, items: I[], pathOf: (i: number) => string, whileWriting?: (rows: Row[]) => void,
): Promise<Row[]> {
  const tenantOwned = (KINDS[spec.kind] as KindDef).tenantOwned;
  if (tenantOwned && !spec.tenantRef) throw new Error(`the create spec of ${spec.kind} names no tenantRef`);
  const b = new Batch(tx, principal);
  if (spec.tenantRef && items.length > 0) {
    const [kind, id, field] = spec.tenantRef(items[0], principal);
    await b.enterTenantOf(kind, id, `${pathOf(0)}${field}`);
  }
  await spec.preload?.(b, items);
  const rows: Row[] = [];
  for (let i = 0; i < items.length; i++) {
    // Builds that find everything preloaded never wait, so the loop would hold the event loop
    // for a whole 1,000-item batch: let other requests in every BUILD_SLICE items.
    if (i > 0 && i % BUILD_SLICE === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const row = await spec.build(b, items[i], pathOf(i));
    b.remember(spec.kind, row);
    rows.push(row);
  }
  await b.assertNew(spec.kind, rows.map((r) => r.id as string));
  await insertRuns(tx, b.before);
  await tx.insert(spec.kind, rows, whileWriting);
  await insertRuns(tx, b.after);
  return rows;
}

/** Items built between two yields to the event loop in createMany. */
const BUILD_SLICE = 100;

/**
 * Inserts extra rows in the order they were added, each run of one kind in one statement (a
 * batch of 1,000 environments adds 1,000 scopes: one statement instead of 1,000). Rows of a
 * run may reference one another: PostgreSQL checks foreign keys at the statement's end.
 */
async function insertRuns(tx: WriteTx, extra: { kind: KindName; row: Row }[]): Promise<void> {
  for (let start = 0; start < extra.length;) {
    const kind = extra[start].kind;
    let end = start + 1;
    while (end < extra.length && extra[end].kind === kind) end++;
    await tx.insert(kind, extra.slice(start, end).map((e) => e.row));
    start = end;
  }
}

/** The scope an item names: it must exist; the request then writes its tenant (reach + revision). */
export async function enterScope(b: Batch, scopeId: string, field: string): Promise<Row> {
  const scope = await b.ref('scope', scopeId, field);
  await b.tenant(scope.tenantId as string, field);
  return scope;
}

/**
 * A referenced row that must exist in `tenantId`, the tenant the request writes. A row of
 * another tenant gets the same answer as a missing one (`failed_precondition`, reason
 * MISSING_REFERENCE): one rule for every reference, and no other tenant's ids in the message.
 */
export async function refIn(b: Batch, kind: KindName, id: string, field: string, tenantId: string): Promise<Row> {
  const row = await b.ref(kind, id, field);
  if (row.tenantId !== tenantId) {
    throw new DomainError('missing_reference', `${field}: ${(KINDS[kind] as KindDef).label} ${id} does not exist in the tenant this request writes`, field);
  }
  return row;
}

/**
 * A uniqueness rule of a create request, as for ids: a key the store already holds is
 * `already_exists` (409); a key of an earlier item of the same batch is `invalid_argument`.
 */
export class Uniques {
  /** Key -> id of the stored row holding it ('' when unknown). */
  private readonly stored = new Map<string, string>();
  private readonly claimed = new Set<string>();

  private static key(parts: readonly unknown[]): string {
    return parts.map(String).join('\u0000');
  }

  /** Records a key the store holds (with the id of its row, for the message). */
  held(parts: readonly unknown[], id = ''): void {
    this.stored.set(Uniques.key(parts), id);
  }

  /** Claims a key for an item; `what` describes it ("role key \"x\" at scope s"). */
  claim(parts: readonly unknown[], field: string, what: string): void {
    const k = Uniques.key(parts);
    if (this.claimed.has(k)) throw invalid(field, `${what} appears more than once in the batch`);
    const clash = this.stored.get(k);
    if (clash !== undefined) throw taken(field, `${what} already exists${clash ? ` (${clash})` : ''}`);
    this.claimed.add(k);
  }
}

/** `already_exists` naming the field at fault. */
const taken = (field: string, message: string) => new DomainError('already_exists', `${field}: ${message}`, field);

/** Distinct non-empty strings (the ids or keys a batch names, for one store read). */
export const distinct = (xs: Iterable<string | undefined>): string[] => [...new Set([...xs].filter((x): x is string => !!x))];
