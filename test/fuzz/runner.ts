/**
 * One fuzz run: a fresh control plane and database, the seeded world, then cases until the
 * budget is spent. Each case is one method (round robin over every method, in a seeded order),
 * one surface (REST or Connect JSON), one key (mostly the platform key, sometimes a `user` or
 * `service` key of the fuzzed tenant) and either the valid request or one mutation of it.
 * After every case the invariants are checked; failures are collected (not thrown) so one run
 * shows every distinct failure class.
 */
import { createHash } from 'node:crypto';
import { fromBinary } from '@bufbuild/protobuf';
import { ErrorInfoSchema } from '../../gen/authz/v1/error_reason_pb.js';
import { AccessTier } from '../../gen/authz/v1/options_pb.js';
import { rng, type Rng } from '../../services/engine/testdata/generate.js';
import type { Backend } from '../harness.js';
import { PLATFORM_SECRET, startFuzzServer, type FuzzServer } from './control-plane.js';
import {
  METHODS, comboKey, itemsOf, needs, pathText, validRequest, type MethodInfo, type Mutation, type Payload, type World,
} from './generator.js';
import { mutate } from './json-mutations.js';
import { toConnect, toRest, type HttpRequest } from './requests.js';
import { startHealthPoller, type HealthPoller, type Probe } from './healthz.js';
import { send, trim, type Answer, type Surface } from './http.js';
import { diffDigest, snapshot, txSnapshot, type Digest, type LogGap } from './invariants.js';
import { buildWorld, ensureSpare, harvest, resync, type Keys } from './world.js';

export const HEALTHZ_BOUND_MS = 100;
/** A probe this slow fails the run without replay: no GC pause or scheduling hiccup takes a second. */
export const HEALTHZ_HARD_MS = 1_000;

export type Invariant =
  | 'no-5xx' | 'no-write-on-error' | 'revision-equals-change-log' | 'healthz-under-100ms' | 'answers'
  | 'invalid-argument-names-field' | 'no-internal-error-text';
export type KeyKind = 'platform' | 'user' | 'service';

export interface RunOptions {
  backend: Backend;
  seed: number;
  budgetMs: number;
  /** Stop after this many cases (replays: `FUZZ_CASES`). */
  maxCases?: number;
  /** Only methods whose full name equals or ends with one of these (`FUZZ_METHOD`). */
  methods?: string[];
  surfaces?: Surface[];
  /** Only these mutation kinds, plus `valid` if listed (`FUZZ_MUTATION`). */
  mutations?: string[];
  log?: (line: string) => void;
}

export interface Failure {
  invariant: Invariant;
  seed: number;
  backend: Backend;
  /** 0-based index of the case in the run (-1: world seeding, -2: spares made before a case). */
  caseIndex: number;
  method: string;
  surface: Surface | '-';
  key: KeyKind;
  mutation: string;
  field: string;
  what: string;
  request: string;
  answer: string;
  logs: string[];
  /** When the server wrote the log lines of this failure (ms since epoch). */
  logWindow?: [number, number];
  /** The answer in short (status, code, normalized message or what changed). */
  outcome: string;
  /** Groups failures that are the same defect in the same method and surface. */
  classKey: string;
}

export interface MethodStats {
  cases: number;
  validSent: number;
  validOk: number;
  statuses: Record<string, number>;
}

export interface HealthSummary {
  probes: number;
  failedProbes: number;
  maxMs: number;
  p99Ms: number;
  over100: number;
  /** Slow probes whose case was replayed twice (or recurred) and stalled again. */
  confirmed: number;
  /** Slow probes not reproduced (counted, not failed). */
  unconfirmed: { ms: number; method: string; mutation: string }[];
  unattributed: number[];
}

export interface RunResult {
  seed: number;
  backend: Backend;
  cases: number;
  elapsedMs: number;
  setupMs: number;
  byMethod: Record<string, MethodStats>;
  valid: { sent: number; ok: number };
  /** A hash of every case's method, surface, key and mutation: equal for two runs of one seed (replays). */
  sequence: string;
  /** Where the time went (ms): requests, invariant checks, spares made before cases, slow-probe replays. */
  timing: { requests: number; checks: number; spares: number; probes: number };
  /** Answers by mutation kind: `400 invalid_argument <normalized message>` → count. */
  outcomes: Record<string, Record<string, number>>;
  failures: Failure[];
  health: HealthSummary;
}

