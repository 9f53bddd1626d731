/**
 * Logging and metrics: a pino logger writing JSON to stderr, and a prom-client registry with
 * the default process metrics plus per-RPC request counts and durations.
 */
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import { codeToString } from '@connectrpc/connect/protocol-connect';
import { pino, type Logger } from 'pino';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { LogLevel } from './config.js';

/** A JSON logger on stderr (stdout stays free for program output). */
export function createLogger(opts: { logLevel?: LogLevel; name?: string } = {}): Logger {
  return pino(
    { level: opts.logLevel ?? 'info', name: opts.name ?? 'control-plane', base: { pid: process.pid } },
    pino.destination({ fd: 2, sync: false }),
  );
}

export const RPC_REQUESTS = 'authz_rpc_requests_total';
export const RPC_DURATION = 'authz_rpc_duration_seconds';
const LABELS = ['service', 'method', 'code'] as const;

/** A fresh registry holding default metrics, `authz_rpc_requests_total` and `authz_rpc_duration_seconds`. */
export function createRegistry(opts: { defaultMetrics?: boolean } = {}): Registry {
  const registry = new Registry();
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  rpcMetrics(registry);
  return registry;
}

function rpcMetrics(registry: Registry): { requests: Counter<(typeof LABELS)[number]>; duration: Histogram<(typeof LABELS)[number]> } {
  const requests =
    (registry.getSingleMetric(RPC_REQUESTS) as Counter<(typeof LABELS)[number]> | undefined) ??
    new Counter({
      name: RPC_REQUESTS,
      help: 'RPCs handled, by service, method and Connect code ("ok" on success).',
      labelNames: LABELS,
      registers: [registry],
    });
  const duration =
    (registry.getSingleMetric(RPC_DURATION) as Histogram<(typeof LABELS)[number]> | undefined) ??
    new Histogram({
      name: RPC_DURATION,
      help: 'RPC handling time in seconds, by service, method and Connect code.',
      labelNames: LABELS,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
  return { requests, duration };
}

export const HTTP_REJECTED = 'authz_http_rejected_total';

/**
 * `authz_http_rejected_total{reason}`: requests answered before any handler ran, so the RPC
 * metrics never see them (REST routing and body errors, probes hit with a wrong method,
 * transport failures). `reason` is a RejectReason of the gateway, `probe_method` or
 * `transport_error`.
 */
export function rejectCounter(registry: Registry): Counter<'reason'> {
  return (
    (registry.getSingleMetric(HTTP_REJECTED) as Counter<'reason'> | undefined) ??
    new Counter({ name: HTTP_REJECTED, help: 'HTTP requests answered before reaching a handler, by reason.', labelNames: ['reason'], registers: [registry] })
  );
}

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

/**
 * Records every RPC (Connect, gRPC, gRPC-Web and REST alike, since the gateway calls the same
 * handlers) in the registry's RPC metrics. Streams are recorded when they end.
 */
export function metricsInterceptor(registry: Registry): Interceptor {
  const { requests, duration } = rpcMetrics(registry);
  return (next) => async (req) => {
    const start = process.hrtime.bigint();
    const labels = { service: req.service.typeName, method: req.method.name };
    const record = (err: unknown) => {
      const code = err === undefined ? 'ok' : codeToString(ConnectError.from(err, Code.Internal).code);
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      requests.inc({ ...labels, code });
      duration.observe({ ...labels, code }, seconds);
    };
    let res;
    try {
      res = await next(req);
    } catch (err) {
      record(err);
      throw err;
    }
    if (!res.stream) {
      record(undefined);
      return res;
    }
    const inner = res.message;
    return {
      ...res,
      message: (async function* () {
        let failed: unknown;
        try {
          yield* inner;
        } catch (err) {
          failed = err ?? new Error('stream failed');
          throw err;
        } finally {
          record(failed);
        }
      })(),
    };
  };
}
