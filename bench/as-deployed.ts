/**
 * Benchmarks that host a control plane in their own process call this first: when node was
 * started without the control plane's V8 flags (services/control-plane/node-flags.ts), it runs
 * the benchmark again under them and exits with its status, so the control plane is measured as
 * it is deployed. `BENCH_CONTROL_PLANE_FLAGS=off` runs it without them, for comparison.
 */
import { spawnSync } from 'node:child_process';
import { missingNodeFlags } from '../services/control-plane/node-flags.js';

export function runAsDeployed(): void {
  const missing = missingNodeFlags();
  if (missing.length === 0 || process.env.BENCH_CONTROL_PLANE_FLAGS === 'off') return;
  const run = spawnSync(process.execPath, [...missing, ...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit' });
  process.exit(run.status ?? 1);
}
