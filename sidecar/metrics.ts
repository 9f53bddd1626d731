/**
 * The sidecar's metrics (beside the RPC metrics of services/transport/observability.ts): how far
 * its index is, how fresh, and what the stream did.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

/** What the metrics read of the stream's follower at scrape time. */
export interface FollowerState {
  readonly revision: number;
  readonly upstreamRevision: number;
  /** Epoch ms of the last message taken from the control plane; 0 before the first. */
  readonly lastMessageAt: number;
  fresh(): boolean;
}

export interface SidecarMetrics {
  revision: Gauge;
  upstreamRevision: Gauge;
  lagSeconds: Gauge;
  reconnects: Counter;
  snapshots: Counter;
  refused: Counter<'reason'>;
}

/** Registers the sidecar's metrics; `follower()` is read at scrape time for what is derived. */
export function sidecarMetrics(registry: Registry, follower: () => FollowerState | undefined): SidecarMetrics {
  new Gauge({
    name: 'authz_sidecar_lag_revisions',
    help: 'Revisions the index is behind the tenant\'s committed revision, as the control plane last said.',
    registers: [registry],
    collect() {
      const f = follower();
      this.set(f ? Math.max(0, f.upstreamRevision - f.revision) : 0);
    },
  });
  new Gauge({
    name: 'authz_sidecar_seconds_since_last_message',
    help: 'Seconds since the last message taken from the control plane (decisions fail past SIDECAR_MAX_STALENESS_MS).',
    registers: [registry],
    collect() {
      const f = follower();
      this.set(f && f.lastMessageAt > 0 ? (Date.now() - f.lastMessageAt) / 1000 : -1);
    },
  });
  new Gauge({
    name: 'authz_sidecar_ready',
    help: '1 when decisions are answered (a snapshot held, not stale), else 0.',
    registers: [registry],
    collect() {
      this.set(follower()?.fresh() ? 1 : 0);
    },
  });
  return {
    revision: new Gauge({ name: 'authz_sidecar_revision', help: 'The tenant revision decisions are answered at.', registers: [registry] }),
    upstreamRevision: new Gauge({ name: 'authz_sidecar_upstream_revision', help: 'The tenant\'s committed revision, as the control plane last said.', registers: [registry] }),
    lagSeconds: new Gauge({ name: 'authz_sidecar_lag_seconds', help: 'Seconds from a revision\'s commit to its arrival here, for the last revision applied.', registers: [registry] }),
    reconnects: new Counter({ name: 'authz_sidecar_reconnects_total', help: 'Watch streams that ended and were reconnected.', registers: [registry] }),
    snapshots: new Counter({ name: 'authz_sidecar_snapshots_total', help: 'Snapshots loaded (the first, and every resync).', registers: [registry] }),
    refused: new Counter({ name: 'authz_sidecar_messages_refused_total', help: 'Messages refused (and resynced), by reason.', labelNames: ['reason'], registers: [registry] }),
  };
}
