/**
 * Propagation, part of `npm run bench:sidecar`: how long after a write commits a sidecar's
 * decision reflects it, over real processes (the control plane and the sidecar from `dist/`) on
 * PostgreSQL (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres; a scratch
 * database is created and dropped).
 *
 * Each of `--writes` writes (a role assignment granted, then revoked, alternately) is followed at
 * once by a sidecar `/evaluate` carrying the write's `x-revision` as `minRevision`, which the
 * sidecar answers as soon as its index reaches that revision. Propagation is the time from the
 * write's answer (the commit precedes it) to the decision's answer, so it includes one loopback
 * round trip of the decision itself; `sinceSent` is the same from the moment the write was sent
 * (an upper bound on commit → decision). Targets: p50 ≤ 10 ms, p99 ≤ 50 ms. Results go to
 * bench/results/propagation.json.
 *
 * Usage: npm run build && tsx bench/propagation.ts [-- --writes 1000]
 */
import { createScratchDatabase } from '../test/databases.js';
import { startProcess, waitFor200, type RunningProcess } from '../test/processes.js';
import { loadAverageNow, writeResults } from './results-file.js';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i].replace(/^--/, ''), process.argv[i + 1]);
const WRITES = Number(args.get('writes') ?? 1000);
const KEY = 'azk_bench_propagation_bootstrap_0123456789abc';

async function call(base: string, method: string, path: string, body: unknown, key = KEY) {
  const res = await fetch(base + path, { method, headers: { 'content-type': 'application/json', 'x-api-key': key }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return { revision: Number(res.headers.get('x-revision')), body: text ? JSON.parse(text) : undefined };
}

const pct = (xs: number[], q: number) => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))];

async function main() {
  const loadAtStart = loadAverageNow();
  const scratch = await createScratchDatabase(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', 'authz_bench_propagation');
  const processes: RunningProcess[] = [];
  try {
    const cp = await startProcess('control-plane', { DATABASE_URL: scratch.url, SERVICE_PORT: '0', SERVICE_BOOTSTRAP_API_KEY: KEY, SERVICE_LOG_LEVEL: 'info' }, { built: true });
    processes.push(cp);
    const tenant = (await call(cp.url, 'POST', '/tenants', { name: 'bench' })).body;
    const scopeId = tenant.scopeId as string;
    const subject = (await call(cp.url, 'POST', '/subjects', { tenantId: tenant.id, type: 'user', externalId: 'alice' })).body;
    const role = (await call(cp.url, 'POST', '/roles', { scopeId, key: 'editor', name: 'Editor' })).body;
    const perm = (await call(cp.url, 'POST', '/permissions', { scopeId, action: 'edit', resourceType: 'doc', resourcePattern: '*' })).body;
    await call(cp.url, 'POST', '/role-permissions', { roleId: role.id, permissionId: perm.id });
    const membership = (await call(cp.url, 'POST', '/memberships', { subjectId: subject.id, scopeId })).body;
    const serviceKey = (await call(cp.url, 'POST', '/api-keys', { name: 'sidecar', kind: 'service', tenantId: tenant.id })).body.secretKey as string;
    const sidecar = await startProcess('sidecar', {
      SIDECAR_CONTROL_PLANE_URL: cp.url, SIDECAR_API_KEY: serviceKey, SIDECAR_TENANT_ID: tenant.id, SIDECAR_PORT: '0', SIDECAR_LOG_LEVEL: 'info',
    }, { built: true });
    processes.push(sidecar);
    await waitFor200(`${sidecar.url}/readyz`);

    const afterAnswer: number[] = [];
    const sinceSent: number[] = [];
    let stale = 0;
    let assignment: string | undefined;
    for (let i = 0; i < WRITES; i++) {
      const sent = performance.now();
      const write = assignment === undefined
        ? await call(cp.url, 'POST', '/role-assignments', { membershipId: membership.id, roleId: role.id })
        : await call(cp.url, 'DELETE', `/role-assignments/${assignment}`, undefined);
      const answered = performance.now();
      const want = assignment === undefined;
      assignment = want ? write.body.id : undefined;
      const d = await call(sidecar.url, 'POST', '/evaluate', {
        actor: { subjectId: subject.id }, scopeId, action: 'edit', consistency: { minRevision: write.revision },
      }, serviceKey);
      const seen = performance.now();
      if (d.body.allowed !== want) stale++;
      afterAnswer.push(seen - answered);
      sinceSent.push(seen - sent);
    }
    afterAnswer.sort((a, b) => a - b);
    sinceSent.sort((a, b) => a - b);
    const propagation = {
      writes: WRITES, stale,
      afterWriteAnswerMs: { p50: pct(afterAnswer, 0.5), p99: pct(afterAnswer, 0.99), max: afterAnswer[afterAnswer.length - 1] },
      sinceWriteSentMs: { p50: pct(sinceSent, 0.5), p99: pct(sinceSent, 0.99), max: sinceSent[sinceSent.length - 1] },
    };
    const f = (x: number) => x.toFixed(2);
    console.log(`propagation over ${WRITES} writes (${stale} stale): write answered → sidecar decision p50 ${f(propagation.afterWriteAnswerMs.p50)} ms, ` +
      `p99 ${f(propagation.afterWriteAnswerMs.p99)} ms, max ${f(propagation.afterWriteAnswerMs.max)} ms (targets ≤ 10 / ≤ 50); ` +
      `from the write sent: p50 ${f(propagation.sinceWriteSentMs.p50)} ms, p99 ${f(propagation.sinceWriteSentMs.p99)} ms`);
    const command = ['npm run build && tsx bench/propagation.ts', ...process.argv.slice(2)].join(' ');
    console.log(`wrote ${writeResults('propagation', { command, results: propagation, loadAtStart })}`);
  } finally {
    await Promise.all(processes.map((p) => p.stop('SIGTERM')));
    await scratch.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
