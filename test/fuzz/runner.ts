/**
 * One fuzz run: a fresh control plane and database, the seeded world, a sidecar following the
 * fuzzed tenant, then cases until the budget is spent. A case is one process (mostly the control
 * plane; the sidecar for a share of decision RPCs), one method (round robin over the process's
 * methods, in a seeded order), one surface (REST, Connect JSON, Connect binary, gRPC, gRPC-Web),
 * one key (on the control plane: mostly the platform key, sometimes a `user` or `service` key of
 * the fuzzed tenant, or none) and either the valid request or one mutation of it (JSON
 * mutations on JSON surfaces, binary ones on binary surfaces). Each case is sent to an idle
 * process, alone, and measured (CPU time, event-loop delay); then the invariants are checked
 * (judge.ts). Failures are collected, not thrown, so one run shows every distinct failure class.
 */
import { createHash } from 'node:crypto';
import { AccessTier } from '../../gen/authz/v1/options_pb.js';
import { type Rng } from '../../services/engine/testdata/generate.js';
import { mulberry32 } from '../seeded-random.js';
import { mutateBinary, validBinary, type BinaryPayload } from './binary-mutations.js';
import { PLATFORM_SECRET, startFuzzServer } from './control-plane.js';
import { METHODS, isObj, needs, pathText, validRequest, type Json, type JsonObj, type MethodInfo, type Mutation, type Payload } from './generator.js';
import { closeSessions, isBinary, SURFACES, type Surface } from './http.js';
import { snapshot } from './invariants.js';
import { mutate } from './json-mutations.js';
import {
  checkCase, checkErrorLogs, checkHealth, checkLog, childOf, judgeCost, logsOf, measured, normalize, percentile, record, resend,
} from './judge.js';
import { coverageShortfalls } from './report.js';
import { toConnect, toRest, type HttpRequest } from './requests.js';
import { startFuzzSidecar } from './sidecar.js';
import type { Bounds, CaseRecord, CostSummary, KeyKind, MethodStats, RunOptions, RunResult, State, Target } from './types.js';
import { buildWorld, call, ensureSpare } from './world.js';

export type { RunOptions, RunResult } from './types.js';

/**
 * The target is 20 ms of CPU per refused request (report.ts TARGET_CPU_MS); the bound has the
 * margin a busy 2-core machine needs not to flake, and still catches a regression: a decoder
 * without bounds spends seconds on the hostile shapes. A stall is the loop held 100 ms.
 */
export const DEFAULT_BOUNDS: Bounds = { cpuMs: 100, stallMs: 100, hardStallMs: 1_000 };

/** Share of cases sent to the sidecar (when it is a target). */
const SIDECAR_SHARE = 0.2;
/** Share of cases that send the valid request unmutated. */
const VALID_SHARE = 0.2;

const emptyCost = (): State['costs']['control-plane'] => ({
  measured: 0, refused: 0, refusedCpuMaxMs: 0, refusedCpuP99Ms: 0, anyCpuMaxMs: 0, loopMaxMs: 0, loopP99Ms: 0, stallMaxMs: 0, stallP99Ms: 0,
  overCpu: 0, overStall: 0, confirmed: 0, unconfirmed: [], top: [], longest: [], refusedByKind: {}, refusedCpu: [], loops: [], stalls: [], kinds: {},
});

