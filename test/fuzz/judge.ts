/**
 * The invariants of one case, checked after it: an answer, never a 5xx (gRPC: never internal,
 * unknown or unavailable), nothing written on an error, the change log whole, no error-level log
 * line, an `invalid_argument` naming its field, no internal error text; and what it cost the
 * process: the CPU time of a refused request, and stalls (the event loop held by the process's
 * own work), confirmed by replaying the case before they fail the run.
 */
import { Buffer } from 'node:buffer';
import type { FuzzChild } from './child.js';
import { settledCpu, cpuMsBetween } from './cpu.js';
import { comboKey, itemsOf, pathText, type MethodInfo, type Mutation, type Payload } from './generator.js';
import { http1, send, trim, wireOf, type Answer, type Surface } from './http.js';
import { diffDigest, snapshot, txSnapshot, type LogGap } from './invariants.js';
import { knownDefect } from './known-defects.js';
import type { HttpRequest } from './requests.js';
import type { CaseRecord, Failure, Invariant, KeyKind, State, Target } from './types.js';
import { harvest, resync } from './world.js';

export const normalize = (s: string | undefined) =>
  (s ?? '')
    .replace(/authz\.v1\.[A-Za-z.]+/g, 'authz.v1.<message>')
    .replace(/\b[a-z][a-z_]*_[A-Za-z0-9_-]{6,}/g, '<id>')
    .replace(/\d+/g, '<n>')
    .replace(/"[^"]*"/g, '"…"')
    .slice(0, 90);

export const childOf = (s: State, t: Target): FuzzChild => (t === 'sidecar' ? s.sidecar! : s.server);

export function secretOf(s: State, key: KeyKind): string | undefined {
  return key === 'none' ? undefined : s.keys[key];
}

/** Sends a case's request again, as it was sent. */
export const resend = (s: State, c: Pick<CaseRecord, 'target' | 'surface' | 'req' | 'key' | 'm'>): Promise<Answer> =>
  send(childOf(s, c.target).url, c.surface, c.req, secretOf(s, c.key), { output: c.m.method.output });

export interface Measured {
  answer: Answer;
  cpu?: { totalMs: number; mainMs: number };
  /** The longest event-loop delay meanwhile, and the longest the process's own work held the loop (loop-monitor.ts). */
  loopMs: number;
  ownLoopMs?: number;
}

/**
 * A request with what it cost the process: its CPU time from an idle process before to an idle
 * process after (work left behind counts), and the longest event-loop delay meanwhile.
 */
export async function measured(child: FuzzChild, go: () => Promise<Answer>): Promise<Measured> {
  // A process that is gone answers nothing: the checks of the case report it.
  const gone = { maxMs: 0, ownMs: undefined };
  await child.loopDelay().catch(() => gone); // a fresh window
  const before = await settledCpu(child.pid);
  const answer = await go();
  const after = await settledCpu(child.pid);
  const loop = await child.loopDelay().catch(() => gone);
  return { answer, cpu: cpuMsBetween(before, after), loopMs: loop.maxMs, ownLoopMs: loop.ownMs };
}

/**
 * How long the process held its own event loop (loop-monitor.ts): a busy machine delays the
 * loop too, the process waiting for a CPU without doing anything, and that is not a stall.
 * Where /proc cannot tell, the loop delay itself.
 */
export const stallOf = (m: Pick<Measured, 'loopMs' | 'ownLoopMs'>): number => m.ownLoopMs ?? m.loopMs;

const refused = (a: Answer) => a.networkError !== undefined || a.status !== 200;

function requestText(req: HttpRequest | undefined): string {
  return req ? `${req.method} ${trim(req.path, 300)}\n${trim(req.envelope ?? req.body)}` : '(none)';
}

function answerText(a: Answer | undefined): string {
  if (!a) return '(none)';
  return a.networkError ? `no answer: ${a.networkError}` : `${a.status}${a.grpcStatus !== undefined ? ` (grpc-status ${a.grpcStatus})` : ''} ${trim(a.text)}`;
}

export interface FailureInput {
  invariant: Invariant;
  caseIndex: number;
  target?: Target;
  m?: MethodInfo;
  label?: string;
  surface?: Surface;
  key?: KeyKind;
  mutation?: Mutation;
  what: string;
  req?: HttpRequest;
  answer?: Answer;
  detailClass?: string;
  since?: number;
}

