/**
 * Logging and metrics: a pino logger writing JSON to stderr, and a prom-client registry with
 * the default process metrics plus per-RPC request counts and durations.
 */
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import { codeToString } from '@connectrpc/connect/protocol-connect';
import { pino, type Logger } from 'pino';
import { collectDefaultMetrics, Counter, Registry } from 'prom-client';
import { asyncDestination } from './destination.js';
import { HotCounter, HotHistogram } from './hot-metrics.js';
import { REDACTED, type LOG_LEVELS } from '../common/settings.js';

export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Fields a log line never shows (a second line of defence: secrets are not logged on purpose,
 * see test/e2e/log-hygiene.test.ts): API-key secrets, session cookies and credentials wherever they
 * sit one or two levels down (`config.apiKey`, `err.config.password`, request headers).
 */
export const REDACT_PATHS = [
  'apiKey', '*.apiKey', 'secretKey', '*.secretKey', 'bootstrapApiKey', '*.bootstrapApiKey',
  'password', '*.password', '*.*.password', 'connectionString', '*.connectionString', '*.*.connectionString',
  'authorization', '*.authorization', '*.headers.authorization', '*["x-api-key"]', '*.headers["x-api-key"]',
  // The console's session cookie, sent and set.
  'cookie', '*.cookie', '*.headers.cookie', '*["set-cookie"]', '*.headers["set-cookie"]',
];

/**
 * pino's error serializer without the raw bytes a failed parse carries: Node's HTTP parser
 * errors hold the request as received (`rawPacket`, headers and API keys included).
 */
function errSerializer(err: unknown): unknown {
  const out = err instanceof Error ? pino.stdSerializers.err(err) : err;
  return withoutBytes(out, 0);
}

/** A copy of a serialized error without byte buffers, down its causes (a few levels). */
function withoutBytes(v: unknown, depth: number): unknown {
  if (Buffer.isBuffer(v) || v instanceof Uint8Array) return undefined;
  if (v === null || typeof v !== 'object' || depth > 4 || Array.isArray(v)) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    const kept = withoutBytes(x, depth + 1);
    if (kept !== undefined) out[k] = kept;
  }
  return out;
}

/** A JSON logger on stderr (stdout stays free for program output); `name` is the process's role. */
export function createLogger(opts: { logLevel?: LogLevel; name?: string } = {}): Logger {
  return pino(
    {
      level: opts.logLevel ?? 'info',
      name: opts.name ?? 'control-plane',
      base: { pid: process.pid },
      redact: { paths: REDACT_PATHS, censor: REDACTED },
      serializers: { err: errSerializer },
    },
    asyncDestination({ fd: 2 }),
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

type RpcLabel = (typeof LABELS)[number];
export interface RpcMetrics {
  requests: HotCounter<RpcLabel>;
  duration: HotHistogram<RpcLabel>;
}
const rpcMetricsOf = new WeakMap<Registry, RpcMetrics>();

/**
 * The RPC metrics of a registry (created once), for paths that record RPCs themselves. Updated
 * with plain arithmetic and read at scrape time (hot-metrics.ts): every decision records both.
 */
export function rpcMetrics(registry: Registry): RpcMetrics {
  let m = rpcMetricsOf.get(registry);
  if (m === undefined) {
    m = {
      requests: new HotCounter(registry, { name: RPC_REQUESTS, help: 'RPCs handled, by service, method and Connect code ("ok" on success).', labelNames: LABELS }),
      duration: new HotHistogram(registry, {
        name: RPC_DURATION,
        help: 'RPC handling time in seconds, by service, method and Connect code.',
        labelNames: LABELS,
        buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      }),
    };
    rpcMetricsOf.set(registry, m);
  }
  return m;
}

export const HTTP_REJECTED = 'authz_http_rejected_total';

/**
 * `authz_http_rejected_total{reason}`: requests answered before any handler ran, so the RPC
 * metrics never see them (REST routing and body errors, unknown methods, probes hit with a
 * wrong method, transport failures), and calls the client abandoned before their answer was
 * complete. `reason` is a RejectReason of the gateway (also for RPC paths: `unimplemented`,
 * `method_not_allowed`, `body_too_large`, `bad_request`), `probe_method`, `transport_error` or
 * `canceled`.
 */
export function rejectCounter(registry: Registry): Counter<'reason'> {
  return (
    (registry.getSingleMetric(HTTP_REJECTED) as Counter<'reason'> | undefined) ??
    new Counter({
      name: HTTP_REJECTED,
      help: 'HTTP requests answered before reaching a handler, or abandoned by the client (canceled), by reason.',
      labelNames: ['reason'],
      registers: [registry],
    })
  );
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
    return whenRpcEnds(next, req, (err) => {
      const code = err === undefined ? 'ok' : codeToString(ConnectError.from(err, Code.Internal).code);
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      requests.inc({ ...labels, code });
      duration.observe({ ...labels, code }, seconds);
    });
  };
}

/**
 * Runs the call and then `end` once with its error (undefined on success): a unary call when it
 * answers, a streaming one when its stream ends. For interceptors that observe whole RPCs.
 */
type Next = Parameters<Interceptor>[0];
export async function whenRpcEnds(next: Next, req: Parameters<Next>[0], end: (err: unknown) => void): ReturnType<Next> {
  let res;
  try {
    res = await next(req);
  } catch (err) {
    end(err);
    throw err;
  }
  if (!res.stream) {
    end(undefined);
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
        end(failed);
      }
    })(),
  };
}
