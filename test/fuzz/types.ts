/** What a fuzz run is made of and reports: its options, cases, failures and results. */
import type { Backend } from '../harness.js';
import type { FuzzChild } from './child.js';
import type { FuzzServer } from './control-plane.js';
import type { MethodInfo, Mutation, World } from './generator.js';
import type { Answer, Surface } from './http.js';
import type { HttpRequest } from './requests.js';
import type { Keys } from './world.js';

/** The process a case is sent to: the control plane, or the sidecar following the fuzzed tenant. */
export type Target = 'control-plane' | 'sidecar';
/** The key a case is sent with; `none` is no key at all. */
export type KeyKind = 'platform' | 'user' | 'service' | 'none';

export type Invariant =
  | 'no-5xx' | 'no-write-on-error' | 'revision-equals-change-log' | 'no-stall' | 'cpu-per-refusal' | 'no-error-log'
  | 'healthz-answers' | 'answers' | 'invalid-argument-names-field' | 'no-internal-error-text' | 'coverage-floor';

/** Bounds of the cost invariants (ms). */
export interface Bounds {
  /** CPU time (all threads) a refused request may cost the process. */
  cpuMs: number;
  /** Event-loop delay that the process's own work may cause. */
  stallMs: number;
  /** A stall this long fails at once, without a replay. */
  hardStallMs: number;
}

export interface RunOptions {
  backend: Backend;
  seed: number;
  budgetMs: number;
  /** Stop after this many cases (replays: `FUZZ_CASES`). */
  maxCases?: number;
  /** Only methods whose full name equals or ends with one of these (`FUZZ_METHOD`). */
  methods?: string[];
  surfaces?: Surface[];
  targets?: Target[];
  /** Only these mutation kinds, plus `valid` if listed (`FUZZ_MUTATION`). */
  mutations?: string[];
  bounds?: Partial<Bounds>;
  /** Log every case, its answer and its cost (`FUZZ_TRACE`). */
  trace?: boolean;
  log?: (line: string) => void;
}

export interface Failure {
  invariant: Invariant;
  seed: number;
  backend: Backend;
  /** 0-based index of the case in the run (-1: world seeding, -2: spares made before a case, -3: between cases, -4: the whole run). */
  caseIndex: number;
  target: Target | '-';
  method: string;
  surface: Surface | '-';
  key: KeyKind;
  mutation: string;
  field: string;
  what: string;
  request: string;
  /** The request as sent (headers, the key as `<platform key>` …, and the body in base64 up to 1 MiB), for the report file. */
  wire?: { method: string; path: string; headers: Record<string, string>; bodyBase64?: string };
  answer: string;
  logs: string[];
  /** When the server wrote the log lines of this failure (ms since epoch). */
  logWindow?: [number, number];
  /** The answer in short (status, code, normalized message or what changed). */
  outcome: string;
  /** Groups failures that are the same defect in the same method and surface. */
  classKey: string;
  /** The id of the known defect this failure is (known-defects.ts): reported, not failed. */
  known?: string;
}

/** Valid requests sent (with a key whose tier reaches the method) and how many succeeded. */
export interface Coverage {
  sent: number;
  ok: number;
}

export interface MethodStats {
  cases: number;
  statuses: Record<string, number>;
  /** Valid requests by surface. */
  valid: Partial<Record<Surface, Coverage>>;
}

/** What requests cost a process: CPU per refused request, event-loop delays, stalls. */
export interface CostSummary {
  /** Cases whose CPU time was measured. */
  measured: number;
  refused: number;
  refusedCpuMaxMs: number;
  refusedCpuP99Ms: number;
  /** The most CPU any request took (accepted ones too), ms. */
  anyCpuMaxMs: number;
  /** Event-loop delays, whatever held the loop (a busy machine too). */
  loopMaxMs: number;
  loopP99Ms: number;
  /** The loop held by the process itself (stalls). */
  stallMaxMs: number;
  stallP99Ms: number;
  /** Refused requests over the CPU bound, and stalls over the stall bound (before replays). */
  overCpu: number;
  overStall: number;
  /** Over a bound again when replayed (or recurred): failures. */
  confirmed: number;
  /** Over a bound once, not again: counted, not failed. */
  unconfirmed: { what: string; ms: number; method: string; mutation: string }[];
  /** The costliest refusals seen (method, mutation, CPU ms), for the summary. */
  top: { ms: number; method: string; surface: Surface; mutation: string }[];
  /** CPU of refused requests by mutation kind (`valid` for unmutated ones): how many, median and max ms. */
  refusedByKind: Record<string, { n: number; medianMs: number; maxMs: number }>;
  /** The longest stalls seen, accepted requests too (method, mutation, answer, stall ms). */
  longest: { ms: number; method: string; surface: Surface; mutation: string; status: number }[];
}

export interface RunResult {
  seed: number;
  backend: Backend;
  cases: number;
  elapsedMs: number;
  setupMs: number;
  /** By target, then method. */
  byMethod: Record<Target, Record<string, MethodStats>>;
  valid: Coverage;
  /** A hash of every case's target, method, surface, key and mutation: equal for two runs of one seed (replays). */
  sequence: string;
  /** Where the time went (ms): requests, measuring, invariant checks, spares made before cases, replays. */
  timing: { requests: number; measuring: number; checks: number; spares: number; replays: number };
  /** Answers by mutation kind: `400 invalid_argument <normalized message>` → count. */
  outcomes: Record<string, Record<string, number>>;
  /** Failures that fail the run. */
  failures: Failure[];
  /** Failures that are known defects (known-defects.ts), reported only. */
  known: Failure[];
  costs: Record<Target, CostSummary>;
  bounds: Bounds;
}

export interface CaseRecord {
  index: number;
  target: Target;
  m: MethodInfo;
  surface: Surface;
  key: KeyKind;
  mutation?: Mutation;
  req: HttpRequest;
  answer: Answer;
  /** CPU ms of the process for the request (all threads, main thread), when /proc tells. */
  cpu?: { totalMs: number; mainMs: number };
  /** The longest event-loop delay of the process while it was served (ms), and the longest held by its own work. */
  loopMs: number;
  ownLoopMs?: number;
}

/** A run's state, shared by the checks. */
export interface State {
  server: FuzzServer;
  sidecar?: FuzzChild;
  world: World;
  keys: Keys;
  opts: RunOptions;
  bounds: Bounds;
  failures: Failure[];
  lastDigest: Record<string, number>;
  /** The transaction snapshot of `lastDigest`. */
  lastTx: string;
  knownGaps: Set<string>;
  recent: CaseRecord[];
  /** Cases over a bound on a successful write, by class, waiting for a second one. */
  slowByClass: Map<string, number[]>;
  costs: Record<Target, CostSummary & { refusedCpu: number[]; loops: number[]; stalls: number[]; kinds: Record<string, number[]> }>;
  /** The last log line of each process already looked at. */
  logCursor: Record<Target, number>;
}