export function record(s: State, f: FailureInput): void {
  const method = f.m?.name ?? f.label ?? '-';
  const mutation = f.mutation ? `${f.mutation.kind}: ${f.mutation.label}` : f.caseIndex < 0 ? '-' : 'valid request';
  const outcome = f.detailClass ?? (f.answer ? `${f.answer.status} ${f.answer.code ?? ''} ${normalize(f.answer.message)}` : '');
  const classKey = [f.invariant, f.target ?? '-', method, f.surface ?? '-', f.mutation?.kind ?? 'valid', outcome].join(' | ');
  const since = f.since ?? f.answer?.start ?? Date.now() - 1000;
  const wire = f.req && f.surface ? wireOf(f.surface, f.req, f.key && f.key !== 'none' ? `<${f.key} key>` : undefined) : undefined;
  const failure: Omit<Failure, 'known'> = {
    invariant: f.invariant,
    seed: s.opts.seed,
    backend: s.opts.backend,
    caseIndex: f.caseIndex,
    target: f.target ?? '-',
    method,
    surface: f.surface ?? '-',
    key: f.key ?? 'platform',
    mutation,
    field: f.mutation ? pathText(f.mutation.path) : '-',
    what: f.what,
    request: requestText(f.req),
    wire: wire && f.req && {
      method: f.surface === 'rest' ? f.req.method : 'POST', path: f.req.path, headers: wire.headers,
      bodyBase64: wire.body !== undefined && Buffer.byteLength(wire.body) <= 1 << 20 ? Buffer.from(wire.body).toString('base64') : undefined,
    },
    answer: answerText(f.answer),
    logs: [], // filled in at the end of the run, when every line has arrived
    logWindow: [since, f.answer?.end ?? Date.now()],
    outcome,
    classKey,
  };
  s.failures.push({ ...failure, known: knownDefect(failure) });
}

/** The log lines a process wrote while a request was served (by their own `time`), in short. */
export function logsOf(child: FuzzChild, from: number, to: number): string[] {
  return child
    .logsSince(from - 5)
    .filter((l) => {
      const t = timeOf(l.text);
      return t === undefined ? l.at <= to + 50 : t >= from - 5 && t <= to + 5;
    })
    .slice(0, 4)
    .map((l) => summarizeLog(l.text));
}

const timeOf = (text: string) => {
  const m = /"time":(\d+)/.exec(text);
  return m ? Number(m[1]) : undefined;
};

