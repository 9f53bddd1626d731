import { ENTITY_KINDS, TenantIndex, type Change, type EntityKind } from '../../engine/mod.js';
import { notFound } from '../../common/errors.js';
import { signalOf, sleep, waitEnded, type CallSignal } from '../../decision/decide.js';
import { changesAfter } from '../../store/change-log.js';
import type { Database } from '../../store/db.js';
import { changeDataOfText, changeLogData, messageToChangeData } from '../../store/kinds.js';
import { tenantOfScope } from '../../store/tenants.js';
import { knownRevisions, type KnownRevisions } from '../known-revisions.js';
import { tenantRows } from '../../store/tenant-rows.js';
import { ENGINE_STORE_KINDS } from '../engine-kinds.js';

const ENGINE_KINDS = new Set<string>(ENTITY_KINDS);

/** Rows a batch when a tenant's index is loaded (two batches are held at most). */
const LOAD_BATCH_ROWS = 1_000;

export interface IndexOptions {
  /** How long a `minRevision` ahead of the committed state may wait. */
  minRevisionWaitMs: number;
  /**
   * Rows (of every kind) the indexes may hold together; past it the least recently used
   * tenants' indexes are dropped (rebuilt from a snapshot when asked about again). The tenant
   * being answered is always kept, whatever its size.
   */
  maxRows: number;
  /**
   * Index builds (snapshot reads) running at once; more wait their turn. Each holds a pool
   * connection for its whole read, so fewer builds than the pool has connections leave some for
   * what cached tenants ask the database (a scope not seen yet, a catch-up after a write), and
   * the event loop interleaves only that many builds with their decisions. Default 4 (of a pool
   * of 10).
   */
  maxBuilds?: number;
}

/** Builds at once when IndexOptions.maxBuilds is not given. */
export const DEFAULT_MAX_BUILDS = 4;

interface Entry {
  index: TenantIndex;
  /** Serialises catch-ups of one tenant. */
  busy: Promise<unknown>;
  /** Rows of the index when last caught up. */
  rows: number;
  /** The index and revision `rows` was counted at: a use that finds both unchanged counts nothing. */
  countedIndex: TenantIndex;
  countedRevision: number;
}

/** Scope → tenant entries kept (scopes never change tenant; the oldest are forgotten first). */
const MAX_SCOPE_TENANTS = 100_000;

/**
 * The control plane's followers of the change log: one TenantIndex per tenant asked about,
 * built from a snapshot and then moved forward by change-log entries, never rebuilt per
 * write. Before answering, an index is caught up to the tenant's committed revision as this
 * process knows it from CHANGE_CHANNEL notifications (its own writes included, so a decision
 * after a write here sees that write); the database is asked only while notifications are not
 * live (fail closed), for a tenant not heard of yet, and for `fullyConsistent`. The change log
 * is read only when that revision is ahead of the index.
 */
export class TenantIndexes {
  private readonly entries = new Map<string, Promise<Entry>>();
  /** Loaded entries, least recently used first (re-inserted on each use). */
  private readonly loaded = new Map<string, Entry>();
  private readonly scopeTenants = new Map<string, string>();
  /** The entry used last: the last of `loaded`. */
  private newest: Entry | undefined;
  /** Rows of the loaded entries together (each entry's count as of its last use). */
  private rows = 0;
  /** Indexes dropped to stay within `maxRows` since start. */
  evictions = 0;
  /** Builds running now, and the ones waiting for a turn (first come, first served). */
  private building = 0;
  private readonly buildQueue: (() => void)[] = [];

  private readonly known: KnownRevisions;

  constructor(private readonly db: Database, private readonly opts: IndexOptions) {
    this.known = knownRevisions(db);
  }

  /** The tenant a scope belongs to; `not_found` for an unknown scope. Scopes never change tenant. */
  async tenantOfScope(scopeId: string, field = 'scopeId'): Promise<string> {
    const hit = this.scopeTenants.get(scopeId);
    if (hit) return hit;
    const tenantId = await tenantOfScope(this.db, scopeId);
    if (tenantId === undefined) throw notFound('scope', scopeId, field);
    if (this.scopeTenants.size >= MAX_SCOPE_TENANTS) this.scopeTenants.delete(this.scopeTenants.keys().next().value as string);
    this.scopeTenants.set(scopeId, tenantId);
    return tenantId;
  }

  /**
   * The answer of tenantOfScope and get together when it needs no wait: the scope's tenant is
   * known, its index is loaded, and the index is at the committed revision this process knows
   * (notifications live) and at least `minRevision`. Undefined otherwise: ask the async way. The
   * common decision then takes no promise and no microtask turn.
   */
  readyFor(scopeId: string, minRevision: number): { tenantId: string; index: TenantIndex } | undefined {
    const tenantId = this.scopeTenants.get(scopeId);
    if (tenantId === undefined) return undefined;
    const entry = this.loaded.get(tenantId);
    const p = this.entries.get(tenantId);
    if (entry === undefined || p === undefined) return undefined;
    const known = this.known.get(tenantId);
    const revision = entry.index.revision;
    if (known === undefined || known > revision || revision < minRevision) return undefined;
    this.touch(tenantId, p, entry);
    return { tenantId, index: entry.index };
  }

