/** The control plane's own metrics, beside the generic ones of services/transport/observability.ts. */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** What the decision path's tenant indexes report (see TenantIndexes). */
export interface IndexStatsSource {
  stats(): { tenants: number; rows: number };
  readonly evictions: number;
}

/**
 * `authz_tenant_indexes`, `authz_tenant_index_rows` and `authz_tenant_index_evictions_total`,
 * read from the indexes when scraped: the memory the decision path holds and how often the
 * `SERVICE_INDEX_MAX_ROWS` budget drops a tenant (each drop is a snapshot rebuild later).
 */
export function indexMetrics(registry: Registry, source: IndexStatsSource): void {
  new Gauge({
    name: 'authz_tenant_indexes',
    help: 'Tenants whose decision index the control plane holds.',
    registers: [registry],
    collect() {
      this.set(source.stats().tenants);
    },
  });
  new Gauge({
    name: 'authz_tenant_index_rows',
    help: 'Rows held by the control plane\'s tenant indexes together (budget: SERVICE_INDEX_MAX_ROWS).',
    registers: [registry],
    collect() {
      this.set(source.stats().rows);
    },
  });
  new Counter({
    name: 'authz_tenant_index_evictions_total',
    help: 'Tenant indexes dropped to stay within SERVICE_INDEX_MAX_ROWS.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(source.evictions);
    },
  });
}


/** What the API-key cache reports (see CachedKeyVerifier). */
export interface KeyCacheStatsSource {
  readonly stats: { hits: number; misses: number; bypasses: number; size: number };
}

/**
 * `authz_api_key_cache_total{result}` (`hit`: answered from memory; `miss`: read the database;
 * `bypass`: read the database because notifications were down) and `authz_api_key_cache_entries`.
 */
export function keyCacheMetrics(registry: Registry, source: KeyCacheStatsSource): void {
  new Counter({
    name: 'authz_api_key_cache_total',
    help: 'API-key verifications by how they were answered: hit (memory), miss (database), bypass (database; notifications down).',
    labelNames: ['result'],
    registers: [registry],
    collect() {
      const s = source.stats;
      this.reset();
      this.inc({ result: 'hit' }, s.hits);
      this.inc({ result: 'miss' }, s.misses);
      this.inc({ result: 'bypass' }, s.bypasses);
    },
  });
  new Gauge({
    name: 'authz_api_key_cache_entries',
    help: 'Key prefixes whose keys the API-key cache holds.',
    registers: [registry],
    collect() {
      this.set(source.stats.size);
    },
  });
}

/** What the database reports of its connection pool (see Database in services/store/db.ts). */
export interface PoolStatsSource {
  poolStats(): { used: number; free: number; pendingAcquires: number; pendingCreates: number; max: number } | undefined;
  onAcquire(f: (seconds: number) => void): () => void;
}

/**
 * The ORM's connection pool: `authz_db_pool_connections{state=used|free}`,
 * `authz_db_pool_pending_acquires` (callers waiting for a connection: above 0 for long, the pool
 * is the bottleneck), `authz_db_pool_pending_creates`, `authz_db_pool_max_connections`, and
 * `authz_db_pool_acquire_seconds` (how long each acquire waited). The LISTEN connection is not
 * in the pool. Returns the unsubscribe of the acquire timing.
 */
export function poolMetrics(registry: Registry, source: PoolStatsSource): () => void {
  new Gauge({
    name: 'authz_db_pool_connections',
    help: 'Database connections of the pool, by state: used (lent to a query or transaction) or free.',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const s = source.poolStats();
      this.set({ state: 'used' }, s?.used ?? 0);
      this.set({ state: 'free' }, s?.free ?? 0);
    },
  });
  new Gauge({
    name: 'authz_db_pool_pending_acquires',
    help: 'Callers waiting for a database connection from the pool.',
    registers: [registry],
    collect() {
      this.set(source.poolStats()?.pendingAcquires ?? 0);
    },
  });
  new Gauge({
    name: 'authz_db_pool_pending_creates',
    help: 'Database connections being opened by the pool.',
    registers: [registry],
    collect() {
      this.set(source.poolStats()?.pendingCreates ?? 0);
    },
  });
  new Gauge({
    name: 'authz_db_pool_max_connections',
    help: 'The most connections the pool opens.',
    registers: [registry],
    collect() {
      this.set(source.poolStats()?.max ?? 0);
    },
  });
  const acquire = new Histogram({
    name: 'authz_db_pool_acquire_seconds',
    help: 'How long each acquire of a database connection from the pool waited, seconds.',
    buckets: [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
    registers: [registry],
  });
  return source.onAcquire((s) => acquire.observe(s));
}