/** A log line in short: the error's type, the end of its message (where drivers put the reason) and its first frame in services/ or sidecar/. */
function summarizeLog(line: string): string {
  try {
    const j = JSON.parse(line) as { msg?: string; err?: { type?: string; message?: string; stack?: string } };
    if (!j.err) return `${j.msg ?? ''}`.slice(0, 300);
    const msg = j.err.message ?? '';
    const frame = /\(?(\/[^()\s]*\/(?:services|sidecar)\/[^()\s]+)\)?/.exec(j.err.stack ?? '')?.[1]?.replace(/^.*\/(services|sidecar)\//, '$1/');
    return `${j.msg ?? ''}: ${j.err.type ?? 'Error'}: ${msg.length > 260 ? `…${msg.slice(-260)}` : msg}${frame ? ` at ${frame}` : ''}`;
  } catch {
    return line.slice(0, 300);
  }
}

/** Whether an `unavailable` is the contract's answer to a `minRevision` ahead of the tenant (contract §5). */
function minRevisionAhead(c: CaseRecord): boolean {
  if (!/\.(Evaluate(Batch)?|GetEffectivePermissions|LookupResources|LookupSubjects|PlanResources)$/.test(c.m.name) || c.answer.code !== 'unavailable') return false;
  const m = /^(?:requests\[\d+\]\.)?(?:.*?)revision (\d+) of tenant \S+ is not available yet \(at (\d+)\)/.exec(c.answer.message ?? '');
  return !!m && BigInt(m[1]) > BigInt(m[2]);
}

/** gRPC statuses that are the server's fault: internal, unknown, unavailable, data loss. */
const SERVER_GRPC = new Set([13, 2, 14, 15]);

const caseBase = (c: CaseRecord) => ({ caseIndex: c.index, target: c.target, m: c.m, surface: c.surface, key: c.key, mutation: c.mutation, req: c.req, answer: c.answer });

/** The invariants of the answer and of the database after one case. */
export async function checkCase(s: State, c: CaseRecord, payload: Payload): Promise<void> {
  const { answer: a } = c;
  const base = caseBase(c);
  if (a.networkError) record(s, { ...base, invariant: 'answers', what: `no answer: ${a.networkError}`, detailClass: a.networkError.replace(/\d+/g, '<n>') });
  else if ((a.status >= 500 || SERVER_GRPC.has(a.grpcStatus ?? 0)) && !minRevisionAhead(c)) {
    record(s, { ...base, invariant: 'no-5xx', what: `HTTP ${a.httpStatus}${a.grpcStatus !== undefined ? `, grpc-status ${a.grpcStatus}` : ''}${a.code ? ` (${a.code})` : ''}: ${a.message ?? trim(a.text, 200)}` });
  }
  const child = childOf(s, c.target);
  if (child.exited()) {
    record(s, { ...base, invariant: 'answers', what: child.exited()!, detailClass: 'process exited' });
    return;
  }
  // A sidecar writes nothing: the database is checked after cases of the control plane.
  if (c.target === 'control-plane') await checkDatabase(s, c);
  if (a.status >= 400 && a.status < 500) {
    const leak = INTERNAL_TEXT.exec(a.message ?? a.text);
    if (leak) record(s, { ...base, invariant: 'no-internal-error-text', what: `the error message is an internal error's text: "${trim(a.message ?? a.text, 160)}"`, detailClass: leak[0] });
    if (a.code === 'invalid_argument' && c.mutation && c.mutation.path.length > 0 && NAMED_KINDS.has(c.mutation.kind) && !namesField(c, c.mutation)) {
      record(s, {
        ...base, invariant: 'invalid-argument-names-field',
        what: `invalid_argument for a bad ${pathText(c.mutation.path)} names no field of it: "${trim(a.message, 200)}"${a.fields.length ? ` (ErrorInfo.field ${a.fields.map((x) => JSON.stringify(x)).join(', ')})` : ''}`,
        detailClass: normalize(a.message).slice(0, 40),
      });
    }
  }
  if (a.status === 200 && c.target === 'control-plane') {
    const keys = c.mutation?.path.length === 0 ? [] : itemsOf(c.m, payload.tree).map((i) => comboKey(c.m, i)).filter((k): k is string => !!k);
    // Binary answers are decoded to the Connect JSON form.
    harvest(s.world, c.m, c.surface === 'rest' ? 'rest' : 'connect', a.json, keys);
    if (c.m.op === 'delete' || c.m.name.endsWith('.MoveScope')) await resync(s.server, s.world);
  }
}

/** No write on an error answer; every tenant's change log exactly 1..revision. */
async function checkDatabase(s: State, c: CaseRecord, a: Answer = c.answer): Promise<void> {
  const base = { ...caseBase(c), answer: a };
  // Nothing written anywhere since the last full check: digest and change log are as they were.
  const tx = await txSnapshot(s.server);
  const { tx: tx2, digest: after, gaps } = tx === s.lastTx ? { tx, digest: s.lastDigest, gaps: [] as LogGap[] } : await snapshot(s.server);
  s.lastTx = tx2;
  if (refused(a)) {
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
}

/** Text of JavaScript, driver or SQL errors that must never reach a client as an error message. */
const INTERNAL_TEXT = /Maximum call stack size exceeded|is not a function|Cannot read propert(y|ies) of|undefined is not|is not iterable|DriverException|invalid input syntax|invalid byte sequence|unsupported Unicode escape|violates .* constraint|syntax error at or near|\bat [A-Za-z.]+ \(\/|RangeError|TypeError|ReferenceError|premature EOF|invalid wire type|cannot read field/;

/**
 * Mutations whose value is wrong in itself, whatever the other fields hold: an
 * `invalid_argument` for them must name the field (its JSON path or an enclosing one, or the
 * field's JSON or proto name; an unknown field by its key). Mutations that may only break a
 * relation between fields (ids of another tenant, unknown ids, NUL or a lone surrogate in an id,
 * empty values that fall back to defaults) are left out: naming the other side is fine there.
 * Binary mutations of one field are named by the scanner; those of the body as a whole
 * (truncated, malformed, an envelope) have no field to name.
 */
const NAMED_KINDS = new Set([
  'wrongType', 'extremeNumber', 'longString', 'deepNesting', 'hugeArray', 'spelling', 'badTimestamp', 'unknownField',
  'wireType', 'longVarint', 'hugeRepeated', 'hugeMap', 'lengthPastEnd', 'invalidUtf8', 'unknownFields',
]);

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
  if (ancestors.some((p) => message.includes(p) || a.fields.some((f) => f === p || f.startsWith(`${p}.`) || f.startsWith(`${p}[`)))) return true;
  const names = mu.field ? [mu.field.jsonName, mu.field.protoName] : [];
  return names.some((n) => new RegExp(`(^|[^A-Za-z0-9_])${n}($|[^A-Za-z0-9_])`).test(message) || a.fields.some((f) => f.split(/[.[\]]/).includes(n)));
}

/** Invariant 3 after a step: every tenant's change-log revisions are exactly 1..revision. */
export function checkLog(s: State, f: Omit<FailureInput, 'invariant' | 'what'> & { label: string }, gaps: LogGap[]): void {
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

/** pino's level of a log line; a line that is not JSON counts as an error unless it is a Node warning. */
function levelOf(text: string): number {
  try {
    const level = (JSON.parse(text) as { level?: unknown }).level;
    return typeof level === 'number' ? level : 30;
  } catch {
    return /^\(node:\d+\) /.test(text) ? 40 : 50;
  }
}

/**
 * No error-level line (pino level ≥ 50) for a client's mistake: the lines each process wrote
 * since the last look, those of the case's process attributed to the case (its lines have
 * arrived: the suite waited for the process to be idle), the other's to its last case when
 * written during it, else to no case.
 */
export function checkErrorLogs(s: State, c: CaseRecord | undefined): void {
  for (const t of ['control-plane', 'sidecar'] as Target[]) {
    const child = t === 'sidecar' ? s.sidecar : s.server;
    if (!child) continue;
    const lines = child.logsAfter(s.logCursor[t]);
    if (lines.length === 0) continue;
    s.logCursor[t] = lines[lines.length - 1].seq;
    const errors = lines.filter((l) => levelOf(l.text) >= 50);
    if (errors.length === 0) continue;
    const when = timeOf(errors[0].text) ?? errors[0].at;
    const owner = c?.target === t ? c : [...s.recent].reverse().find((x) => x.target === t && when >= x.answer.start - 5 && when <= x.answer.end + 1000);
    const text = `${child.name} logged ${errors.length} error-level line${errors.length > 1 ? 's' : ''}: ${summarizeLog(errors[0].text)}`;
    const detail = summarizeLog(errors[0].text).replace(/\d+/g, '<n>').slice(0, 80);
    if (owner) record(s, { ...caseBase(owner), invariant: 'no-error-log', what: text, detailClass: detail });
    else record(s, { invariant: 'no-error-log', caseIndex: -3, target: t, label: 'between cases', what: text, detailClass: detail, since: when });
  }
}

/**
 * `/healthz` of the case's process answers 200 on the connection the case used (no bound on the
 * time: stalls are measured in the process).
 */
export async function checkHealth(s: State, c: CaseRecord): Promise<void> {
  const x = await http1(childOf(s, c.target).url, 'GET', '/healthz', {}, undefined, 10_000);
  const what = x.error ? `GET /healthz got no answer after this request: ${x.error}` : x.status !== 200 ? `GET /healthz answered ${x.status} after this request` : undefined;
  if (what) record(s, { ...caseBase(c), invariant: 'healthz-answers', what, detailClass: what.replace(/\d+/g, '<n>').slice(0, 60) });
}

/**
 * What the case cost its process: the CPU time of a refused request within `bounds.cpuMs`, and
 * no stall of `bounds.stallMs` or more. A case over a bound is replayed twice (a refused or
 * read-only one; measured the same way) and fails the run when both replays are over it too; a
 * successful write is not replayed (that would change the world and the seeded sequence) and
 * fails when a second case of the same method and mutation is over it. A stall of
 * `bounds.hardStallMs` fails at once.
 */
export async function judgeCost(s: State, c: CaseRecord): Promise<void> {
  const cost = s.costs[c.target];
  const isRefused = refused(c.answer);
  const cpuMs = c.cpu?.totalMs;
  const stall = stallOf(c);
  if (cpuMs !== undefined) {
    cost.measured++;
    cost.anyCpuMaxMs = Math.max(cost.anyCpuMaxMs, cpuMs);
    if (isRefused) {
      cost.refused++;
      cost.refusedCpu.push(cpuMs);
      (cost.kinds[c.mutation?.kind ?? 'valid'] ??= []).push(cpuMs);
      cost.top.push({ ms: cpuMs, method: c.m.name, surface: c.surface, mutation: c.mutation ? `${c.mutation.kind}: ${c.mutation.label}` : 'valid' });
      cost.top.sort((x, y) => y.ms - x.ms).splice(5);
    }
  }
  cost.loops.push(c.loopMs);
  cost.stalls.push(stall);
  if (cost.longest.length < 5 || stall > cost.longest[cost.longest.length - 1].ms) {
    cost.longest.push({ ms: Math.round(stall * 10) / 10, method: c.m.name, surface: c.surface, mutation: c.mutation ? `${c.mutation.kind}: ${c.mutation.label}` : 'valid', status: c.answer.status });
    cost.longest.sort((x, y) => y.ms - x.ms).splice(5);
  }
  const overCpu = isRefused && cpuMs !== undefined && cpuMs > s.bounds.cpuMs;
  const overStall = stall >= s.bounds.stallMs;
  if (!overCpu && !overStall) return;
  if (overCpu) cost.overCpu++;
  if (overStall) cost.overStall++;
  const base = { ...caseBase(c), since: c.answer.start };
  const cpuText = (ms: number) => `${Math.round(ms)} ms of CPU (bound ${s.bounds.cpuMs} ms)`;
  const stallText = (ms: number) => `the event loop held ${Math.round(ms)} ms by the process's own work (bound ${s.bounds.stallMs} ms)`;
  if (stall >= s.bounds.hardStallMs) {
    cost.confirmed++;
    record(s, { ...base, invariant: 'no-stall', what: `${stallText(stall)} while this request was served (loop delay ${Math.round(c.loopMs)} ms; main thread ${Math.round(c.cpu?.mainMs ?? 0)} ms on the CPU)`, detailClass: `≥ ${s.bounds.hardStallMs} ms` });
    return;
  }
  const replayable = isRefused || c.m.readOnly;
  if (replayable) {
    const cpus: number[] = [];
    const stalls: number[] = [];
    const child = childOf(s, c.target);
    for (let i = 0; i < 2; i++) {
      const again = await measured(child, () => resend(s, c));
      if (c.target === 'control-plane') await checkDatabase(s, c, again.answer);
      if (again.cpu && refused(again.answer)) cpus.push(again.cpu.totalMs);
      stalls.push(stallOf(again));
    }
    if (overCpu) {
      if (cpus.length === 2 && cpus.every((x) => x > s.bounds.cpuMs)) {
        cost.confirmed++;
        record(s, { ...base, invariant: 'cpu-per-refusal', what: `refused after ${cpuText(cpuMs!)}; replayed twice: ${cpus.map(Math.round).join(' ms, ')} ms`, detailClass: 'over the CPU bound, reproduced' });
      } else cost.unconfirmed.push({ what: 'cpu', ms: Math.round(cpuMs!), method: c.m.name, mutation: c.mutation?.kind ?? 'valid' });
    }
    if (overStall) {
      if (stalls.every((x) => x >= s.bounds.stallMs)) {
        cost.confirmed++;
        record(s, { ...base, invariant: 'no-stall', what: `${stallText(stall)} while this request was served; replayed twice: ${stalls.map(Math.round).join(' ms, ')} ms`, detailClass: 'stall, reproduced' });
      } else cost.unconfirmed.push({ what: 'stall', ms: Math.round(stall), method: c.m.name, mutation: c.mutation?.kind ?? 'valid' });
    }
    return;
  }
  const k = `${c.target}|${c.m.name}|${c.mutation?.kind ?? 'valid'}`;
  const seen = s.slowByClass.get(k) ?? [];
  if (!seen.includes(c.index)) seen.push(c.index);
  s.slowByClass.set(k, seen);
  if (seen.length === 2) {
    cost.confirmed++;
    record(s, { ...base, invariant: 'no-stall', what: `${stallText(stall)} while this (successful) request was served; case ${seen[0]} of the same method and mutation did too`, detailClass: 'stall, recurred' });
  } else if (seen.length < 2) cost.unconfirmed.push({ what: 'stall', ms: Math.round(stall), method: c.m.name, mutation: c.mutation?.kind ?? 'valid' });
}

/** Percentile `p` (0–100) of `xs`, rounded to 0.1 ms. */
export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return 0;
  const sorted = [...xs].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] * 10) / 10;
}
