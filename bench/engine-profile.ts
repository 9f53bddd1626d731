/**
 * Diagnostics for bench/engine.ts (not part of the benchmark): per-check time on one tenant
 * size with uniform requests, a hot working set, and a single repeated request.
 *   node --expose-gc --import tsx bench/engine-profile.ts <resources> [--cpu-prof]
 */
import { evaluate, type EvaluateRequest } from '../services/engine/evaluate.js';
import { TenantIndex } from '../services/engine/tenant-index/mod.js';
import { generateTenant } from './engine-tenant.js';

const size = Number(process.argv[2] ?? 100_000);
const gen = generateTenant({ name: 'p', resources: size, subjects: size / 10, roles: Math.max(10, size / 1000), policies: size / 100 }, 12);
const index = TenantIndex.fromSnapshot(gen.snapshot);
const options = { now: new Date('2025-06-01T10:00:00Z'), gate: 'off' as const };

function run(label: string, reqs: EvaluateRequest[], rounds: number): void {
  for (const q of reqs) evaluate(index, q, options);
  const t0 = process.hrtime.bigint();
  let n = 0;
  for (let r = 0; r < rounds; r++) for (const q of reqs) {
    evaluate(index, q, options);
    n++;
  }
  console.log(`${size} ${label}: ${(Number(process.hrtime.bigint() - t0) / 1000 / n).toFixed(3)} µs/check`);
}

run('uniform', gen.requests(50_000, 13), 10);
run('hot 10k/1k', gen.requests(50_000, 14, { resources: 10_000, subjects: 1_000 }), 10);
run('hot 100/10', gen.requests(50_000, 15, { resources: 100, subjects: 10 }), 10);
const one = gen.requests(1, 16);
run('one request', Array.from({ length: 50_000 }, () => one[0]), 10);