  /**
   * The tenant's index, caught up to its committed revision and at least `minRevision`;
   * `unavailable` when `minRevision` is not reached within the wait, `deadline_exceeded` when
   * the caller's `deadline` (epoch ms) ends the wait first, `canceled` when `signal` does (the
   * caller went away). `fullyConsistent` asks the database for the committed revision instead
   * of trusting notifications.
   */
  async get(tenantId: string, minRevision = 0, deadline = Number.POSITIVE_INFINITY, fullyConsistent = false, signal?: CallSignal): Promise<TenantIndex> {
    let p = this.entries.get(tenantId);
    if (!p) {
      p = this.load(tenantId);
      this.entries.set(tenantId, p);
      p.catch(() => this.entries.delete(tenantId));
    }
    const entry = await p;
    const waitUntil = Date.now() + this.opts.minRevisionWaitMs;
    const until = Math.min(waitUntil, deadline);
    let aborted: AbortSignal | undefined;
    for (let first = true; ; first = false) {
      await this.catchUp(tenantId, entry, fullyConsistent);
      this.touch(tenantId, p, entry);
      if (entry.index.revision >= minRevision) return entry.index;
      // Made only once a wait starts (see CallSignal).
      if (first) aborted = signalOf(signal);
      if (Date.now() >= until || aborted?.aborted) {
        const message = `revision ${minRevision} of tenant ${tenantId} is not available yet (at ${entry.index.revision})`;
        throw waitEnded(message, deadline, waitUntil, aborted);
      }
      await sleep(Math.min(25, Math.max(1, until - Date.now())), aborted);
    }
  }

  /** Tenants indexed and their rows, for metrics. */
  stats(): { tenants: number; rows: number } {
    return { tenants: this.loaded.size, rows: this.rows };
  }

  /** Whether the tenant's index is held now (asking does not count as a use). */
  holds(tenantId: string): boolean {
    return this.loaded.has(tenantId);
  }

  /** Index builds running and waiting for a turn. */
  builds(): { running: number; waiting: number } {
    return { running: this.building, waiting: this.buildQueue.length };
  }

  /**
   * Marks a tenant as just used, then drops least recently used others past `maxRows`. O(1)
   * per request (plus one step per tenant dropped): the total is kept, not summed.
   */
  private touch(tenantId: string, p: Promise<Entry>, entry: Entry): void {
    if (this.entries.get(tenantId) !== p) return; // dropped meanwhile: answer, do not re-add
    const index = entry.index;
    // The common decision: its tenant was the last one used, and its index has not moved since
    // (no re-insertion into the LRU order, no count of 19 kinds: 3% of a REST decision's CPU).
    if (this.newest === entry && entry.countedIndex === index && entry.countedRevision === index.revision) return;
    if (this.loaded.delete(tenantId)) this.rows -= entry.rows;
    entry.rows = rowCount(index);
    entry.countedIndex = index;
    entry.countedRevision = index.revision;
    this.rows += entry.rows;
    this.loaded.set(tenantId, entry);
    this.newest = entry;
    for (const [other, e] of this.loaded) {
      if (this.rows <= this.opts.maxRows) break;
      if (other === tenantId) continue;
      this.loaded.delete(other);
      this.entries.delete(other);
      this.rows -= e.rows;
      this.evictions++;
    }
  }

  private catchUp(tenantId: string, entry: Entry, ask: boolean): Promise<void> {
    // The common case (the known revision is the index's) takes no query at all.
    const known = ask ? undefined : this.known.get(tenantId);
    if (known !== undefined && known <= entry.index.revision) return Promise.resolve();
    const run = entry.busy.then(async () => {
      const rev = await this.known.committed(tenantId, ask);
      if (rev <= entry.index.revision) return;
      const rows = await changesAfter(this.db, tenantId, entry.index.revision);
      // The log was compacted past this index (idle for long): it cannot be moved forward, only
      // rebuilt from a snapshot.
      if (rows.length === 0 || Number(rows[0].revision) !== entry.index.revision + 1) {
        entry.index = (await this.load(tenantId)).index;
        return;
      }
      let cur = -1;
      let batch: Change[] = [];
      const flush = () => {
        if (cur >= 0) entry.index.apply(cur, batch);
      };
      for (const r of rows) {
        const revision = Number(r.revision);
        if (revision !== cur) {
          if (cur >= 0 && revision !== cur + 1) {
            entry.index = (await this.load(tenantId)).index;
            return;
          }
          flush();
          cur = revision;
          batch = [];
        }
        if (!ENGINE_KINDS.has(r.kind)) continue;
        const row = r.data ? changeLogData(r.kind, r.data) : undefined;
        batch.push({ op: r.op, kind: r.kind as EntityKind, id: r.entity_id, row: row as never } as Change);
      }
      flush();
    });
    entry.busy = run.catch(() => undefined);
    return run;
  }

  /** Every engine row of the tenant at one revision (tenant-rows.ts), indexed as the pages come. */
  private async load(tenantId: string): Promise<Entry> {
    if (this.building >= (this.opts.maxBuilds ?? DEFAULT_MAX_BUILDS)) await new Promise<void>((turn) => this.buildQueue.push(turn));
    else this.building++;
    try {
      return await this.build(tenantId);
    } finally {
      // The slot passes to the next build waiting, if any, else it is freed.
      const next = this.buildQueue.shift();
      if (next) next();
      else this.building--;
    }
  }

  private async build(tenantId: string): Promise<Entry> {
    const builder = TenantIndex.builder();
    let revision = 0;
    for await (const { kind, def, columns, texts } of tenantRows(this.db, tenantId, ENGINE_STORE_KINDS, { rows: LOAD_BATCH_ROWS }, (r) => (revision = r))) {
      for (const text of texts) builder.add(kind, changeDataOfText(columns, text) ?? messageToChangeData(def, columns.row(text)));
    }
    const index = builder.build(revision);
    return { index, busy: Promise.resolve(), rows: rowCount(index), countedIndex: index, countedRevision: index.revision };
  }
}

/** The rows an index holds, of every kind. */
export function rowCount(index: TenantIndex): number {
  let n = 0;
  for (const kind of ENTITY_KINDS) n += index.count(kind);
  return n;
}
