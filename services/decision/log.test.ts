/**
 * The decision log on its own: the line's fields, sampling (seeded, so counts are exact), the
 * bounded buffer that drops instead of blocking, closing, and the settings that configure it.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import type { Decision, EvaluateRequest } from '../engine/mod.js';
import { ConfigError } from '../common/settings.js';
import { loadConfig } from '../control-plane/config.js';
import { loadSidecarConfig } from '../../sidecar/config.js';
import { DecisionLog, traceIdOf, type DecisionLogOptions } from './log.js';
import { mulberry32 } from '../../test/seeded-random.js';

const logger = pino({ level: 'silent' });
const dir = mkdtempSync(join(tmpdir(), 'decision-log-'));
let n = 0;


async function open(over: Partial<DecisionLogOptions> = {}) {
  const path = join(dir, `log-${n++}.jsonl`);
  const registry = new Registry();
  const log = await DecisionLog.open({
    target: { kind: 'file', path }, sample: 1, bufferBytes: 1 << 20, service: 'sidecar', variable: 'SIDECAR_DECISION_LOG', registry, logger, ...over,
  });
  const lines = () => readFileSync(path, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
  const counts = async () => {
    const text = await registry.metrics();
    const v = (result: string) => Number(new RegExp(`authz_decision_log_lines_total\\{result="${result}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
    return { written: v('written'), dropped: v('dropped'), skipped: v('skipped') };
  };
  return { log: log!, lines, counts, path };
}

const request: EvaluateRequest = { actor: { subjectId: 'subject_alice' }, scopeId: 'scope_eng', action: 'edit', resource: { resourceId: 'resource_plan' } };
const allowed: Decision = { allowed: true, reason: 'role', decidedByPolicy: false, revision: 12 };

describe('DecisionLog', () => {
  it('is off when asked: no log at all', async () => {
    expect(await DecisionLog.open({ target: { kind: 'off' }, sample: 1, bufferBytes: 4096, service: 'sidecar', variable: 'X', registry: new Registry(), logger })).toBeUndefined();
  });

  it('writes one JSON line per decision with every field', async () => {
    const { log, lines, counts } = await open();
    const start = performance.now() - 2;
    log.record(request, allowed, 'tenant_acme', { start, method: 'Evaluate', traceId: '4bf92f3577b34da6a3ce929d0e0e4736' });
    const external: EvaluateRequest = { actor: { subjectId: 'subject_bob', subjectType: 'user' }, scopeId: 'scope_eng', action: 'delete', resource: { resourceType: 'doc', externalResourceId: 'plan-2027' } };
    const denied: Decision = { allowed: false, reason: 'policy_deny', decidedByPolicy: true, revision: 13, evaluatedPolicy: { id: 'policy_office_hours' } as never };
    log.record(external, denied, undefined, { start, method: 'EvaluateBatch' });
    const byExternalId: EvaluateRequest = { actor: { externalId: 'carol', subjectType: 'user' }, scopeId: 'scope_eng', action: 'edit' };
    log.record(byExternalId, allowed, 'tenant_acme', { start, method: 'Evaluate' }, 'subject_carol');
    await log.close();
    const [a, b, c] = lines();
    expect(Object.keys(a)).toEqual([
      'time', 'service', 'method', 'tenant', 'subject', 'subjectExternalId', 'subjectType', 'scope', 'action', 'resource', 'resourceType', 'externalResourceId',
      'allowed', 'reason', 'revision', 'policyId', 'latencyMs', 'traceId',
    ]);
    expect(a).toMatchObject({
      service: 'sidecar', method: 'Evaluate', tenant: 'tenant_acme', subject: 'subject_alice', subjectType: null, scope: 'scope_eng', action: 'edit',
      resource: 'resource_plan', resourceType: null, externalResourceId: null, allowed: true, reason: 'role', revision: 12, policyId: null,
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
    });
    expect(Date.parse(a.time as string)).toBeGreaterThan(Date.now() - 60_000);
    expect(a.latencyMs).toBeGreaterThanOrEqual(2);
    expect(b).toMatchObject({
      method: 'EvaluateBatch', tenant: null, subject: 'subject_bob', subjectType: 'user', resource: null, resourceType: 'doc', externalResourceId: 'plan-2027',
      allowed: false, reason: 'policy_deny', revision: 13, policyId: 'policy_office_hours', traceId: null,
    });
    expect(c).toMatchObject({ subject: 'subject_carol', subjectExternalId: 'carol', subjectType: 'user' });
    expect(await counts()).toEqual({ written: 3, dropped: 0, skipped: 0 });
  });

  it('writes none at sample 0, and at 0.3 exactly the draws under 0.3 of its generator', async () => {
    const none = await open({ sample: 0 });
    for (let i = 0; i < 500; i++) none.log.record(request, allowed, 'tenant_acme', { start: performance.now(), method: 'Evaluate' });
    await none.log.close();
    expect(none.lines()).toEqual([]);
    expect(await none.counts()).toEqual({ written: 0, dropped: 0, skipped: 500 });

    const some = await open({ sample: 0.3, random: mulberry32(42) });
    for (let i = 0; i < 2000; i++) some.log.record({ ...request, action: `a${i}` }, allowed, 'tenant_acme', { start: performance.now(), method: 'Evaluate' });
    await some.log.close();
    const replay = mulberry32(42);
    const expected = Array.from({ length: 2000 }, (_, i) => i).filter(() => replay() < 0.3).map((i) => `a${i}`);
    expect(some.lines().map((l) => l.action)).toEqual(expected);
    expect(expected.length).toBeGreaterThan(540); // about 600 of 2,000
    expect(expected.length).toBeLessThan(660);
    expect(await some.counts()).toEqual({ written: expected.length, dropped: 0, skipped: 2000 - expected.length });
  });

  it('drops and counts lines past its buffer instead of waiting for the file', async () => {
    const { log, lines, counts } = await open({ bufferBytes: 4096 });
    // One synchronous burst: no write can complete meanwhile, so the buffer fills.
    const t0 = performance.now();
    for (let i = 0; i < 1000; i++) log.record({ ...request, action: `burst-${i}` }, allowed, 'tenant_acme', { start: t0, method: 'Evaluate' });
    const c = await counts();
    expect(c.dropped).toBeGreaterThan(900);
    expect(c.written + c.dropped).toBe(1000);
    await log.close();
    const written = lines();
    expect(written.length).toBe(c.written);
    // The first lines got in, whole; the rest were dropped, not interleaved.
    expect(written.map((l) => l.action)).toEqual(Array.from({ length: c.written }, (_, i) => `burst-${i}`));
  });

  it('refuses a file it cannot open, naming the variable', async () => {
    await expect(open({ target: { kind: 'file', path: join(dir, 'missing-dir', 'x.jsonl') } })).rejects.toThrow(
      new ConfigError('SIDECAR_DECISION_LOG', `cannot open ${join(dir, 'missing-dir', 'x.jsonl')} for appending: ENOENT`),
    );
  });

  it('reads the trace id of a traceparent header, and nothing else', () => {
    expect(traceIdOf('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(traceIdOf('00-00000000000000000000000000000000-00f067aa0ba902b7-01')).toBeUndefined();
    expect(traceIdOf('garbage')).toBeUndefined();
    expect(traceIdOf(undefined)).toBeUndefined();
  });
});

describe('decision-log settings', () => {
  it('are off, every decision, 4 MiB by default, on both processes', () => {
    expect(loadConfig({}, [])).toMatchObject({ decisionLog: { kind: 'off' }, decisionLogSample: 1, decisionLogBufferBytes: 4 * 1024 * 1024 });
    const sidecar = { SIDECAR_CONTROL_PLANE_URL: 'http://cp:8080', SIDECAR_API_KEY: 'azk_x', SIDECAR_TENANT_ID: 'tenant_a' };
    expect(loadSidecarConfig(sidecar, [])).toMatchObject({ decisionLog: { kind: 'off' }, decisionLogSample: 1, decisionLogBufferBytes: 4 * 1024 * 1024 });
    expect(loadSidecarConfig({ ...sidecar, SIDECAR_DECISION_LOG: 'file:/var/log/d.jsonl', SIDECAR_DECISION_LOG_SAMPLE: '0.25' }, []))
      .toMatchObject({ decisionLog: { kind: 'file', path: '/var/log/d.jsonl' }, decisionLogSample: 0.25 });
  });

  it('take values and flag twins', () => {
    expect(loadConfig({ SERVICE_DECISION_LOG: 'stdout', SERVICE_DECISION_LOG_SAMPLE: '.5' }, [])).toMatchObject({ decisionLog: { kind: 'stdout' }, decisionLogSample: 0.5 });
    expect(loadConfig({}, ['--service-decision-log', 'file:decisions.jsonl', '--service-decision-log-sample=0', '--service-decision-log-buffer-bytes', '65536']))
      .toMatchObject({ decisionLog: { kind: 'file', path: 'decisions.jsonl' }, decisionLogSample: 0, decisionLogBufferBytes: 65536 });
  });

  it('refuse bad values, naming the variable', () => {
    const bad = (env: Record<string, string>) => {
      try {
        loadConfig(env, []);
        return 'accepted';
      } catch (e) {
        return (e as Error).message;
      }
    };
    expect(bad({ SERVICE_DECISION_LOG: 'stderr' })).toBe(`SERVICE_DECISION_LOG: must be 'off', 'stdout' or 'file:<path>', got "stderr"`);
    expect(bad({ SERVICE_DECISION_LOG: 'file:' })).toMatch(/^SERVICE_DECISION_LOG: file: needs a path/);
    expect(bad({ SERVICE_DECISION_LOG_SAMPLE: '1.5' })).toBe('SERVICE_DECISION_LOG_SAMPLE: must be a number from 0 to 1, got 1.5');
    expect(bad({ SERVICE_DECISION_LOG_SAMPLE: '-0.1' })).toBe('SERVICE_DECISION_LOG_SAMPLE: must be a number from 0 to 1, got "-0.1"');
    expect(bad({ SERVICE_DECISION_LOG_SAMPLE: '1e-3' })).toMatch(/^SERVICE_DECISION_LOG_SAMPLE: must be a number/);
    expect(bad({ SERVICE_DECISION_LOG_BUFFER_BYTES: '100' })).toBe('SERVICE_DECISION_LOG_BUFFER_BYTES: must be between 4096 and 1073741824, got 100');
    expect(() => loadSidecarConfig({ SIDECAR_CONTROL_PLANE_URL: 'http://cp', SIDECAR_API_KEY: 'k', SIDECAR_TENANT_ID: 'tenant_a', SIDECAR_DECISION_LOG_SAMPLE: 'half' }, []))
      .toThrow('SIDECAR_DECISION_LOG_SAMPLE: must be a number from 0 to 1, got "half"');
  });
});
