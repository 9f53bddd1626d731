/**
 * OpenTelemetry tracing of both processes: one server span per RPC, on every surface (REST,
 * Connect, gRPC, gRPC-Web and the lean decision path), a child of the caller's span when the
 * request carries a W3C `traceparent`, exported over OTLP/HTTP. Off unless
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set; then the
 * standard `OTEL_*` variables apply (headers, timeout, sampler, batch sizes, resource
 * attributes, `OTEL_SERVICE_NAME`). When off nothing here runs: callers hold `undefined`
 * instead of a Tracing and create no span objects.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { createRequire } from 'node:module';
import { Code, ConnectError, createContextKey, type Interceptor } from '@connectrpc/connect';
import { DiagLogLevel, ROOT_CONTEXT, SpanKind, SpanStatusCode, diag, type Span, type TextMapGetter, type Tracer } from '@opentelemetry/api';
import type { W3CTraceContextPropagator } from '@opentelemetry/core';
import type * as OtlpHttp from '@opentelemetry/exporter-trace-otlp-http';
import type * as OtlpProto from '@opentelemetry/exporter-trace-otlp-proto';
import type * as Resources from '@opentelemetry/resources';
import type * as TraceSdk from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { Logger } from 'pino';
import { ConfigError } from '../common/settings.js';
import { surfaceKey } from './gateway/surface.js';
import { whenRpcEnds } from './observability.js';

/** How a call arrived: the protocol of its request. */
export type Surface = 'rest' | 'connect' | 'grpc' | 'grpc-web';

/** The span of the call a handler runs in (set by the tracing interceptor; undefined when off). */
export const spanKey = createContextKey<Span | undefined>(undefined, { description: 'authz.span' });

/** The span attribute naming the tenant a call acted on, where known. */
export const TENANT_ATTRIBUTE = 'authz.tenant_id';

export interface Tracing {
  /** A server span for one RPC, the child of the request's `traceparent` when it has a valid one. */
  startRpcSpan(service: string, method: string, surface: Surface, traceparent: string | undefined, tracestate?: string): Span;
  /** Ends an RPC's span with its Connect code (undefined: ok). */
  endRpcSpan(span: Span, surface: Surface, code: Code | undefined, message?: string): void;
  /** Exports what is pending and stops. */
  shutdown(): Promise<void>;
}

/** Protocols of OTEL_EXPORTER_OTLP_PROTOCOL this service exports with. */
const PROTOCOLS = ['http/protobuf', 'http/json'] as const;

/** Codes a server span counts as an error (OpenTelemetry's gRPC server conventions). */
const SERVER_ERRORS = new Set([Code.Unknown, Code.DeadlineExceeded, Code.Unimplemented, Code.Internal, Code.Unavailable, Code.DataLoss]);

/** `PERMISSION_DENIED` for Code.PermissionDenied, as gRPC names its status codes. */
const STATUS_NAMES: string[] = ['OK'];
for (const [name, value] of Object.entries(Code)) {
  if (typeof value === 'number') STATUS_NAMES[value] = name.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase();
}

/**
 * The SDK, its exporters and resources are loaded by the first `startTracing` that exports: with
 * tracing off (the default) a process never loads them, about 400 modules and a tenth of a
 * second of a sidecar's start. `require` keeps `startTracing` synchronous (each package ships
 * CommonJS).
 */
const load = createRequire(import.meta.url);
const oneHeader: TextMapGetter<{ traceparent?: string; tracestate?: string }> = {
  get: (c, key) => (key === 'traceparent' ? c.traceparent : key === 'tracestate' ? c.tracestate : undefined),
  keys: () => ['traceparent', 'tracestate'],
};

/**
 * Tracing as the environment asks: undefined (off) without an OTLP endpoint, or when
 * `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`. An OTLP protocol this service cannot
 * export with (`grpc`) stops start-up with a ConfigError naming the variable.
 */
