/**
 * When tracing is on, and what start-up refuses. (The spans themselves: test/e2e/tracing.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { ConfigError } from '../common/settings.js';
import { startTracing } from './tracing.js';
import { startOtlpReceiver } from '../../test/otlp-receiver.js';

const logger = pino({ level: 'silent' });
const on = (env: Record<string, string | undefined>) => startTracing({ serviceName: 'sidecar', logger, env });

describe('startTracing', () => {
  it('is off without an OTLP endpoint, or when the SDK or the trace exporter is disabled', () => {
    expect(on({})).toBeUndefined();
    expect(on({ OTEL_EXPORTER_OTLP_ENDPOINT: '' })).toBeUndefined();
    expect(on({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
    expect(on({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
  });

  it('is on with OTEL_EXPORTER_OTLP_ENDPOINT or the traces endpoint, over protobuf or JSON, and shutdown flushes the spans', async () => {
    // A receiver that is there: against a closed port, shutdown waits out the exporter's retries.
    const receiver = await startOtlpReceiver();
    try {
      for (const [env, encoding] of [
        [{ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }, 'protobuf'],
        [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' }, 'json'],
      ] as const) {
        receiver.spans.length = 0;
        const t = on(env);
        expect(t).toBeDefined();
        const span = t!.startRpcSpan('authz.v1.DecisionService', 'Evaluate', 'rest', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
        expect(span.spanContext().traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
        const root = t!.startRpcSpan('authz.v1.DecisionService', 'Evaluate', 'grpc', 'not a traceparent');
        expect(root.spanContext().traceId).not.toBe('4bf92f3577b34da6a3ce929d0e0e4736');
        expect(root.spanContext().traceId).toMatch(/^[0-9a-f]{32}$/);
        span.end();
        root.end();
        await t!.shutdown();
        expect(receiver.spans.map((s) => [s.traceId, s.parentSpanId, s.encoding, s.service])).toEqual([
          ['4bf92f3577b34da6a3ce929d0e0e4736', '00f067aa0ba902b7', encoding, 'sidecar'],
          [root.spanContext().traceId, '', encoding, 'sidecar'],
        ]);
      }
    } finally {
      await receiver.close();
    }
  });

  it('refuses an OTLP protocol it cannot export with, naming the variable', () => {
    expect(() => on({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }))
      .toThrow(new ConfigError('OTEL_EXPORTER_OTLP_PROTOCOL', `must be one of 'http/protobuf', 'http/json' (OTLP over HTTP), got "grpc"`));
    expect(() => on({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/xml' })).toThrow(/^OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: /);
  });
});
