/**
 * What each refused hostile body costs the process that refuses it (bench/hardening.ts): a
 * control plane (embedded database) and a sidecar following it, started from the checkout at
 * `root` (this one, or another for "before"), each body sent `runs` times one at a time, the
 * server's CPU read from /proc per request (all its threads, once what the request started has
 * settled). The answer's status is recorded, so a shape that is accepted shows as such.
 */
import { existsSync } from 'node:fs';
import * as http2 from 'node:http2';
import { resolve } from 'node:path';
import { envelope } from '../test/conformance/surfaces.js';
import { shapes } from '../test/conformance/hostile.js';
import { startProcess, threadCpuMs, waitFor200, type RunningProcess } from '../test/processes.js';

const BOOTSTRAP = 'azk_bench_wire_bootstrap_0123456789abcdefghijklm';

export interface ShapeCost { process: string; shape: string; key: string; status: string; cpuMsMedian: number; cpuMsMax: number }

async function post(base: string, path: string, type: string, body: Uint8Array, headers: Record<string, string> = {}): Promise<string> {
  const res = await fetch(base + path, { method: 'POST', headers: { 'content-type': type, ...headers }, body });
  await res.arrayBuffer();
  return String(res.status);
}

function grpc(base: string, path: string, message: Uint8Array, headers: Record<string, string> = {}): Promise<string> {
  return new Promise((done, fail) => {
    const session = http2.connect(base);
    session.on('error', fail);
    const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...headers });
    let status = '';
    req.on('response', (h) => (status = String(h['grpc-status'] ?? status)));
    req.on('trailers', (t) => (status = String(t['grpc-status'] ?? status)));
    req.on('data', () => undefined);
    req.on('error', () => undefined);
    req.on('close', () => {
      session.close();
      done(`grpc ${status || 'none'}`);
    });
    req.end(envelope(message));
  });
}