export function startTracing(opts: { serviceName: string; logger: Logger; env?: Record<string, string | undefined> }): Tracing | undefined {
  const env = opts.env ?? process.env;
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint || env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true' || env.OTEL_TRACES_EXPORTER?.trim() === 'none') return undefined;
  const protocolVariable = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = (env[protocolVariable] || 'http/protobuf').trim();
  if (!(PROTOCOLS as readonly string[]).includes(protocol)) {
    throw new ConfigError(protocolVariable, `must be one of ${PROTOCOLS.map((p) => `'${p}'`).join(', ')} (OTLP over HTTP), got ${JSON.stringify(protocol)}`);
  }
  // The SDK's own complaints (failed exports) in the process's log, not on the console.
  const log = opts.logger.child({ component: 'opentelemetry' });
  diag.setLogger({
    error: (message) => log.warn(message),
    warn: (message) => log.warn(message),
    info: () => {},
    debug: () => {},
    verbose: () => {},
  }, DiagLogLevel.WARN);
  // The URL from `env` (as OpenTelemetry derives it); the exporters read the rest of
  // OTEL_EXPORTER_OTLP_* (headers, timeout, compression) from the process's environment.
  const url = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || `${endpoint.replace(/\/+$/, '')}/v1/traces`;
  const { defaultResource, detectResources, envDetector, resourceFromAttributes } = load('@opentelemetry/resources') as typeof Resources;
  const { BasicTracerProvider, BatchSpanProcessor } = load('@opentelemetry/sdk-trace-base') as typeof TraceSdk;
  const propagator = new (load('@opentelemetry/core') as { W3CTraceContextPropagator: typeof W3CTraceContextPropagator }).W3CTraceContextPropagator();
  const exporter =
    protocol === 'http/json'
      ? new (load('@opentelemetry/exporter-trace-otlp-http') as typeof OtlpHttp).OTLPTraceExporter({ url })
      : new (load('@opentelemetry/exporter-trace-otlp-proto') as typeof OtlpProto).OTLPTraceExporter({ url });
  const resource = defaultResource()
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: opts.serviceName }))
    .merge(detectResources({ detectors: [envDetector] })); // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
  const provider = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
  const tracer: Tracer = provider.getTracer('authz', '0.1.0');
  log.info({ protocol }, 'tracing: exporting spans over OTLP');

  return {
    startRpcSpan(service, method, surface, traceparent, tracestate) {
      const parent = traceparent === undefined ? ROOT_CONTEXT : propagator.extract(ROOT_CONTEXT, { traceparent, tracestate }, oneHeader);
      const grpc = surface === 'grpc' || surface === 'grpc-web';
      return tracer.startSpan(`${service}/${method}`, {
        kind: SpanKind.SERVER,
        attributes: { 'rpc.system': grpc ? 'grpc' : 'connect_rpc', 'rpc.service': service, 'rpc.method': method, 'authz.surface': surface },
      }, parent);
    },
    endRpcSpan(span, surface, code, message) {
      const c: number = code ?? 0;
      span.setAttribute('rpc.status_code', STATUS_NAMES[c] ?? String(c));
      if (surface === 'grpc' || surface === 'grpc-web') span.setAttribute('rpc.grpc.status_code', c);
      else if (code !== undefined) span.setAttribute('rpc.connect_rpc.error_code', (STATUS_NAMES[c] ?? String(c)).toLowerCase());
      if (code !== undefined && SERVER_ERRORS.has(code)) span.setStatus({ code: SpanStatusCode.ERROR, message });
      span.end();
    },
    async shutdown() {
      try {
        await provider.shutdown();
      } catch (err) {
        log.warn({ err }, 'tracing: the last spans could not be exported');
      }
    },
  };
}

/** One header of a Node request, as its first value. */
function nodeHeader(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** startRpcSpan with the trace context of a Node request. */
export function startNodeRpcSpan(tracing: Tracing, service: string, method: string, surface: Surface, headers: IncomingHttpHeaders): Span {
  return tracing.startRpcSpan(service, method, surface, nodeHeader(headers, 'traceparent'), nodeHeader(headers, 'tracestate'));
}

/** The surface of a call connect-node serves, from its request. */
function surfaceOf(contentType: string | null, rest: boolean): Surface {
  if (rest) return 'rest';
  if (contentType?.startsWith('application/grpc-web')) return 'grpc-web';
  if (contentType?.startsWith('application/grpc')) return 'grpc';
  return 'connect';
}

/**
 * A server span around every call connect-node serves (REST through the gateway included),
 * ended with the call's code; streams when they end. The span is in the handler context
 * (`spanKey`) for what runs inside (tenant attribute, decision log).
 */
export function tracingInterceptor(tracing: Tracing): Interceptor {
  return (next) => async (req) => {
    const surface = surfaceOf(req.header.get('content-type'), req.contextValues.get(surfaceKey) === 'rest');
    const span = tracing.startRpcSpan(
      req.service.typeName, req.method.name, surface, req.header.get('traceparent') ?? undefined, req.header.get('tracestate') ?? undefined,
    );
    req.contextValues.set(spanKey, span);
    return whenRpcEnds(next, req, (err) => {
      if (err === undefined) return tracing.endRpcSpan(span, surface, undefined);
      const ce = ConnectError.from(err, Code.Internal);
      tracing.endRpcSpan(span, surface, ce.code, ce.rawMessage);
    });
  };
}
