import { IsolationLevel, type EntityManager } from '@mikro-orm/postgresql';
import { ENTITY_KINDS, TenantIndex, type Change, type EntityKind, type TenantSnapshot } from '../../engine/mod.js';
import { notFound, unavailable } from '../../common/errors.js';
import type { Database } from '../../store/db.js';
import { KINDS, changeLogData, messageToChangeData, type KindDef, type Row } from '../../store/kinds.js';

/** Store kind name (KINDS key) of each engine kind. */
const STORE_KIND: Record<EntityKind, keyof typeof KINDS> = {
  scope: 'scope', subject: 'subject', role: 'role', permission: 'permission', role_permission: 'rolePermission',
  membership: 'membership', role_assignment: 'roleAssignment', scope_override: 'scopeOverride',
  ownership_grant: 'ownershipGrant', resource_type: 'resourceType', resource: 'resource',
  resource_scope_link: 'resourceScopeLink', resource_edge: 'resourceEdge', collection: 'collection',
  policy: 'policy', tag_group: 'tagGroup', tag: 'tag', tag_assignment: 'tagAssignment', tag_binding: 'tagBinding',
};
const ENGINE_KINDS = new Set<string>(ENTITY_KINDS);

export interface IndexOptions {
  /** How long a `minRevision` ahead of the committed state may wait. */
  minRevisionWaitMs: number;
  /**
   * Rows (of every kind) the indexes may hold together; past it the least recently used
   * tenants' indexes are dropped (rebuilt from a snapshot when asked about again). The tenant
   * being answered is always kept, whatever its size.
   */
  maxRows: number;
}

interface Entry {
  index: TenantIndex;
  /** Serialises catch-ups of one tenant. */
  busy: Promise<unknown>;
  /** Rows of the index when last caught up. */
  rows: number;
}

/** Scope → tenant entries kept (scopes never change tenant; the oldest are forgotten first). */
const MAX_SCOPE_TENANTS = 100_000;

/**
 * The control plane's followers of the change log: one TenantIndex per tenant asked about,
 * built from a snapshot and then moved forward by change-log entries, never rebuilt per
 * write. Before answering, an index is caught up to the tenant's committed revision (one
 * indexed read), so a decision after a write sees that write.
 */
export class TenantIndexes {
  private readonly entries = new Map<string, Promise<Entry>>();
  /** Loaded entries, least recently used first (re-inserted on each use). */
  private readonly loaded = new Map<string, Entry>();
  private readonly scopeTenants = new Map<string, string>();
  /** Rows of the loaded entries together (each entry's count as of its last use). */
  private rows = 0;
  /** Indexes dropped to stay within `maxRows` since start. */
  evictions = 0;

  constructor(private readonly db: Database, private readonly opts: IndexOptions) {}

  /** The tenant a scope belongs to; `not_found` for an unknown scope. Scopes never change tenant. */
  async tenantOfScope(scopeId: string, field = 'scopeId'): Promise<string> {
    const hit = this.scopeTenants.get(scopeId);
    if (hit) return hit;
    const rows = (await this.db.orm.em.fork().execute('select tenant_id from scopes where id = ?', [scopeId])) as { tenant_id: string }[];
    if (rows.length === 0) throw notFound('scope', scopeId, field);
    if (this.scopeTenants.size >= MAX_SCOPE_TENANTS) this.scopeTenants.delete(this.scopeTenants.keys().next().value as string);
    this.scopeTenants.set(scopeId, rows[0].tenant_id);
    return rows[0].tenant_id;
  }

