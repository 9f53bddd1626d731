/**
 * `npm run bench:hardening`: the cost bounds of untrusted rules. For two hostile inputs (a 2 KB
 * condition of three nested loops over literal arrays, a 5.4 KB pattern), what they cost without
 * the bounds (the libraries alone: json-logic-js on the 2 KB condition, re2js
 * compiling the 5.4 KB pattern) against what the service does with them (refused at write
 * time through the real handlers; a copy stored before the bounds existed, seeded straight into
 * the store, errors and fails closed); then the slowest decisions the API accepts: one condition
 * spending its whole budget over the largest context array a request can carry, ten policies
 * whose conditions together spend a decision's budget, a collection of adversarial patterns.
 * Medians and p99 over `--runs` decisions each. Results go to bench/results/hardening.json.
 *
 * Then the wire: the CPU time a control-plane process and a sidecar process spend on
 * each refused hostile body (test/conformance/hostile.ts), read from /proc per request, median and
 * max of `--wire-runs`; with `--before DIR` (another checkout, e.g. `git worktree add /tmp/before
 * <commit>` with node_modules linked), the same against that checkout's processes in the same run.
 *
 * Usage: tsx bench/hardening.ts [--runs 200] [--wire-runs 5] [--before DIR] [--only wire]
 * (embedded database; DATABASE_URL=… for PostgreSQL)
 */
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import jsonLogic from 'json-logic-js';
import { RE2JS } from 're2js';
import type { JsonObject } from '@bufbuild/protobuf';
import { seedRows, seedTenant, startTestControlPlane, TEST_BOOTSTRAP_KEY } from '../test/harness.js';
import { runAsDeployed } from './as-deployed.js';
import { wireCosts } from './wire-costs.js';
import { loadAverageNow, writeResults } from './results-file.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i].replace(/^--/, ''), process.argv[i + 1]);
const RUNS = Number(args.get('runs') ?? 200);
const WIRE_RUNS = Number(args.get('wire-runs') ?? 5);
const BEFORE = args.get('before');
const ONLY_WIRE = args.get('only') === 'wire';
const backend = process.env.DATABASE_URL ? 'postgres' : 'embedded';

const reportedCondition = (): JsonObject => {
  const arr = () => Array.from({ length: 330 }, () => 0);
  return { some: [arr(), { some: [arr(), { some: [arr(), { '==': [{ var: '' }, 1] }] }] }] };
};
const reportedPattern = 'a{0,1000}'.repeat(600);
const mib = (b: number) => Math.round(b / 1048576);
const ms = (x: number) => Math.round(x * 1000) / 1000;

function stats(xs: number[]) {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: ms(s[Math.floor(s.length / 2)]), p99: ms(s[Math.min(s.length - 1, Math.floor(s.length * 0.99))]), max: ms(s[s.length - 1]) };
}

async function timed<T>(f: () => Promise<T>): Promise<[number, T]> {
  const t0 = performance.now();
  const v = await f();
  return [performance.now() - t0, v];
}

const loadAtStart = loadAverageNow();
const results: Record<string, unknown> = { backend, runs: RUNS };

// Without the bounds: the libraries alone (what an unbounded evaluator spends).
if (!ONLY_WIRE) {
  const t0 = performance.now();
  jsonLogic.apply(reportedCondition() as never, {});
  results.conditionUnbounded = { evaluateMs: ms(performance.now() - t0) };
  const rss0 = process.memoryUsage().rss;
  const t1 = performance.now();
  const re = RE2JS.compile(reportedPattern);
  const compileMs = performance.now() - t1;
  const t2 = performance.now();
  re.matcher('a'.repeat(200)).find();
  results.patternUnbounded = { compileMs: ms(compileMs), firstMatchMs: ms(performance.now() - t2), rssGrowthMiB: mib(process.memoryUsage().rss - rss0) };
  console.log('without the bounds:', JSON.stringify(results.conditionUnbounded), JSON.stringify(results.patternUnbounded));
}

// The control plane in this process runs with its deployed V8 flags.
runAsDeployed();
if (!ONLY_WIRE) await conditionBounds();

