/**
 * The decision log on every surface of both processes: a line per decision (per request of a
 * batch) with the request, the answer, the revision, the latency and the caller's trace id; a
 * share of them at a sample rate in between; nothing, and no log at all, by default.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { startSidecar, type Sidecar } from '../../sidecar/app.js';
import type { SidecarConfig } from '../../sidecar/config.js';
import { ROOT, ROWS, TENANT, scriptedControlPlane, snapshot } from '../scripted-control-plane.js';
import { populate, restClient } from '../watch-fixtures.js';
import { SURFACES, evaluateBatchOn, evaluateOn } from '../conformance/surfaces.js';
import { describeEachBackend, startTestControlPlane, TEST_BOOTSTRAP_KEY } from '../harness.js';
import { startControlPlane } from '../../services/control-plane/app.js';
import { loadConfig } from '../../services/control-plane/config.js';
import { ConfigError } from '../../services/common/settings.js';

const dir = mkdtempSync(join(tmpdir(), 'decision-log-e2e-'));
const traceparent = (i: number) => `00-${i.toString(16).padStart(32, 'a')}-00f067aa0ba902b7-01`;
const traceIdOf = (i: number) => i.toString(16).padStart(32, 'a');

/** The lines of a decision-log file (waits for the asynchronous writer to catch up). */
async function linesOf(path: string, atLeast: number): Promise<Record<string, unknown>[]> {
  const end = Date.now() + 5_000;
  for (;;) {
    let text = '';
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      // not created yet
    }
    const lines = text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    if (lines.length >= atLeast || Date.now() > end) return lines;
    await new Promise((r) => setTimeout(r, 10));
  }
}

const metric = async (url: string, result: string) =>
  Number(new RegExp(`^authz_decision_log_lines_total\\{result="${result}"\\} (\\d+)$`, 'm').exec(await (await fetch(`${url}/metrics`)).text())?.[1] ?? NaN);

describe('the sidecar\'s decision log', () => {
  let cp: Awaited<ReturnType<typeof scriptedControlPlane>>;
  const sidecars: Sidecar[] = [];
  const config = (over: Partial<SidecarConfig>): SidecarConfig => ({
    controlPlaneUrl: cp.server.url, apiKey: 'azk_decision_log', tenantId: TENANT, host: '127.0.0.1', port: 0,
    maxStalenessMs: 30_000, minRevisionWaitMs: 50, watchCompression: 'none', logLevel: 'silent', ...over,
  });
  async function start(over: Partial<SidecarConfig>): Promise<Sidecar> {
    const s = await startSidecar(config(over), pino({ level: 'silent' }));
    sidecars.push(s);
    (await cp.next()).push(snapshot(9, 0, true, ROWS));
    while (!s.follower.fresh()) await new Promise((r) => setTimeout(r, 5));
    return s;
  }
  beforeAll(async () => {
    cp = await scriptedControlPlane();
  });
  afterAll(async () => {
    for (const s of sidecars) await s.close();
    await cp?.server.close();
  });

  it('writes a line per decision on REST, Connect JSON and binary, gRPC and gRPC-Web, and per request of a batch', async () => {
    const path = join(dir, 'sidecar.jsonl');
    const s = await start({ decisionLog: { kind: 'file', path } });
    const read = { actor: { subjectId: 'subject_alice' }, scopeId: ROOT, action: 'read', resource: { resourceType: 'doc', externalResourceId: 'doc-1' } };
    for (const [i, surface] of SURFACES.entries()) {
      expect(await evaluateOn(surface, s.server.url, read, { traceparent: traceparent(i + 1) })).toMatchObject({ ok: { allowed: true } });
    }
    const del = { actor: { subjectId: 'subject_alice' }, scopeId: ROOT, action: 'delete', resource: { resourceId: 'resource_doc1' } };
    const byExternalId = { ...read, actor: { externalId: 'alice' } };
    expect(await evaluateBatchOn('grpc', s.server.url, [read, del, { ...read, actor: { subjectId: 'subject_bob' } }, byExternalId]))
      .toMatchObject({ ok: { results: [{ allowed: true }, { allowed: false }, { allowed: false }, { allowed: true }] } });
    // A refused request is not a decision: no line.
    await evaluateOn('rest', s.server.url, { ...read, scopeId: 'scope_elsewhere' });
    const lines = await linesOf(path, SURFACES.length + 4);
    expect(lines).toHaveLength(SURFACES.length + 4);
    for (const [i, line] of lines.slice(0, SURFACES.length).entries()) {
      expect(line, SURFACES[i]).toMatchObject({
        service: 'sidecar', method: 'Evaluate', tenant: TENANT, subject: 'subject_alice', subjectType: null, scope: ROOT, action: 'read',
        resource: null, resourceType: 'doc', externalResourceId: 'doc-1', allowed: true, reason: 'role', revision: 9, policyId: null,
        traceId: traceIdOf(i + 1),
      });
      expect(line.latencyMs).toBeGreaterThanOrEqual(0);
      expect(line.latencyMs).toBeLessThan(5_000);
    }
    expect(lines.slice(SURFACES.length)).toMatchObject([
      { method: 'EvaluateBatch', subject: 'subject_alice', action: 'read', allowed: true, reason: 'role', traceId: null },
      { method: 'EvaluateBatch', subject: 'subject_alice', action: 'delete', resource: 'resource_doc1', allowed: false, reason: 'policy_deny', policyId: 'policy_no_delete' },
      { method: 'EvaluateBatch', subject: 'subject_bob', allowed: false, reason: 'no_match' },
      // By external id: the subject it resolved to beside the id given.
      { method: 'EvaluateBatch', subject: 'subject_alice', subjectExternalId: 'alice', allowed: true, reason: 'role' },
    ]);
    expect(await metric(s.server.url, 'written')).toBe(SURFACES.length + 4);
  });

  it('at a sample rate of 0.25 writes about a quarter of the decisions', async () => {
    const path = join(dir, 'sidecar-sampled.jsonl');
    const s = await start({ decisionLog: { kind: 'file', path }, decisionLogSample: 0.25 });
    const body = JSON.stringify({ actor: { subjectId: 'subject_alice' }, scopeId: ROOT, action: 'read' });
    for (let i = 0; i < 400; i++) await fetch(`${s.server.url}/evaluate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const written = await metric(s.server.url, 'written');
    expect(written + (await metric(s.server.url, 'skipped'))).toBe(400);
    // Binomial(400, 0.25): mean 100, standard deviation 8.7; these bounds are over 6 of them.
    expect(written).toBeGreaterThan(45);
    expect(written).toBeLessThan(155);
    expect(await linesOf(path, written)).toHaveLength(written);
  });

  it('is off by default: no log, no metric', async () => {
    const s = await start({});
    await fetch(`${s.server.url}/evaluate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ actor: { subjectId: 'subject_alice' }, scopeId: ROOT, action: 'read' }) });
    expect(await (await fetch(`${s.server.url}/metrics`)).text()).not.toContain('authz_decision_log');
  });
});

