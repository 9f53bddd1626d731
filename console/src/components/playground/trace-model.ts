/**
 * A decision's trace as a tree, the way `authz check --explain` draws it (cli/explain.ts):
 * consecutive steps of one leg form a branch; within the policy leg, the policies are grouped by
 * priority, highest first, where the first of them stood, as the engine weighs them.
 */
import type { JsonObject, JsonValue } from '@bufbuild/protobuf';

/** A trace step's fields the tree reads (the generated TraceStep has these). */
export interface StepLike {
  readonly step: string;
  readonly result: string;
  readonly message: string;
  readonly details?: JsonObject;
}

export type TraceNode =
  | { kind: 'leg'; leg: string; label: string; children: TraceNode[] }
  | { kind: 'priority'; priority: number; children: TraceNode[] }
  | { kind: 'step'; step: StepLike; index: number };

/** How the engine's leg names read as branch titles. */
const LEG_LABELS: Record<string, string> = { policy: 'policies', role: 'roles' };

export const legLabel = (leg: string): string => LEG_LABELS[leg] ?? leg;

export function priorityOf(step: StepLike): number | undefined {
  const p = step.details?.priority;
  return typeof p === 'number' ? p : undefined;
}

/** The leg's steps, those with a priority grouped by it where the first of them stood. */
function legChildren(steps: { step: StepLike; index: number }[]): TraceNode[] {
  const prioritised = steps.filter((s) => priorityOf(s.step) !== undefined);
  const asNode = (s: { step: StepLike; index: number }): TraceNode => ({ kind: 'step', ...s });
  if (prioritised.length === 0) return steps.map(asNode);
  const priorities = [...new Set(prioritised.map((s) => priorityOf(s.step)!))].sort((a, b) => b - a);
  const groups: TraceNode[] = priorities.map((priority) => ({
    kind: 'priority',
    priority,
    children: prioritised.filter((s) => priorityOf(s.step) === priority).map(asNode),
  }));
  const out: TraceNode[] = [];
  let placed = false;
  for (const s of steps) {
    if (priorityOf(s.step) === undefined) out.push(asNode(s));
    else if (!placed) {
      out.push(...groups);
      placed = true;
    }
  }
  return out;
}

/** The trace as branches, one per run of steps of one leg. */
export function traceTree(trace: readonly StepLike[]): TraceNode[] {
  const legs: { leg: string; steps: { step: StepLike; index: number }[] }[] = [];
  trace.forEach((step, index) => {
    const last = legs.at(-1);
    if (last && last.leg === step.step) last.steps.push({ step, index });
    else legs.push({ leg: step.step, steps: [{ step, index }] });
  });
  return legs.map(({ leg, steps }) => ({ kind: 'leg', leg, label: legLabel(leg), children: legChildren(steps) }));
}

/** The outcome of a leg as its title shows it: the last step's, which is where the leg ended. */
export function legResult(node: Extract<TraceNode, { kind: 'leg' }>): string {
  let last: TraceNode | undefined = node.children.at(-1);
  while (last && last.kind !== 'step') last = last.children.at(-1);
  return last?.kind === 'step' ? last.step.result : '';
}

/** Keys of details that hold a path: drawn as a sequence with arrows, in order. */
export const isPathKey = (key: string): boolean => /path$/i.test(key);

/** Words of the engine's results, as a colour class: good, bad or neutral. */
export function outcomeTone(result: string): 'good' | 'bad' | 'neutral' {
  if (['pass', 'allow', 'allowed', 'match', 'matched', 'ok'].includes(result)) return 'good';
  if (['fail', 'deny', 'denied', 'no_match', 'error'].includes(result)) return 'bad';
  return 'neutral';
}

/** Ids as the engine writes them (`role_0190…`, `policy_9af4…_name`): words of a prefix, `_`, then id characters. */
const ID_PATTERN = /\b[a-z]+(?:_[a-z]+)*_[0-9a-f]{8,}[0-9A-Za-z_-]*/g;

/** A message cut into text and the ids it names, so that a view can show a name beside each id. */
export function splitIds(message: string): { text: string; id?: boolean }[] {
  const out: { text: string; id?: boolean }[] = [];
  let at = 0;
  for (const m of message.matchAll(ID_PATTERN)) {
    if (m.index > at) out.push({ text: message.slice(at, m.index) });
    out.push({ text: m[0], id: true });
    at = m.index + m[0].length;
  }
  if (at < message.length) out.push({ text: message.slice(at) });
  return out;
}

/** The variables a JSON Logic rule reads (`{"var": "a.b"}` or `{"var": ["a.b", default]}`), each once, in order. */
export function logicVariables(rule: JsonValue | undefined): string[] {
  const seen = new Set<string>();
  const walk = (v: JsonValue | undefined) => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === 'object') {
      for (const [op, arg] of Object.entries(v)) {
        if (op === 'var') {
          const name = Array.isArray(arg) ? arg[0] : arg;
          if (typeof name === 'string' && name !== '') seen.add(name);
          else if (typeof name === 'number') seen.add(String(name));
          if (Array.isArray(arg)) arg.slice(1).forEach(walk);
        } else walk(arg);
      }
    }
  };
  walk(rule);
  return [...seen];
}

/** The value at a dotted path of `data`, as JSON Logic's `var` reads it; undefined when absent. */
export function valueAt(data: JsonValue | undefined, path: string): JsonValue | undefined {
  let v: JsonValue | undefined = data;
  for (const part of path.split('.')) {
    if (v === null || typeof v !== 'object') return undefined;
    v = Array.isArray(v) ? v[Number(part)] : v[part];
  }
  return v;
}
