/**
 * The descriptor-driven fuzz suite (see generator.ts, json-mutations.ts, binary-mutations.ts and
 * runner.ts): every RPC of every service, valid requests and mutations of them over REST,
 * Connect (JSON and binary), gRPC and gRPC-Web, against a real control plane on every backend
 * and a sidecar following it, without a key and with each key tier. Invariants after every
 * case: an answer and never a 5xx, nothing written when the answer is an error, every tenant's
 * change-log revisions exactly 1..revision, no error-level log line, the CPU time of a refused
 * request and the event-loop stalls within their bounds, `/healthz` answering; per run, a floor
 * on the share of valid requests that succeed (see README.md).
 *
 * One file per backend (postgres.test.ts, embedded.test.ts), so that a run's two workers fuzz
 * both at once. Each backend runs a fixed seed and a random one (printed), splitting
 * FUZZ_BUDGET_MS (default 30 s per backend). Environment:
 *   FUZZ_SEED=<n>        replay one run (the whole budget goes to it)
 *   FUZZ_CASES=<n>       stop after n cases (with FUZZ_SEED: stop right after a failing case)
 *   FUZZ_BUDGET_MS=<ms>  time budget per backend
 *   FUZZ_METHOD=<names>  comma-separated methods, full or short (`CreateResource`, `authz.v1.ResourceService.CreateResource`)
 *   FUZZ_MUTATION=<kinds> comma-separated mutation kinds (`nul,hugeMap`, `valid` for unmutated requests)
 *   FUZZ_SURFACE=<surfaces> rest, connect, connect-proto, grpc, grpc-web (comma-separated)
 *   FUZZ_TARGET=control-plane|sidecar
 *   FUZZ_CPU_BOUND_MS, FUZZ_STALL_MS  the cost bounds (default 100 ms each)
 *   FUZZ_KNOWN_DEFECTS=fail  fail on the known defects (known-defects.ts) too
 *   FUZZ_TRACE=1         print every case, its answer and what it cost
 *   FUZZ_REPORT_DIR=<dir> write each run's result as JSON there
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'vitest';
import { describeEachBackend, type Backend } from '../harness.js';
import type { Surface } from './http.js';
import { formatFailures, formatKnown, formatResult } from './report.js';
import { runFuzz } from './runner.js';
import type { Target } from './types.js';

const FIXED_SEED = 20260214;
const env = process.env;
const list = (v: string | undefined) => (v ? v.split(',').map((x) => x.trim()).filter(Boolean) : undefined);
const envSeed = env.FUZZ_SEED ? Number(env.FUZZ_SEED) : undefined;
const seeds: [string, number][] = envSeed !== undefined ? [['replayed', envSeed]] : [['fixed', FIXED_SEED], ['random', (Math.random() * 2 ** 31) | 0]];
const BUDGET_MS = Number(env.FUZZ_BUDGET_MS ?? 30_000);
const SHOWN = 20;

/** The fuzz suite on one backend (skipped when the backend is not available). */
export function fuzzSuite(only: Backend): void {
  describeEachBackend('fuzz on %s', [only], (backend) => {
    it.each(seeds)('%s seed %i: every RPC, valid and mutated, on every surface of both processes, keeps the invariants', async (_label, seed) => {
      process.stdout.write(`fuzz ${backend}: seed ${seed} (replay with FUZZ_SEED=${seed})\n`);
      const res = await runFuzz({
        backend,
        seed,
        budgetMs: BUDGET_MS / seeds.length,
        maxCases: env.FUZZ_CASES ? Number(env.FUZZ_CASES) : undefined,
        methods: list(env.FUZZ_METHOD),
        mutations: list(env.FUZZ_MUTATION),
        surfaces: list(env.FUZZ_SURFACE) as Surface[] | undefined,
        targets: list(env.FUZZ_TARGET) as Target[] | undefined,
        bounds: {
          ...(env.FUZZ_CPU_BOUND_MS ? { cpuMs: Number(env.FUZZ_CPU_BOUND_MS) } : {}),
          ...(env.FUZZ_STALL_MS ? { stallMs: Number(env.FUZZ_STALL_MS) } : {}),
        },
        trace: env.FUZZ_TRACE === '1',
        log: (line) => process.stdout.write(`${line}\n`),
      });
      process.stdout.write(`${formatResult(res)}\n`);
      if (res.known.length) process.stdout.write(`${formatKnown(res)}\n`);
      if (env.FUZZ_REPORT_DIR) {
        mkdirSync(env.FUZZ_REPORT_DIR, { recursive: true });
        writeFileSync(join(env.FUZZ_REPORT_DIR, `fuzz-${backend}-${seed}.json`), JSON.stringify(res, null, 1));
      }
      if (res.failures.length > 0) {
        throw new Error(
          `${formatResult(res)}\n\n${formatFailures(res.failures, SHOWN)}` +
            `\n\nReplay: FUZZ_SEED=${seed} npx vitest run test/fuzz/${backend}.test.ts (FUZZ_CASES=<case + 1> stops right after a case)`,
        );
      }
    }, BUDGET_MS + 300_000);
  });
}