describeEachBackend('the control plane\'s decision log on %s', (backend) => {
  let cp: Awaited<ReturnType<typeof startTestControlPlane>>;
  const path = join(dir, `control-plane-${backend}.jsonl`);
  beforeAll(async () => {
    cp = await startTestControlPlane(backend, { SERVICE_DECISION_LOG: `file:${path}` });
  });
  afterAll(() => cp?.close());

  it('writes a line per decision on every surface, with the tenant and the revision', async () => {
    const t = await populate(restClient(cp.url, TEST_BOOTSTRAP_KEY), 'logged');
    const auth = { 'x-api-key': TEST_BOOTSTRAP_KEY };
    const edit = { actor: { subjectId: t.subjectIds[0] }, scopeId: t.scopeId, action: 'edit', resource: { resourceId: t.resourceIds[2] } };
    for (const [i, surface] of SURFACES.entries()) {
      expect(await evaluateOn(surface, cp.url, edit, { ...auth, traceparent: traceparent(100 + i) })).toMatchObject({ ok: { allowed: true } });
    }
    expect(await evaluateBatchOn('connect-json', cp.url, [edit, { ...edit, actor: { subjectId: t.subjectIds[1] } }], auth)).toMatchObject({ ok: { results: [{ allowed: true }, { allowed: false }] } });
    // Refused before deciding (no key): no line.
    await evaluateOn('rest', cp.url, edit);
    const lines = await linesOf(path, SURFACES.length + 2);
    expect(lines).toHaveLength(SURFACES.length + 2);
    const revision = lines[0].revision as number;
    expect(revision).toBeGreaterThan(10);
    for (const [i, line] of lines.slice(0, SURFACES.length).entries()) {
      expect(line, SURFACES[i]).toMatchObject({
        service: 'control-plane', method: 'Evaluate', tenant: t.tenantId, subject: t.subjectIds[0], scope: t.scopeId, action: 'edit',
        resource: t.resourceIds[2], allowed: true, reason: 'role', revision, policyId: null, traceId: traceIdOf(100 + i),
      });
    }
    expect(lines.slice(SURFACES.length)).toMatchObject([
      { method: 'EvaluateBatch', subject: t.subjectIds[0], allowed: true, reason: 'role' },
      { method: 'EvaluateBatch', subject: t.subjectIds[1], allowed: false, reason: 'no_match', tenant: t.tenantId },
    ]);
  });
});

describe('a decision-log file that cannot be opened', () => {
  it('stops either process at start-up, naming the variable', async () => {
    const missing = join(dir, 'no-such-dir', 'decisions.jsonl');
    const config = loadConfig({ SERVICE_DATA_DIR: 'memory://', SERVICE_PORT: '0', SERVICE_DECISION_LOG: `file:${missing}` }, []);
    await expect(startControlPlane(config, pino({ level: 'silent' }))).rejects.toThrow(new ConfigError('SERVICE_DECISION_LOG', `cannot open ${missing} for appending: ENOENT`));
    await expect(startSidecar({
      controlPlaneUrl: 'http://127.0.0.1:9', apiKey: 'azk_x', tenantId: TENANT, host: '127.0.0.1', port: 0, maxStalenessMs: 1000, minRevisionWaitMs: 0,
      watchCompression: 'none', logLevel: 'silent', decisionLog: { kind: 'file', path: missing },
    }, pino({ level: 'silent' }))).rejects.toThrow(/^SIDECAR_DECISION_LOG: cannot open/);
  });
});
