/**
 * The Watch side of the composition root: the process's WatchHub (with its metrics) and the
 * periodic change-log compaction, started and stopped together so that app.ts stays small.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Database } from '../../store/db.js';
import { startCompaction } from '../../store/compaction.js';
import type { Config } from '../config.js';
import { knownRevisions } from '../known-revisions.js';
import { WatchHub } from './hub.js';
import { watchMetrics } from './metrics.js';
import { DEFAULT_LIMITS, type WatchLimits } from './stream.js';

export interface WatchRuntime {
  hub: WatchHub;
  /** Ends every stream with `unavailable` and stops compaction; call before the server closes. */
  close(): Promise<void>;
}

/** `sweep` runs with each compaction (the deletion of timed-out console sessions). */
export function startWatch(db: Database, config: Config, registry: Registry, logger: Logger, limits: Partial<WatchLimits> = {}, sweep?: () => Promise<number>): WatchRuntime {
  const hub = new WatchHub(db, knownRevisions(db), config.resourceScopeGate, {
    ...DEFAULT_LIMITS, heartbeatMs: config.watchHeartbeatMs, maxBufferedBytes: config.watchMaxBufferedBytes, snapshotCacheBytes: config.watchSnapshotCacheBytes, ...limits,
  });
  watchMetrics(registry, hub);
  const rule = { keepRevisions: config.changeLogRetentionRevisions, keepMs: config.changeLogRetentionHours * 3_600_000 };
  const stopCompaction = config.changeLogCompactIntervalMs > 0 ? startCompaction(db, rule, config.changeLogCompactIntervalMs, logger, sweep) : async () => {};
  return {
    hub,
    async close() {
      await hub.close();
      await stopCompaction();
    },
  };
}