interface CaseRecord {
  index: number;
  m: MethodInfo;
  surface: Surface;
  key: KeyKind;
  mutation?: Mutation;
  req: HttpRequest;
  answer: Answer;
}

const SURFACES: Surface[] = ['rest', 'connect'];

const normalize = (s: string | undefined) =>
  (s ?? '')
    .replace(/authz\.v1\.[A-Za-z.]+/g, 'authz.v1.<message>')
    .replace(/\b[a-z][a-z_]*_[A-Za-z0-9_-]{6,}/g, '<id>')
    .replace(/\d+/g, '<n>')
    .replace(/"[^"]*"/g, '"…"')
    .slice(0, 90);

export async function runFuzz(opts: RunOptions): Promise<RunResult> {
  const log = opts.log ?? (() => {});
  const r: Rng = rng(opts.seed);
  const started = Date.now();
  const server = await startFuzzServer(opts.backend);
  let poller: HealthPoller | undefined;
  const failures: Failure[] = [];
  const byMethod: Record<string, MethodStats> = {};
  const valid = { sent: 0, ok: 0 };
  const outcomes: Record<string, Record<string, number>> = {};
  const timing = { requests: 0, checks: 0, spares: 0, probes: 0 };
  const sequence = createHash('sha256');
  const health: HealthSummary = { probes: 0, failedProbes: 0, maxMs: 0, p99Ms: 0, over100: 0, confirmed: 0, unconfirmed: [], unattributed: [] };
  let cases = 0;
  let setupMs = 0;
  try {
    // Polled from the start: stalls while the world is built count as between cases.
    poller = startHealthPoller(server.url);
    const { world, keys } = await buildWorld(server, PLATFORM_SECRET, r);
    const first = await snapshot(server);
    const state: State = { server, world, keys, opts, failures, lastDigest: first.digest, lastTx: first.tx, knownGaps: new Set(), recent: [], probeCursor: 0, slowByClass: new Map(), judged: new Set(), health };
    checkLog(state, { label: 'world seeding', caseIndex: -1 }, first.gaps);
    setupMs = Date.now() - started;
    log(`fuzz ${opts.backend} seed ${opts.seed}: world ready in ${setupMs} ms`);
    state.poller = poller;

    const methods = METHODS.filter((m) => !opts.methods?.length || opts.methods.some((x) => m.name === x || m.name.endsWith(`.${x}`) || m.name.endsWith(x)));
    if (methods.length === 0) throw new Error(`FUZZ_METHOD matches no method: ${opts.methods?.join(', ')}`);
    const surfaces = opts.surfaces?.length ? opts.surfaces : SURFACES;
    const deadline = Date.now() + opts.budgetMs;
    let order: MethodInfo[] = [];
    let round = 0;
    while (Date.now() < deadline && (opts.maxCases === undefined || cases < opts.maxCases)) {
      if (order.length === 0) {
        order = shuffle(r, methods);
        round++;
      }
      const m = order.shift()!;
      const surface = surfaces[(round + order.length) % surfaces.length];
      const roll = r();
      const key: KeyKind = roll < 0.1 ? 'user' : roll < 0.15 ? 'service' : 'platform';
      const index = cases++;
      if (server.exited()) {
        record(state, { invariant: 'answers', caseIndex: index, m, surface, key, what: server.exited()!, req: undefined, answer: undefined });
        break;
      }
      // Spares the valid request needs (an update or delete target, a leaf to move, …).
      let maintained = false;
      const t0 = Date.now();
      for (const n of needs(m)) {
        const before = JSON.stringify([world.A.spare[n.kind]?.length, world.global.spare[n.kind]?.length]);
        try {
          await ensureSpare(server, keys.platform, world, n.kind, n.count, 'A', r, n.fresh);
        } catch (err) {
          log(`spare ${n.kind} for ${m.name}: ${(err as Error).message.split('\n')[0]}`);
        }
        maintained ||= before !== JSON.stringify([world.A.spare[n.kind]?.length, world.global.spare[n.kind]?.length]);
      }
      if (maintained) {
        const snap = await snapshot(server);
        state.lastDigest = snap.digest;
        state.lastTx = snap.tx;
        checkLog(state, { label: `spares made before case ${index}`, caseIndex: -2 }, snap.gaps);
      }
      timing.spares += Date.now() - t0;
      const body = validRequest(r, world, m, 'A');
      let mutation: Mutation | undefined;
      let payload: Payload = { tree: body };
      const wantValid = !opts.mutations?.length || opts.mutations.includes('valid');
      const onlyValid = opts.mutations?.length === 1 && opts.mutations[0] === 'valid';
      if (onlyValid || (wantValid && r() < 0.2)) {
        // the valid request as it is
      } else {
        for (let tries = 0; tries < 50; tries++) {
          const got = mutate(r, world, m, body, surface);
          ({ mutation, payload } = got);
          if (!opts.mutations?.length || opts.mutations.includes(got.mutation.kind)) break;
          mutation = undefined;
          payload = { tree: body };
        }
        if (!mutation) {
          cases--; // no mutation of the requested kinds fits this method
          continue;
        }
      }
      const req = surface === 'rest' ? toRest(m, payload) : toConnect(m, payload);
      sequence.update(`${index} ${m.name} ${surface} ${key} ${mutation ? `${mutation.kind} ${mutation.label} ${pathText(mutation.path)}` : 'valid'}\n`);
      const secret = key === 'platform' ? keys.platform : key === 'user' ? keys.user : keys.service;
      const answer = await send(server.url, surface, req, secret);
      const c: CaseRecord = { index, m, surface, key, mutation, req, answer };
      state.recent.push(c);
      if (state.recent.length > 64) state.recent.shift();
      const stats = (byMethod[m.name] ??= { cases: 0, validSent: 0, validOk: 0, statuses: {} });
      stats.cases++;
      const st = answer.networkError ? 'no answer' : `${answer.status}${answer.code ? ` ${answer.code}` : ''}`;
      stats.statuses[st] = (stats.statuses[st] ?? 0) + 1;
      const o = (outcomes[mutation ? `${mutation.kind}: ${mutation.label}` : 'valid'] ??= {});
      const oKey = `${st} ${normalize(answer.message)}`;
      o[oKey] = (o[oKey] ?? 0) + 1;
      if (!mutation && tierAllows(m.tier, key)) {
        stats.validSent++;
        valid.sent++;
        if (answer.status === 200) {
          stats.validOk++;
          valid.ok++;
        }
      }
      timing.requests += answer.end - answer.start;
      const t1 = Date.now();
      await checkCase(state, c, payload);
      const t2 = Date.now();
      await processProbes(state);
      timing.checks += t2 - t1;
      timing.probes += Date.now() - t2;
    }
    if (poller) {
      await poller.settle();
      await processProbes(state);
    }
  } finally {
    const probes = poller?.probes ?? [];
    if (poller) await poller.stop();
    summarizeProbes(probes, health);
    await new Promise((r) => setTimeout(r, 200)); // the server's last log lines
    for (const f of failures) {
      if (f.logWindow) f.logs = logsOf(server, f.logWindow[0], f.logWindow[1]);
      delete f.logWindow;
    }
    await server.close();
  }
  return { seed: opts.seed, backend: opts.backend, cases, elapsedMs: Date.now() - started, setupMs, byMethod, valid, sequence: sequence.digest('hex').slice(0, 16), timing, outcomes, failures, health };
}

