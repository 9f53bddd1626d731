/** The Watch streams' metrics, read from the hub when scraped. */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { WatchHub } from './hub.js';

/**
 * `authz_watch_streams`, `authz_watch_buffered_bytes` (all streams), `authz_watch_stream_buffered_bytes_max`
 * (the fullest stream; bounded by SERVICE_WATCH_MAX_BUFFERED_BYTES plus one message) and
 * `authz_watch_slow_consumers_total` (streams ended with `resource_exhausted`), and the lag:
 * `authz_watch_stream_lag_revisions_max` (revisions the furthest-behind stream has not yet handed
 * to its client) and `authz_watch_streams_behind`; `authz_watch_log_reads_total{source}`, the
 * change-log reads made and shared.
 */
export function watchMetrics(registry: Registry, hub: WatchHub): void {
  new Gauge({
    name: 'authz_watch_streams',
    help: 'Open Watch streams.',
    registers: [registry],
    collect() {
      this.set(hub.stats().streams);
    },
  });
  new Gauge({
    name: 'authz_watch_buffered_bytes',
    help: 'Bytes the Watch streams hold together, queued or in the transport.',
    registers: [registry],
    collect() {
      this.set(hub.stats().bufferedBytes);
    },
  });
  new Gauge({
    name: 'authz_watch_stream_buffered_bytes_max',
    help: 'Bytes held by the fullest Watch stream (bound: SERVICE_WATCH_MAX_BUFFERED_BYTES plus one message).',
    registers: [registry],
    collect() {
      this.set(hub.stats().maxStreamBufferedBytes);
    },
  });
  new Gauge({
    name: 'authz_watch_stream_lag_revisions_max',
    help: 'Revisions the furthest-behind Watch stream has not yet handed to its client of its tenant\'s committed revision (a stream sending its snapshot lacks them all).',
    registers: [registry],
    collect() {
      this.set(hub.stats().maxLagRevisions);
    },
  });
  new Gauge({
    name: 'authz_watch_streams_behind',
    help: 'Watch streams that have not yet handed their client every committed revision of its tenant.',
    registers: [registry],
    collect() {
      this.set(hub.stats().streamsBehind);
    },
  });
  new Counter({
    name: 'authz_watch_log_reads_total',
    help: 'Change-log reads of the Watch streams: "database" asked it, "shared" took another stream\'s read (in flight, or the recent window).',
    labelNames: ['source'],
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ source: 'database' }, hub.reads.databaseReads);
      this.inc({ source: 'shared' }, hub.reads.sharedReads);
    },
  });
  new Counter({
    name: 'authz_watch_snapshot_cache_total',
    help: 'Watch snapshots by where they came from: "hit" the cache, "miss" the database, "joined" another stream reading it at the time (single flight); "too_large" made but larger than SERVICE_WATCH_SNAPSHOT_CACHE_BYTES, "invalidated" a kept one the log no longer reaches back to.',
    labelNames: ['result'],
    registers: [registry],
    collect() {
      const c = hub.snapshots.stats();
      this.reset();
      this.inc({ result: 'hit' }, c.hits);
      this.inc({ result: 'miss' }, c.misses);
      this.inc({ result: 'joined' }, c.joined);
      this.inc({ result: 'too_large' }, c.tooLarge);
      this.inc({ result: 'invalidated' }, c.invalidated);
    },
  });
  new Gauge({
    name: 'authz_watch_snapshot_cache_bytes',
    help: 'Bytes of Watch snapshots kept for the next streams of their tenant (bound: SERVICE_WATCH_SNAPSHOT_CACHE_BYTES).',
    registers: [registry],
    collect() {
      this.set(hub.snapshots.stats().bytes);
    },
  });
  new Counter({
    name: 'authz_watch_slow_consumers_total',
    help: 'Watch streams ended with resource_exhausted because the client did not read.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(hub.stats().slowConsumers);
    },
  });
}
