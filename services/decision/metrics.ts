import type { Registry } from 'prom-client';
import { HotCounter } from '../transport/hot-metrics.js';
import { DECISION_REASONS, type Decision } from '../engine/mod.js';

/**
 * `authz_decisions_total{reason, allowed}`: every decision a process answers, by the engine's
 * reason. Returns the hook a DecisionSource calls per decision; the label children are made
 * once, so counting is one addition on the hot path (hot-metrics.ts).
 */
export function decisionCounter(registry: Registry): (d: Decision) => void {
  const counter = new HotCounter(registry, {
    name: 'authz_decisions_total',
    help: 'Decisions answered, by reason and outcome (a batch counts each of its requests).',
    labelNames: ['reason', 'allowed'],
  });
  const children = new Map<string, [denied: { inc(): void }, allowed: { inc(): void }]>();
  for (const reason of DECISION_REASONS) children.set(reason, [counter.child({ reason, allowed: 'false' }), counter.child({ reason, allowed: 'true' })]);
  return (d) => {
    const pair = children.get(d.reason);
    if (pair) pair[d.allowed ? 1 : 0].inc();
    else counter.inc({ reason: d.reason, allowed: String(d.allowed) });
  };
}