export async function runFuzz(opts: RunOptions): Promise<RunResult> {
  const log = opts.log ?? (() => {});
  const r: Rng = mulberry32(opts.seed);
  const started = Date.now();
  const bounds: Bounds = { ...DEFAULT_BOUNDS, ...opts.bounds };
  const server = await startFuzzServer(opts.backend);
  const byMethod: RunResult['byMethod'] = { 'control-plane': {}, sidecar: {} };
  const valid = { sent: 0, ok: 0 };
  const outcomes: Record<string, Record<string, number>> = {};
  const timing = { requests: 0, measuring: 0, checks: 0, spares: 0, replays: 0 };
  const sequence = createHash('sha256');
  let cases = 0;
  let setupMs = 0;
  let s: State | undefined;
  try {
    const { world, keys } = await buildWorld(server, PLATFORM_SECRET, r);
    const first = await snapshot(server);
    s = {
      server, world, keys, opts, bounds, failures: [], lastDigest: first.digest, lastTx: first.tx, knownGaps: new Set(), recent: [],
      slowByClass: new Map(), costs: { 'control-plane': emptyCost(), sidecar: emptyCost() }, logCursor: { 'control-plane': 0, sidecar: 0 },
    };
    const state = s;
    checkLog(state, { label: 'world seeding', caseIndex: -1 }, first.gaps);

    const matches = (m: MethodInfo) => !opts.methods?.length || opts.methods.some((x) => m.name === x || m.name.endsWith(`.${x}`) || m.name.endsWith(x));
    const methods: Record<Target, MethodInfo[]> = {
      'control-plane': METHODS.filter(matches),
      sidecar: METHODS.filter((m) => m.name.startsWith('authz.v1.DecisionService.') && matches(m)),
    };
    if (methods['control-plane'].length === 0) throw new Error(`FUZZ_METHOD matches no method: ${opts.methods?.join(', ')}`);
    const targets = (opts.targets?.length ? opts.targets : ['control-plane', 'sidecar'] as Target[]).filter((t) => methods[t].length > 0);
    if (targets.length === 0) throw new Error(`FUZZ_TARGET ${opts.targets?.join(', ')} serves none of the methods of FUZZ_METHOD`);
    if (targets.includes('sidecar')) {
      // Its own key: the fuzzer may revoke keys it made, never this one.
      const key = (await call(server, PLATFORM_SECRET, 'CreateApiKey', { tenantId: world.A.tenantId, name: 'fuzz-sidecar', kind: 'service' })) as JsonObj;
      state.sidecar = await startFuzzSidecar(server.url, key.secretKey as string, world.A.tenantId);
      const snap = await snapshot(server);
      state.lastDigest = snap.digest;
      state.lastTx = snap.tx;
    }
    checkErrorLogs(state, undefined);
    setupMs = Date.now() - started;
    log(`fuzz ${opts.backend} seed ${opts.seed}: world${state.sidecar ? ' and sidecar' : ''} ready in ${setupMs} ms`);

    const surfaces = opts.surfaces?.length ? opts.surfaces : [...SURFACES];
    const deadline = Date.now() + opts.budgetMs;
    const order: Record<Target, MethodInfo[]> = { 'control-plane': [], sidecar: [] };
    const rounds: Record<Target, number> = { 'control-plane': 0, sidecar: 0 };
    while (Date.now() < deadline && (opts.maxCases === undefined || cases < opts.maxCases)) {
      const target: Target = targets.length === 1 ? targets[0] : r() < SIDECAR_SHARE ? 'sidecar' : 'control-plane';
      if (order[target].length === 0) {
        order[target] = shuffle(r, methods[target]);
        rounds[target]++;
      }
      const m = order[target].shift()!;
      const surface = surfaces[(rounds[target] + order[target].length) % surfaces.length];
      const key = target === 'sidecar' ? 'none' : keyFor(r());
      const index = cases++;
      const child = childOf(state, target);
      if (child.exited()) {
        record(state, { invariant: 'answers', caseIndex: index, target, m, surface, key, what: child.exited()! });
        break;
      }
      const t0 = Date.now();
      if (target === 'control-plane') await makeSpares(state, m, index, r);
      timing.spares += Date.now() - t0;

      let body = validRequest(r, world, m, 'A');
      // A sidecar cannot read the database: `fullyConsistent` is the control plane's alone.
      if (target === 'sidecar') body = withoutFullyConsistent(body) as JsonObj;
      const picked = pickMutation(r, state, m, body, surface);
      if (!picked) {
        cases--; // no mutation of the requested kinds fits this method and surface
        continue;
      }
      const { mutation, payload, binary } = picked;
      const req = binary ? toBinaryRequest(m, binary) : surface === 'rest' ? toRest(m, payload) : toConnect(m, payload);
      sequence.update(`${index} ${target} ${m.name} ${surface} ${key} ${mutation ? `${mutation.kind} ${mutation.label} ${pathText(mutation.path)}` : 'valid'}\n`);

      const t1 = Date.now();
      const got = await measured(child, () => resend(state, { target, surface, req, key, m }));
      const answer = got.answer;
      timing.requests += answer.end - answer.start;
      timing.measuring += Date.now() - t1 - (answer.end - answer.start);
      const c: CaseRecord = { index, target, m, surface, key, mutation, req, answer, cpu: got.cpu, loopMs: got.loopMs, ownLoopMs: got.ownLoopMs };
      state.recent.push(c);
      if (state.recent.length > 64) state.recent.shift();
      count(byMethod, valid, outcomes, c);
      if (opts.trace) log(`case ${index} ${target} ${m.name} ${surface} ${key} ${mutation ? `${mutation.kind}: ${mutation.label}` : 'valid'} (${(req.envelope ?? req.body)?.length ?? 0} bytes) → ${answer.networkError ?? `${answer.status} ${answer.code ?? ''}`} cpu ${got.cpu?.totalMs.toFixed(1) ?? '-'} ms stall ${(got.ownLoopMs ?? got.loopMs).toFixed(1)} ms`);

      const t2 = Date.now();
      await checkCase(state, c, payload);
      await checkHealth(state, c);
      checkErrorLogs(state, c);
      const t3 = Date.now();
      await judgeCost(state, c);
      timing.checks += t3 - t2;
      timing.replays += Date.now() - t3;
    }
    await new Promise((res) => setTimeout(res, 200)); // the processes' last log lines
    checkErrorLogs(state, undefined);
  } finally {
    closeSessions();
    if (s) {
      for (const f of s.failures) {
        if (f.logWindow) f.logs = logsOf(f.target === 'sidecar' && s.sidecar ? s.sidecar : server, f.logWindow[0], f.logWindow[1]);
        delete f.logWindow;
      }
    }
    await s?.sidecar?.close();
    await server.close();
  }
  const state = s!;
  for (const what of coverageShortfalls(byMethod)) {
    record(state, { invariant: 'coverage-floor', caseIndex: -4, label: 'the whole run', what, detailClass: what.replace(/\d+/g, '<n>') });
  }
  const costs = {} as Record<Target, CostSummary>;
  for (const t of ['control-plane', 'sidecar'] as Target[]) {
    const { refusedCpu, loops, stalls, kinds, ...c } = state.costs[t];
    costs[t] = {
      ...c,
      refusedCpuMaxMs: Math.round(Math.max(0, ...refusedCpu) * 10) / 10,
      refusedCpuP99Ms: percentile(refusedCpu, 99),
      anyCpuMaxMs: Math.round(c.anyCpuMaxMs * 10) / 10,
      loopMaxMs: Math.round(Math.max(0, ...loops) * 10) / 10,
      loopP99Ms: percentile(loops, 99),
      stallMaxMs: Math.round(Math.max(0, ...stalls) * 10) / 10,
      stallP99Ms: percentile(stalls, 99),
      refusedByKind: Object.fromEntries(Object.entries(kinds).map(([k, xs]) => [k, { n: xs.length, medianMs: percentile(xs, 50), maxMs: percentile(xs, 100) }])),
    };
  }
  return {
    seed: opts.seed, backend: opts.backend, cases, elapsedMs: Date.now() - started, setupMs, byMethod, valid,
    sequence: sequence.digest('hex').slice(0, 16), timing, outcomes,
    failures: state.failures.filter((f) => !f.known), known: state.failures.filter((f) => f.known), costs, bounds,
  };
}