async function json(base: string, method: string, path: string, body?: unknown): Promise<any> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const res = await fetch(base + path, { method, headers: { 'content-type': 'application/json', 'x-api-key': BOOTSTRAP }, body: body === undefined ? undefined : JSON.stringify(body) });
  const parsed = await res.json();
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(parsed)}`);
  return parsed;
}

/** A checkout's main file of `name`: under cmd/, or where a checkout from before cmd/ kept it. */
function mainOf(root: string, name: 'control-plane' | 'sidecar'): string {
  const current = resolve(root, 'cmd', name, 'main.ts');
  return existsSync(current) ? current : resolve(root, name === 'sidecar' ? 'sidecar/main.ts' : 'services/control-plane/main.ts');
}

export async function wireCosts(root: string, runs: number): Promise<ShapeCost[]> {
  const tsx = { nodeArgs: ['--import', 'tsx'] };
  const processes: RunningProcess[] = [];
  try {
    const cp = await startProcess('control-plane', { SERVICE_PORT: '0', SERVICE_DATA_DIR: 'memory://', SERVICE_BOOTSTRAP_API_KEY: BOOTSTRAP, SERVICE_LOG_LEVEL: 'info', DATABASE_URL: '' },
      { ...tsx, entry: mainOf(root, 'control-plane') });
    processes.push(cp);
    const tenant = await json(cp.url, 'POST', '/tenants', { name: 'bench-wire' });
    const serviceKey = (await json(cp.url, 'POST', '/api-keys', { name: 'sidecar', kind: 'service', tenantId: tenant.id })).secretKey as string;
    const sidecar = await startProcess('sidecar', {
      SIDECAR_CONTROL_PLANE_URL: cp.url, SIDECAR_API_KEY: serviceKey, SIDECAR_TENANT_ID: tenant.id, SIDECAR_PORT: '0', SIDECAR_LOG_LEVEL: 'info',
    }, { ...tsx, entry: mainOf(root, 'sidecar') });
    processes.push(sidecar);
    await waitFor200(`${sidecar.url}/readyz`);

    const key = { 'x-api-key': serviceKey };
    const BATCH = '/authz.v1.DecisionService/EvaluateBatch';
    const EVALUATE = '/authz.v1.DecisionService/Evaluate';
    const bodies = { emptyItems: shapes.emptyItems(), structKeys: shapes.structKeys(), unknownFields: shapes.unknownFields(), jsonKeys: shapes.jsonKeys(), jsonZeros: shapes.jsonZeros() };
    const cases: [RunningProcess, string, string, string, () => Promise<string>][] = [];
    for (const [name, headers] of [['none', {}], ['service', key]] as const) {
      cases.push(
        [cp, 'control plane', 'EvaluateBatch 2,000,000 items, Connect binary', name, () => post(cp.url, BATCH, 'application/proto', bodies.emptyItems, headers)],
        [cp, 'control plane', 'EvaluateBatch 2,000,000 items, gRPC', name, () => grpc(cp.url, BATCH, bodies.emptyItems, headers)],
        [cp, 'control plane', 'Evaluate, Struct of 200,000 keys, Connect binary', name, () => post(cp.url, EVALUATE, 'application/proto', bodies.structKeys, headers)],
        [cp, 'control plane', 'Evaluate, 2,000,000 unknown fields, Connect binary', name, () => post(cp.url, EVALUATE, 'application/proto', bodies.unknownFields, headers)],
        [cp, 'control plane', 'REST /evaluate, JSON context of 200,000 keys', name, () => post(cp.url, '/evaluate', 'application/json', bodies.jsonKeys, headers)],
        [cp, 'control plane', 'REST /evaluate, JSON array of 1,000,000 zeros', name, () => post(cp.url, '/evaluate', 'application/json', bodies.jsonZeros, headers)],
      );
    }
    cases.push(
      [cp, 'control plane', 'BatchCreateSubjects 2,000,000 items, Connect binary', 'none', () => post(cp.url, '/authz.v1.SubjectService/BatchCreateSubjects', 'application/proto', bodies.emptyItems)],
      [cp, 'control plane', 'BatchCreateSubjects 2,000,000 items, Connect binary', 'platform', () => post(cp.url, '/authz.v1.SubjectService/BatchCreateSubjects', 'application/proto', bodies.emptyItems, { 'x-api-key': BOOTSTRAP })],
      [sidecar, 'sidecar', 'EvaluateBatch 2,000,000 items, Connect binary', '-', () => post(sidecar.url, BATCH, 'application/proto', bodies.emptyItems)],
      [sidecar, 'sidecar', 'EvaluateBatch 2,000,000 items, gRPC', '-', () => grpc(sidecar.url, BATCH, bodies.emptyItems)],
      [sidecar, 'sidecar', 'Evaluate, Struct of 200,000 keys, Connect binary', '-', () => post(sidecar.url, EVALUATE, 'application/proto', bodies.structKeys)],
      [sidecar, 'sidecar', 'Evaluate, 2,000,000 unknown fields, Connect binary', '-', () => post(sidecar.url, EVALUATE, 'application/proto', bodies.unknownFields)],
      [sidecar, 'sidecar', 'REST /evaluate, JSON context of 200,000 keys', '-', () => post(sidecar.url, '/evaluate', 'application/json', bodies.jsonKeys)],
      [sidecar, 'sidecar', 'REST /evaluate, JSON array of 1,000,000 zeros', '-', () => post(sidecar.url, '/evaluate', 'application/json', bodies.jsonZeros)],
    );
    const out: ShapeCost[] = [];
    for (const [p, process, shape, keyName, send] of cases) {
      const costs: number[] = [];
      let status = '';
      for (let i = 0; i < runs; i++) {
        const before = threadCpuMs(p.child.pid)!;
        status = await send();
        await new Promise((r) => setTimeout(r, 50));
        costs.push(threadCpuMs(p.child.pid)! - before);
      }
      costs.sort((a, b) => a - b);
      const row = { process, shape, key: keyName, status, cpuMsMedian: Math.round(costs[Math.floor(costs.length / 2)] * 10) / 10, cpuMsMax: Math.round(costs[costs.length - 1] * 10) / 10 };
      console.log(`${root}: ${JSON.stringify(row)}`);
      out.push(row);
    }
    return out;
  } finally {
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
  }
}