function tierAllows(tier: AccessTier, key: KeyKind): boolean {
  if (key === 'platform') return true;
  if (key === 'user') return tier === AccessTier.TENANT;
  return tier === AccessTier.DECISION;
}

function shuffle<T>(r: Rng, xs: T[]): T[] {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

interface State {
  server: FuzzServer;
  world: World;
  keys: Keys;
  opts: RunOptions;
  failures: Failure[];
  lastDigest: Digest;
  /** The transaction snapshot of `lastDigest`. */
  lastTx: string;
  knownGaps: Set<string>;
  recent: CaseRecord[];
  poller?: HealthPoller;
  probeCursor: number;
  /** Slow probes on successful writes, by method and mutation, waiting for a second one. */
  slowByClass: Map<string, number[]>;
  /** Cases whose slow probes were already judged. */
  judged: Set<number>;
  health: HealthSummary;
}

function requestText(req: HttpRequest | undefined): string {
  return req ? `${req.method} ${trim(req.path, 300)}\n${trim(req.body)}` : '(none)';
}

function answerText(a: Answer | undefined): string {
  if (!a) return '(none)';
  return a.networkError ? `no HTTP answer: ${a.networkError}` : `${a.status} ${trim(a.text)}`;
}

function record(
  s: State,
  f: { invariant: Invariant; caseIndex: number; m?: MethodInfo; label?: string; surface?: Surface; key?: KeyKind; mutation?: Mutation; what: string; req?: HttpRequest; answer?: Answer; detailClass?: string; since?: number },
) {
  const method = f.m?.name ?? f.label ?? '-';
  const mutation = f.mutation ? `${f.mutation.kind}: ${f.mutation.label}` : f.caseIndex < 0 ? '-' : 'valid request';
  const outcome = f.detailClass ?? (f.answer ? `${f.answer.status} ${f.answer.code ?? ''} ${normalize(f.answer.message)}` : '');
  const classKey = [f.invariant, method, f.surface ?? '-', f.mutation?.kind ?? 'valid', outcome].join(' | ');
  const since = f.since ?? f.answer?.start ?? Date.now() - 1000;
  s.failures.push({
    invariant: f.invariant,
    seed: s.opts.seed,
    backend: s.opts.backend,
    caseIndex: f.caseIndex,
    method,
    surface: f.surface ?? '-',
    key: f.key ?? 'platform',
    mutation,
    field: f.mutation ? pathText(f.mutation.path) : '-',
    what: f.what,
    request: requestText(f.req),
    answer: answerText(f.answer),
    logs: [], // filled in at the end of the run, when every line has arrived
    logWindow: [since, f.answer?.end ?? Date.now()],
    outcome,
    classKey,
  });
}

/** The server's log lines written while a request was served (by their own `time`), in short. */
function logsOf(server: FuzzServer, from: number, to: number): string[] {
  const at = (text: string) => {
    const m = /"time":(\d+)/.exec(text);
    return m ? Number(m[1]) : undefined;
  };
  return server
    .logsSince(from - 5)
    .filter((l) => {
      const t = at(l.text);
      return t === undefined ? l.at <= to + 50 : t >= from - 5 && t <= to + 5;
    })
    .slice(0, 4)
    .map((l) => summarizeLog(l.text));
}

/** A server log line in short: the error's type, the end of its message (where drivers put the reason) and its first frame in services/. */
function summarizeLog(line: string): string {
  try {
    const j = JSON.parse(line) as { msg?: string; method?: string; err?: { type?: string; message?: string; stack?: string } };
    if (!j.err) return `${j.msg ?? ''}`.slice(0, 300);
    const msg = j.err.message ?? '';
    const frame = /\(?(\/[^()\s]*\/services\/[^()\s]+)\)?/.exec(j.err.stack ?? '')?.[1]?.replace(/^.*\/services\//, 'services/');
    return `${j.msg ?? ''}: ${j.err.type ?? 'Error'}: ${msg.length > 260 ? `…${msg.slice(-260)}` : msg}${frame ? ` at ${frame}` : ''}`;
  } catch {
    return line.slice(0, 300);
  }
}

/** Whether an `unavailable` is the contract's answer to a `minRevision` ahead of the tenant (contract §5). */
function minRevisionAhead(c: CaseRecord): boolean {
  if (!/\.(Evaluate(Batch)?|GetEffectivePermissions)$/.test(c.m.name) || c.answer.code !== 'unavailable') return false;
  const m = /^(?:requests\[\d+\]\.)?(?:.*?)revision (\d+) of tenant \S+ is not available yet \(at (\d+)\)/.exec(c.answer.message ?? '');
  return !!m && BigInt(m[1]) > BigInt(m[2]);
}

async function checkCase(s: State, c: CaseRecord, payload: Payload) {
  const { answer: a } = c;
  const base = { caseIndex: c.index, m: c.m, surface: c.surface, key: c.key, mutation: c.mutation, req: c.req, answer: a };
  if (a.networkError) record(s, { ...base, invariant: 'answers', what: `no HTTP answer: ${a.networkError}`, detailClass: a.networkError.replace(/\d+/g, '<n>') });
  else if (a.status >= 500 && !minRevisionAhead(c)) {
    record(s, { ...base, invariant: 'no-5xx', what: `HTTP ${a.status}${a.code ? ` (${a.code})` : ''}: ${a.message ?? trim(a.text, 200)}` });
  }
  if (s.server.exited()) {
    record(s, { ...base, invariant: 'answers', what: s.server.exited()!, detailClass: 'process exited' });
    return;
  }
  // Nothing written anywhere since the last full check: digest and change log are as they were.
  const tx = await txSnapshot(s.server);
  const { tx: tx2, digest: after, gaps } = tx === s.lastTx ? { tx, digest: s.lastDigest, gaps: [] as LogGap[] } : await snapshot(s.server);
  s.lastTx = tx2;
  if (a.status !== 200) {
    const diff = diffDigest(s.lastDigest, after);
    if (diff) {
      record(s, {
        ...base, invariant: 'no-write-on-error',
        what: `answered ${a.networkError ? 'nothing' : `${a.status} ${a.code ?? ''}`} but the database changed: ${diff}`,
        detailClass: `${a.status} ${a.code ?? ''} wrote ${diff.replace(/[+-]?\d+/g, '±')}`,
      });
    }
  }
  s.lastDigest = after;
  checkLog(s, { ...base, label: c.m.name }, gaps);
  if (a.status >= 400 && a.status < 500) {
    const leak = INTERNAL_TEXT.exec(a.message ?? a.text);
    if (leak) record(s, { ...base, invariant: 'no-internal-error-text', what: `the error message is an internal error's text: "${trim(a.message ?? a.text, 160)}"`, detailClass: leak[0] });
    if (a.code === 'invalid_argument' && c.mutation && c.mutation.path.length > 0 && NAMED_KINDS.has(c.mutation.kind) && !namesField(c, c.mutation)) {
      record(s, {
        ...base, invariant: 'invalid-argument-names-field',
        what: `invalid_argument for a bad ${pathText(c.mutation.path)} names no field of it: "${trim(a.message, 200)}"${errorInfoFields(a).length ? ` (ErrorInfo.field ${errorInfoFields(a).map((x) => JSON.stringify(x)).join(', ')})` : ''}`,
        detailClass: normalize(a.message).slice(0, 40),
      });
    }
  }
  if (a.status === 200) {
    const keys = c.mutation?.path.length === 0 ? [] : itemsOf(c.m, payload.tree).map((i) => comboKey(c.m, i)).filter((k): k is string => !!k);
    harvest(s.world, c.m, c.surface, a.json, keys);
    if (c.m.op === 'delete' || c.m.name.endsWith('.MoveScope')) await resync(s.server, s.world);
  }
}

/** Text of JavaScript, driver or SQL errors that must never reach a client as an error message. */
const INTERNAL_TEXT = /Maximum call stack size exceeded|is not a function|Cannot read propert(y|ies) of|undefined is not|is not iterable|DriverException|invalid input syntax|invalid byte sequence|unsupported Unicode escape|violates .* constraint|syntax error at or near|\bat [A-Za-z.]+ \(\/|RangeError|TypeError|ReferenceError/;

/**
 * Mutations whose value is wrong in itself, whatever the other fields hold: an
 * `invalid_argument` for them must name the field (its JSON path or an enclosing one, or the
 * field's JSON or proto name; an unknown field by its key). Mutations that may only break a
 * relation between fields (ids of another tenant, unknown ids, NUL or a lone surrogate in an id,
 * empty values that fall back to defaults) are left out: naming the other side is fine there.
 */
const NAMED_KINDS = new Set(['wrongType', 'extremeNumber', 'longString', 'deepNesting', 'hugeArray', 'spelling', 'badTimestamp', 'unknownField']);

/** The `field` of every authz.v1.ErrorInfo detail (REST: decoded JSON; Connect: base64 protobuf). */
function errorInfoFields(a: Answer): string[] {
  const details = (a.json as { details?: { type?: string; field?: string; value?: string }[] } | undefined)?.details ?? [];
  const out: string[] = [];
  for (const d of details) {
    if (d.type !== ErrorInfoSchema.typeName) continue;
    if (typeof d.field === 'string') out.push(d.field);
    else if (typeof d.value === 'string') {
      try {
        out.push(fromBinary(ErrorInfoSchema, Buffer.from(d.value, 'base64')).field);
      } catch {
        // not an ErrorInfo after all
      }
    }
  }
  return out.filter(Boolean);
}

function namesField(c: CaseRecord, mu: Mutation): boolean {
  const a = c.answer;
  // On REST a batch's `items` is the request body itself: an error about "the request body" names it.
  const body = c.m.route.body;
  if (c.surface === 'rest' && body.kind === 'field' && mu.path.length === 1 && mu.path[0] === body.field.jsonName && /request body/.test(a.message ?? '')) return true;
  // A path that is not valid percent-encoding (a lone surrogate's bytes) cannot be split into fields.
  if (c.surface === 'rest' && /request path/.test(a.message ?? '')) return true;
  const ancestors: string[] = [];
  for (let i = mu.path.length; i > 0; i--) ancestors.push(pathText(mu.path.slice(0, i)));
  const message = a.message ?? '';
  const fields = errorInfoFields(a);
  if (ancestors.some((p) => message.includes(p) || fields.some((f) => f === p || f.startsWith(`${p}.`) || f.startsWith(`${p}[`)))) return true;
  const names = mu.field ? [mu.field.jsonName, mu.field.protoName] : [];
  return names.some((n) => new RegExp(`(^|[^A-Za-z0-9_])${n}($|[^A-Za-z0-9_])`).test(message) || fields.some((f) => f.split(/[.[\]]/).includes(n)));
}

/** Invariant 3 after a step: every tenant's change-log revisions are exactly 1..revision. */
function checkLog(s: State, f: { caseIndex: number; label: string; m?: MethodInfo; surface?: Surface; key?: KeyKind; mutation?: Mutation; req?: HttpRequest; answer?: Answer }, gaps: LogGap[]) {
  const fresh = gaps.filter((g) => !s.knownGaps.has(`${g.tenantId}:${g.kind}:${g.revision}`));
  for (const g of gaps) s.knownGaps.add(`${g.tenantId}:${g.kind}:${g.revision}`);
  if (fresh.length === 0) return;
  const who = (t: string) => (t === s.world?.A.tenantId ? 'the fuzzed tenant' : t === s.world?.B.tenantId ? 'the other tenant' : 'tenant');
  const text = fresh
    .slice(0, 5)
    .map((g) => (g.kind === 'missing' ? `${who(g.tenantId)} ${g.tenantId} is at revision ≥ ${g.revision} but change_log has no row of revision ${g.revision}` : `change_log has a row of revision ${g.revision} for ${g.tenantId}, above its revision (or of no tenant)`))
    .join('; ');
  record(s, { ...f, invariant: 'revision-equals-change-log', what: `${f.answer ? `answered ${f.answer.status}; ` : ''}${text}`, detailClass: `${f.answer?.status ?? ''} ${[...new Set(fresh.map((g) => g.kind))].join('+')}` });
}

/** Looks at probes reported since the last call: slow ones are attributed to a case and confirmed or not. */
async function processProbes(s: State) {
  const poller = s.poller;
  if (!poller) return;
  while (s.probeCursor < poller.probes.length) {
    const p = poller.probes[s.probeCursor++];
    if (p.latency < HEALTHZ_BOUND_MS && !p.error) continue;
    await judgeSlowProbe(s, p);
  }
}

const overlaps = (p: Probe, start: number, end: number) => p.start <= end && p.start + (Number.isFinite(p.latency) ? p.latency : 0) >= start;

async function judgeSlowProbe(s: State, p: Probe) {
  const pEnd = p.start + (Number.isFinite(p.latency) ? p.latency : 5_000);
  let c = [...s.recent].reverse().find((x) => overlaps(p, x.answer.start, x.answer.end));
  // After the answer, the server may still be busy with the case (change-log followers, GC of its garbage).
  c ??= [...s.recent].reverse().find((x) => x.answer.end <= pEnd && pEnd - x.answer.end < 500);
  const ms = Math.round(p.latency);
  const what = p.error ? `GET /healthz failed: ${p.error}` : `GET /healthz took ${ms} ms`;
  if (!c) {
    s.health.unattributed.push(Number.isFinite(p.latency) ? ms : -1);
    if (p.error || p.latency >= HEALTHZ_HARD_MS) {
      record(s, { invariant: 'healthz-under-100ms', caseIndex: -3, label: 'between cases (invariant queries, spares)', what, detailClass: p.error ? 'probe failed' : '≥ 1 s', since: p.start });
    }
    return;
  }
  // Several slow probes during one case are one stall.
  if (s.judged.has(c.index)) return;
  s.judged.add(c.index);
  const base = { caseIndex: c.index, m: c.m, surface: c.surface, key: c.key, mutation: c.mutation, req: c.req, answer: c.answer, since: c.answer.start };
  if (p.error || p.latency >= HEALTHZ_HARD_MS) {
    s.health.confirmed++;
    record(s, { ...base, invariant: 'healthz-under-100ms', what: `${what} while this request was served`, detailClass: p.error ? 'probe failed' : '≥ 1 s' });
    return;
  }
  const replayable = c.answer.status !== 200 || c.m.readOnly;
  if (replayable) {
    const stalls: number[] = [];
    for (let i = 0; i < 2; i++) {
      const secret = c.key === 'platform' ? s.keys.platform : c.key === 'user' ? s.keys.user : s.keys.service;
      const a = await send(s.server.url, c.surface, c.req, secret);
      await s.poller!.settle();
      const slow = s.poller!.probes.filter((q) => overlaps(q, a.start, a.end) && q.latency >= HEALTHZ_BOUND_MS);
      s.probeCursor = s.poller!.probes.length; // the replay's own probes are judged here
      const snap = await snapshot(s.server);
      if (diffDigest(s.lastDigest, snap.digest) && a.status !== 200) {
        record(s, { ...base, invariant: 'no-write-on-error', what: `a replay answered ${a.status} but the database changed: ${diffDigest(s.lastDigest, snap.digest)}`, answer: a });
      }
      s.lastDigest = snap.digest;
      s.lastTx = snap.tx;
      checkLog(s, { ...base, label: c.m.name, answer: a }, snap.gaps);
      if (slow.length === 0) break;
      stalls.push(Math.max(...slow.map((q) => Math.round(q.latency))));
    }
    if (stalls.length === 2) {
      s.health.confirmed++;
      record(s, { ...base, invariant: 'healthz-under-100ms', what: `${what} while this request was served; replayed twice: ${stalls.join(' ms, ')} ms`, detailClass: 'stall, reproduced' });
    } else s.health.unconfirmed.push({ ms, method: c.m.name, mutation: c.mutation?.kind ?? 'valid' });
    return;
  }
  // A successful write is not replayed (it would change the world and the seeded sequence):
  // it counts once the same method and mutation stalls in a second case.
  const k = `${c.m.name}|${c.mutation?.kind ?? 'valid'}`;
  const seen = s.slowByClass.get(k) ?? [];
  if (!seen.includes(c.index)) seen.push(c.index);
  s.slowByClass.set(k, seen);
  if (seen.length === 2) {
    s.health.confirmed++;
    record(s, { ...base, invariant: 'healthz-under-100ms', what: `${what} while this (successful) request was served; case ${seen[0]} of the same method and mutation stalled too`, detailClass: 'stall, recurred' });
  } else if (seen.length < 2) s.health.unconfirmed.push({ ms, method: c.m.name, mutation: c.mutation?.kind ?? 'valid' });
}

function summarizeProbes(probes: Probe[], h: HealthSummary) {
  const ok = probes.filter((p) => Number.isFinite(p.latency)).map((p) => p.latency).sort((a, b) => a - b);
  h.probes = probes.length;
  h.failedProbes = probes.length - ok.length;
  h.maxMs = ok.length ? Math.round(ok[ok.length - 1]) : 0;
  h.p99Ms = ok.length ? Math.round(ok[Math.min(ok.length - 1, Math.floor(ok.length * 0.99))]) : 0;
  h.over100 = ok.filter((x) => x >= HEALTHZ_BOUND_MS).length;
}

/** Failures grouped by class, each with its first example and a count. */
export function failureClasses(failures: Failure[]): { first: Failure; count: number }[] {
  const by = new Map<string, { first: Failure; count: number }>();
  for (const f of failures) {
    const e = by.get(f.classKey);
    if (e) e.count++;
    else by.set(f.classKey, { first: f, count: 1 });
  }
  return [...by.values()];
}

export function formatFailure(f: Failure, count = 1): string {
  return [
    `[${f.invariant}] ${f.method} over ${f.surface} (${f.key} key), case ${f.caseIndex}${count > 1 ? ` (and ${count - 1} more like it)` : ''}`,
    `  seed ${f.seed} on ${f.backend}; mutation: ${f.mutation}; field: ${f.field}`,
    `  ${f.what}`,
    `  request: ${f.request.replace(/\n/g, '\n           ')}`,
    `  answer:  ${f.answer}`,
    ...(f.logs.length ? [`  server log: ${f.logs.map((l) => l.slice(0, 400)).join('\n              ')}`] : []),
  ].join('\n');
}

/**
 * Failure classes grouped once more across methods and surfaces (same invariant, mutation kind
 * and answer): one example each, with the methods it was seen in.
 */
export function formatFailures(failures: Failure[], max = 20): string {
  const groups = new Map<string, { first: Failure; count: number; where: Set<string> }>();
  for (const f of failures) {
    const k = `${f.invariant} | ${f.mutation.split(':')[0]} | ${f.outcome}`;
    const g = groups.get(k) ?? { first: f, count: 0, where: new Set<string>() };
    g.count++;
    g.where.add(`${f.method.split('.').pop()}/${f.surface}`);
    groups.set(k, g);
  }
  const sorted = [...groups.values()].sort((a, b) => b.where.size - a.where.size);
  const out = sorted.slice(0, max).map((g) => {
    const where = [...g.where].sort();
    return `${formatFailure(g.first)}\n  seen ${g.count}× in ${where.length} method/surface pairs: ${where.slice(0, 12).join(', ')}${where.length > 12 ? ', …' : ''}`;
  });
  if (sorted.length > max) out.push(`… and ${sorted.length - max} more groups (FUZZ_REPORT_DIR=<dir> writes every failure)`);
  return out.join('\n\n');
}

export function formatResult(res: RunResult): string {
  const h = res.health;
  const share = res.valid.sent ? ((100 * res.valid.ok) / res.valid.sent).toFixed(1) : '-';
  const refused = Object.entries(res.byMethod)
    .filter(([, st]) => st.validSent > st.validOk)
    .map(([name, st]) => `${name.split('.').pop()} ${st.validSent - st.validOk}/${st.validSent}`);
  return [
    `fuzz ${res.backend}, seed ${res.seed}: sequence ${res.sequence}, ${res.cases} cases in ${Math.round((res.elapsedMs - res.setupMs) / 1000)} s (+${Math.round(res.setupMs / 1000)} s setup)`,
    `  valid requests: ${res.valid.ok}/${res.valid.sent} succeeded (${share}%)${refused.length ? `; refused: ${refused.join(', ')}` : ''}`,
    `  time: requests ${Math.round(res.timing.requests / 1000)} s, invariant checks ${Math.round(res.timing.checks / 1000)} s, spares ${Math.round(res.timing.spares / 1000)} s, slow-probe replays ${Math.round(res.timing.probes / 1000)} s`,
    `  /healthz: ${h.probes} probes, max ${h.maxMs} ms, p99 ${h.p99Ms} ms, ${h.over100} at ≥ ${HEALTHZ_BOUND_MS} ms (${h.confirmed} confirmed, ${h.unconfirmed.length} not reproduced, ${h.unattributed.length} between cases), ${h.failedProbes} failed`,
    `  failures: ${res.failures.length} in ${failureClasses(res.failures).length} classes`,
  ].join('\n');
}