/** On the control plane: 5 % without a key, 10 % a `user` key, 5 % a `service` key, the rest the platform key. */
function keyFor(roll: number): KeyKind {
  return roll < 0.05 ? 'none' : roll < 0.15 ? 'user' : roll < 0.2 ? 'service' : 'platform';
}

function tierAllows(tier: AccessTier, key: KeyKind): boolean {
  if (key === 'platform') return true;
  if (key === 'user') return tier === AccessTier.TENANT;
  if (key === 'service') return tier === AccessTier.DECISION;
  return false;
}

function shuffle<T>(r: Rng, xs: T[]): T[] {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

/** Spares the valid request needs (an update or delete target, a leaf to move, …), made before the case. */
async function makeSpares(s: State, m: MethodInfo, index: number, r: Rng): Promise<void> {
  let maintained = false;
  for (const n of needs(m)) {
    const before = JSON.stringify([s.world.A.spare[n.kind]?.length, s.world.global.spare[n.kind]?.length]);
    try {
      await ensureSpare(s.server, s.keys.platform, s.world, n.kind, n.count, 'A', r, n.fresh);
    } catch (err) {
      s.opts.log?.(`spare ${n.kind} for ${m.name}: ${(err as Error).message.split('\n')[0]}`);
    }
    maintained ||= before !== JSON.stringify([s.world.A.spare[n.kind]?.length, s.world.global.spare[n.kind]?.length]);
  }
  if (maintained) {
    const snap = await snapshot(s.server);
    s.lastDigest = snap.digest;
    s.lastTx = snap.tx;
    checkLog(s, { label: `spares made before case ${index}`, caseIndex: -2 }, snap.gaps);
  }
}

function withoutFullyConsistent(v: Json): Json {
  if (Array.isArray(v)) return v.map(withoutFullyConsistent);
  if (!isObj(v)) return v;
  return Object.fromEntries(Object.entries(v).filter(([k]) => k !== 'fullyConsistent').map(([k, x]) => [k, withoutFullyConsistent(x)]));
}

/** The valid request (VALID_SHARE of cases, or all with FUZZ_MUTATION=valid) or one mutation of it for the surface. */
function pickMutation(r: Rng, s: State, m: MethodInfo, body: JsonObj, surface: Surface): { mutation?: Mutation; payload: Payload; binary?: BinaryPayload } | undefined {
  const kinds = s.opts.mutations;
  const wantValid = !kinds?.length || kinds.includes('valid');
  const onlyValid = kinds?.length === 1 && kinds[0] === 'valid';
  const payload: Payload = { tree: body };
  if (onlyValid || (wantValid && r() < VALID_SHARE)) return { payload, binary: isBinary(surface) ? { message: validBinary(m, body) } : undefined };
  const wanted = kinds?.filter((k) => k !== 'valid');
  if (isBinary(surface)) {
    const got = mutateBinary(r, s.world, m, body, surface, wanted);
    return got && { mutation: got.mutation, payload, binary: got.payload };
  }
  for (let tries = 0; tries < 50; tries++) {
    const got = mutate(r, s.world, m, body, surface === 'rest' ? 'rest' : 'connect');
    if (!wanted?.length || wanted.includes(got.mutation.kind)) return got;
  }
  return undefined;
}

function toBinaryRequest(m: MethodInfo, p: BinaryPayload): HttpRequest {
  return { method: 'POST', path: `/${m.method.parent.typeName}/${m.method.name}`, body: p.message, envelope: p.envelope };
}

/** Statuses per method, outcomes per mutation, valid requests per surface. */
function count(byMethod: RunResult['byMethod'], valid: { sent: number; ok: number }, outcomes: RunResult['outcomes'], c: CaseRecord) {
  const a = c.answer;
  const stats: MethodStats = (byMethod[c.target][c.m.name] ??= { cases: 0, statuses: {}, valid: {} });
  stats.cases++;
  const st = a.networkError ? 'no answer' : `${a.status}${a.code ? ` ${a.code}` : ''}`;
  stats.statuses[st] = (stats.statuses[st] ?? 0) + 1;
  const o = (outcomes[c.mutation ? `${c.mutation.kind}: ${c.mutation.label}` : 'valid'] ??= {});
  const oKey = `${c.target === 'sidecar' ? 'sidecar ' : ''}${c.surface} ${st} ${normalize(a.message)}`;
  o[oKey] = (o[oKey] ?? 0) + 1;
  // The sidecar takes no key: every valid request there must succeed.
  if (!c.mutation && (c.target === 'sidecar' || tierAllows(c.m.tier, c.key))) {
    const v = (stats.valid[c.surface] ??= { sent: 0, ok: 0 });
    v.sent++;
    valid.sent++;
    if (a.status === 200) {
      v.ok++;
      valid.ok++;
    }
  }
}