  /**
   * The tenant's index, caught up to its committed revision and at least `minRevision`;
   * `unavailable` when `minRevision` is not reached within the wait.
   */
  async get(tenantId: string, minRevision = 0): Promise<TenantIndex> {
    let p = this.entries.get(tenantId);
    if (!p) {
      p = this.load(tenantId);
      this.entries.set(tenantId, p);
      p.catch(() => this.entries.delete(tenantId));
    }
    const entry = await p;
    const deadline = Date.now() + this.opts.minRevisionWaitMs;
    for (;;) {
      await this.catchUp(tenantId, entry);
      this.touch(tenantId, p, entry);
      if (entry.index.revision >= minRevision) return entry.index;
      if (Date.now() >= deadline) {
        throw unavailable(`revision ${minRevision} of tenant ${tenantId} is not available yet (at ${entry.index.revision})`);
      }
      await new Promise((r) => setTimeout(r, Math.min(25, Math.max(1, deadline - Date.now()))));
    }
  }

  /** Tenants indexed and their rows, for metrics. */
  stats(): { tenants: number; rows: number } {
    return { tenants: this.loaded.size, rows: this.rows };
  }

  /**
   * Marks a tenant as just used, then drops least recently used others past `maxRows`. O(1)
   * per request (plus one step per tenant dropped): the total is kept, not summed.
   */
  private touch(tenantId: string, p: Promise<Entry>, entry: Entry): void {
    if (this.entries.get(tenantId) !== p) return; // dropped meanwhile: answer, do not re-add
    if (this.loaded.delete(tenantId)) this.rows -= entry.rows;
    entry.rows = rowCount(entry.index);
    this.rows += entry.rows;
    this.loaded.set(tenantId, entry);
    for (const [other, e] of this.loaded) {
      if (this.rows <= this.opts.maxRows) break;
      if (other === tenantId) continue;
      this.loaded.delete(other);
      this.entries.delete(other);
      this.rows -= e.rows;
      this.evictions++;
    }
  }

  private catchUp(tenantId: string, entry: Entry): Promise<void> {
    const run = entry.busy.then(async () => {
      const em = this.db.orm.em.fork();
      const rev = await committedRevision(em, tenantId);
      if (rev <= entry.index.revision) return;
      const rows = (await em.execute(
        'select revision, op, kind, entity_id, data from change_log where tenant_id = ? and revision > ? order by revision, seq',
        [tenantId, entry.index.revision],
      )) as { revision: string; op: 'upsert' | 'delete'; kind: string; entity_id: string; data: Row | null }[];
      let cur = -1;
      let batch: Change[] = [];
      const flush = () => {
        if (cur >= 0) entry.index.apply(cur, batch);
      };
      for (const r of rows) {
        const revision = Number(r.revision);
        if (revision !== cur) {
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

  /** Every engine row of the tenant, read in one repeatable-read transaction at one revision. */
  private async load(tenantId: string): Promise<Entry> {
    const em = this.db.orm.em.fork();
    const snapshot = await em.transactional(async (tem) => {
      const revision = await committedRevision(tem as EntityManager, tenantId);
      const rows: TenantSnapshot['rows'] = {};
      for (const kind of ENTITY_KINDS) {
        const d = KINDS[STORE_KIND[kind]] as KindDef;
        const found = (await tem.find(d.entity, { tenantId } as never, { disableIdentityMap: true })) as Row[];
        (rows as Record<string, unknown[]>)[kind] = found.map((r) => messageToChangeData(d, r));
      }
      return { revision, rows } as TenantSnapshot;
    }, { isolationLevel: IsolationLevel.REPEATABLE_READ });
    const index = TenantIndex.fromSnapshot(snapshot);
    return { index, busy: Promise.resolve(), rows: rowCount(index) };
  }
}

function rowCount(index: TenantIndex): number {
  let n = 0;
  for (const kind of ENTITY_KINDS) n += index.count(kind);
  return n;
}

async function committedRevision(em: EntityManager, tenantId: string): Promise<number> {
  const rows = (await em.execute('select revision from tenants where id = ?', [tenantId])) as { revision: string }[];
  if (rows.length === 0) throw notFound('tenant', tenantId);
  return Number(rows[0].revision);
}