// The wire: refused bodies priced in the processes that refuse them.
results.wire = { runs: WIRE_RUNS, after: await wireCosts(ROOT, WIRE_RUNS), ...(BEFORE ? { before: await wireCosts(resolve(BEFORE), WIRE_RUNS) } : {}) };

const command = ['npm run bench:hardening --', ...process.argv.slice(2)].join(' ').replace(/ --$/, '');
console.log(`written to ${writeResults('hardening', { command, results, loadAtStart })}`);

async function conditionBounds(): Promise<void> {
  const app = await startTestControlPlane(backend);
  const rest = async (path: string, body: unknown) => {
    const res = await fetch(app.url + path, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TEST_BOOTSTRAP_KEY }, body: JSON.stringify(body) });
    const json = (await res.json()) as Record<string, unknown>;
    if (res.status !== 200) throw Object.assign(new Error(`[${json.code as string}] ${json.message as string}`), { status: res.status });
    return json;
  };
  try {
    const t = 'tenant_hardening';
    const scope = `scope_${t}`;
    await seedTenant(app.db, t);
    await seedRows(app.db, t, 'subject', [{ id: 'subject_a', type: 'user', externalId: 'a' }]);
    await seedRows(app.db, t, 'role', [{ id: 'role_reader', scopeId: scope, key: 'reader', name: 'Reader', description: '' }]);
    await seedRows(app.db, t, 'permission', [{ id: 'permission_read', scopeId: scope, action: 'read', resourceType: 'doc', resourcePattern: '*', key: 'doc:read:*', name: '', description: '' }]);
    await seedRows(app.db, t, 'rolePermission', [{ id: 'role_permission_read', roleId: 'role_reader', permissionId: 'permission_read' }]);
    await seedRows(app.db, t, 'membership', [{ id: 'membership_a', subjectId: 'subject_a', scopeId: scope }]);
    await seedRows(app.db, t, 'roleAssignment', [{ id: 'role_assignment_a', membershipId: 'membership_a', roleId: 'role_reader' }]);
    await seedRows(app.db, t, 'resourceType', [{ id: 'resource_type_doc', name: 'Doc', key: 'doc', scopeId: scope }]);
    const docs = ['stored', 'scan', 'ten', 'patterns'].map((k) => ({ id: `resource_${k}`, resourceTypeId: 'resource_type_doc', ownerScopeId: scope, externalResourceId: k, displayName: 'a'.repeat(200), attributes: { text: 'ab'.repeat(4_000) } }));
    await seedRows(app.db, t, 'resource', docs);
    const policies = {
      createResourcePolicy: (b: unknown) => rest('/resource-policies', b),
      createResourceCollection: (b: unknown) => rest('/resource-collections', b),
    };
    const decisions = { evaluate: (b: unknown) => rest('/evaluate', b) as Promise<{ reason: string }> };
    const policy = (resource: string, extra: Record<string, unknown>) => ({ scopeId: scope, target: { kind: 'resource', resourceId: resource }, actions: ['read'], effect: 'deny', ...extra });

    // The reported inputs through the real handlers: refused at write time.
    // A refusal writes nothing, so it can be repeated: the median of 20 (the first pays for warm-up).
    const refuse = async (f: () => Promise<unknown>) => {
      const rss0 = process.memoryUsage().rss;
      const took: number[] = [];
      let outcome = '';
      for (let i = 0; i < 20; i++) {
        const [t, o] = await timed(() => f().then(() => 'accepted', (e: Error) => e.message.slice(0, 80)));
        took.push(t);
        outcome = o;
      }
      return { ...stats(took), outcome, rssGrowthMiB: mib(process.memoryUsage().rss - rss0) };
    };
    results.conditionRefused = await refuse(() => policies.createResourcePolicy(policy('resource_scan', { contextCondition: reportedCondition() })));
    results.patternRefused = await refuse(() => policies.createResourceCollection({ scopeId: scope, resourceTypeId: 'resource_type_doc', name: 'p', match: { patterns: { displayName: reportedPattern } } }));
    console.log('refused at write time:', JSON.stringify(results.conditionRefused), JSON.stringify(results.patternRefused));

    // Copies stored before the bounds existed (seeded past the handlers): they error and fail closed.
    await seedRows(app.db, t, 'policy', [{ id: 'policy_stored', scopeId: scope, target: { kind: 'resource', resourceId: 'resource_stored' }, targetId: 'resource_stored', actions: ['read'], effect: 'deny', priority: 0, subjectCondition: null, contextCondition: reportedCondition() }]);
    await seedRows(app.db, t, 'collection', [{ id: 'collection_stored', scopeId: scope, resourceTypeId: 'resource_type_doc', name: 'stored', description: '', matchDefinition: { patterns: { displayName: reportedPattern } } }]);
    await seedRows(app.db, t, 'policy', [{ id: 'policy_stored_collection', scopeId: scope, target: { kind: 'collection', collectionId: 'collection_stored' }, targetId: 'collection_stored', actions: ['write'], effect: 'deny', priority: 0, subjectCondition: null, contextCondition: null }]);

    const ask = (resource: string, extra: Record<string, unknown> = {}) => ({ actor: { subjectId: 'subject_a' }, scopeId: scope, action: 'read', resource: { resourceId: resource }, ...extra });
    const series = async (name: string, req: Record<string, unknown>, want: string) => {
      const first = await decisions.evaluate(req as never); // builds the index / warms up
      if (first.reason !== want) throw new Error(`${name}: ${first.reason}, expected ${want}`);
      const xs: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const [took, d] = await timed(() => decisions.evaluate(req as never));
        if (d.reason !== want) throw new Error(`${name}: ${d.reason}, expected ${want}`);
        xs.push(took);
      }
      const s = stats(xs);
      console.log(`${name}: ${JSON.stringify(s)} ms per REST /evaluate, client in this process (${want})`);
      return s;
    };

    // The floor: a role-only decision through the same client and server (fetch, HTTP, JSON, auth).
    results.roleOnly = await series('role only, no policy (the floor of every row below)', ask('resource_ten', { action: 'read', resource: { externalResourceId: 'x', resourceType: 'doc' } }), 'role');
    results.storedCondition = await series('stored 2 KB condition (errors, its deny applies)', ask('resource_stored'), 'policy_deny');
    results.storedPattern = await series('stored 5.4 KB pattern (errors without compiling, its deny applies)', ask('resource_patterns', { action: 'write' }), 'policy_deny');

    // The slowest decisions the API accepts.
    const scan: JsonObject = { some: [{ var: 'xs' }, { '==': [{ var: '' }, -1] }] };
    await policies.createResourcePolicy(policy('resource_scan', { contextCondition: scan }));
    const xs = Array.from({ length: 8_000 }, () => 0); // 16 KiB of JSON: the most a context holds
    results.oneConditionWholeBudget = await series('one condition spending its whole budget (8,000-element context array)', ask('resource_scan', { context: { xs } }), 'policy_deny');
    const medium = Array.from({ length: 800 }, () => 0);
    for (let i = 0; i < 10; i++) await policies.createResourcePolicy(policy('resource_ten', { id: `policy_ten_${i}`, priority: i, contextCondition: scan }));
    results.tenConditionsDecisionBudget = await series('ten conditions spending the decision budget', ask('resource_ten', { context: { xs: medium } }), 'policy_deny');
    const adversarial = { patterns: { 'attributes.text': '(a|b)*(ab)+(a|b)*c' }, fields: { displayName: { regex: '(a*)*b' } } };
    for (let i = 0; i < 50; i++) await policies.createResourceCollection({ id: `collection_adv_${i}`, scopeId: scope, resourceTypeId: 'resource_type_doc', name: `adv${i}`, match: adversarial as never });
    for (let i = 0; i < 50; i++) await policies.createResourcePolicy({ scopeId: scope, target: { kind: 'collection', collectionId: `collection_adv_${i}` }, actions: ['read'], effect: 'deny' } as never);
    results.fiftyAdversarialCollections = await series('50 collections of adversarial patterns over 8 KB attributes (the budget runs out: their denies apply)', ask('resource_patterns'), 'policy_deny');
  } finally {
    await app.close();
  }
}
