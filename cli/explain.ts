/**
 * A decision for people: one line with the answer, and with `--explain` the evaluate response's
 * trace as a tree. Consecutive steps of one leg (gate, policies, roles, ownership, hierarchy…)
 * form a branch; policies are grouped by priority, highest first, as the engine weighs them;
 * each step shows its outcome, its sentence, and the facts of its details that the sentence does
 * not already state (conditions and their values, role and hierarchy paths).
 */
import type { JsonObject, JsonValue } from '@bufbuild/protobuf';
import type { Styles } from './io.js';

/** A trace step as the REST surface writes it. */
export interface TraceStepJson {
  step: string;
  result: string;
  message: string;
  details?: JsonObject;
}

/** The fields of an evaluate response the rendering reads, as the REST surface writes them. */
export interface DecisionJson {
  allowed: boolean;
  reason: string;
  revision: number;
  decidedByPolicy?: boolean;
  evaluatedPolicy?: { id?: string; effect?: string; priority?: number } | null;
  trace?: TraceStepJson[];
}

interface TreeNode {
  text: string;
  children: TreeNode[];
}

const SECTION_NAMES: Record<string, string> = { policy: 'policies', role: 'roles' };

const POSITIVE = new Set(['pass', 'allow', 'allowed', 'matched', 'match', 'ok']);
const NEGATIVE = new Set(['fail', 'deny', 'denied', 'no_match', 'error']);

function marker(result: string, s: Styles): string {
  if (POSITIVE.has(result)) return s.green('✓');
  if (NEGATIVE.has(result)) return s.red('✗');
  if (result === 'skip') return s.dim('-');
  return s.dim('•');
}

/** The one-line answer: allowed or denied, why, at which revision, and the deciding policy. */
export function decisionLine(d: DecisionJson, s: Styles): string {
  const head = d.allowed ? s.green(s.bold('✓ allowed')) : s.red(s.bold('✗ denied'));
  let line = `${head}  ${s.dim('reason')} ${d.reason || '-'}  ${s.dim('revision')} ${d.revision}`;
  const p = d.evaluatedPolicy;
  if (d.decidedByPolicy && p?.id) line += `\n${s.dim('decided by policy')} ${p.id} (${p.effect ?? '?'}, priority ${p.priority ?? 0})`;
  return line;
}

const scalarText = (v: JsonValue, s: Styles): string => {
  if (v === true) return s.green('✓');
  if (v === false) return s.red('✗');
  if (typeof v === 'string') return v;
  return JSON.stringify(v);
};

/** Whether the step's sentence already says `value`. */
function said(message: string, key: string, value: JsonValue): boolean {
  if (typeof value === 'string') return value !== '' && message.includes(value);
  if (typeof value === 'number') return message.includes(`${key} ${value}`);
  if (Array.isArray(value) && value.length > 0 && value.every((x) => typeof x === 'string')) return message.includes((value as string[]).join(' → '));
  return false;
}

/** The details of a step the sentence leaves out: scalars on one line, paths and lists on their own. */
function detailNodes(step: TraceStepJson, s: Styles, skip: ReadonlySet<string>): TreeNode[] {
  const details = step.details;
  if (!details) return [];
  const inline: string[] = [];
  const own: TreeNode[] = [];
  for (const [key, value] of Object.entries(details)) {
    // Paths always get a line of their own: they are what a person follows.
    const path = /path$/i.test(key);
    if (skip.has(key) || value === null || (!path && said(step.message, key, value))) continue;
    if (Array.isArray(value)) {
      // An empty list says nothing the sentence does not ("no roles held", "no inheriting ancestor").
      if (value.length === 0) continue;
      if (value.every((x) => typeof x !== 'object' || x === null)) {
        const joiner = path ? ' → ' : ', ';
        own.push({ text: `${s.dim(`${key}:`)} ${value.map((x) => scalarText(x, s)).join(joiner)}`, children: [] });
      } else {
        own.push({ text: s.dim(`${key}:`), children: value.map((x) => ({ text: compact(x, s), children: [] })) });
      }
    } else if (typeof value === 'object') {
      own.push({ text: `${s.dim(`${key}:`)} ${compact(value, s)}`, children: [] });
    } else {
      inline.push(`${s.dim(`${key}:`)} ${scalarText(value, s)}`);
    }
  }
  return [...(inline.length ? [{ text: inline.join('  '), children: [] }] : []), ...own];
}

/** An object as `key=value` pairs on one line. */
function compact(v: JsonValue, s: Styles): string {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return scalarText(v, s);
  return Object.entries(v)
    .map(([k, x]) => `${s.dim(`${k}=`)}${typeof x === 'object' && x !== null ? JSON.stringify(x) : scalarText(x, s)}`)
    .join(' ');
}

function stepNode(step: TraceStepJson, s: Styles, skip: ReadonlySet<string> = new Set()): TreeNode {
  return { text: `${marker(step.result, s)} ${step.message}`, children: detailNodes(step, s, skip) };
}

const priorityOf = (step: TraceStepJson): number | undefined => {
  const p = step.details?.priority;
  return typeof p === 'number' ? p : undefined;
};

/** A leg's steps, those with a priority grouped by it (highest first) where the first of them stood. */
function sectionChildren(steps: TraceStepJson[], s: Styles): TreeNode[] {
  const prioritised = steps.filter((x) => priorityOf(x) !== undefined);
  if (prioritised.length === 0) return steps.map((x) => stepNode(x, s));
  const priorities = [...new Set(prioritised.map((x) => priorityOf(x)!))].sort((a, b) => b - a);
  const groups: TreeNode[] = priorities.map((p) => ({
    text: s.bold(`priority ${p}`),
    children: prioritised.filter((x) => priorityOf(x) === p).map((x) => stepNode(x, s, new Set(['priority']))),
  }));
  const out: TreeNode[] = [];
  let placed = false;
  for (const x of steps) {
    if (priorityOf(x) === undefined) out.push(stepNode(x, s));
    else if (!placed) {
      out.push(...groups);
      placed = true;
    }
  }
  return out;
}

/** The trace as branches, one per run of steps of one leg. */
export function traceTree(trace: readonly TraceStepJson[], s: Styles): TreeNode[] {
  const sections: { leg: string; steps: TraceStepJson[] }[] = [];
  for (const step of trace) {
    const last = sections.at(-1);
    if (last && last.leg === step.step) last.steps.push(step);
    else sections.push({ leg: step.step, steps: [step] });
  }
  return sections.map(({ leg, steps }) => {
    const label = s.bold(SECTION_NAMES[leg] ?? leg);
    if (steps.length === 1 && priorityOf(steps[0]) === undefined) {
      const only = stepNode(steps[0], s);
      return { text: `${label}  ${only.text}`, children: only.children };
    }
    return { text: label, children: sectionChildren(steps, s) };
  });
}

/** Box-drawing lines of `nodes`. */
export function renderTree(nodes: readonly TreeNode[], s: Styles, prefix = ''): string[] {
  const lines: string[] = [];
  nodes.forEach((node, i) => {
    const last = i === nodes.length - 1;
    const [first, ...rest] = node.text.split('\n');
    lines.push(`${prefix}${s.dim(last ? '└─ ' : '├─ ')}${first}`);
    const childPrefix = `${prefix}${s.dim(last ? '   ' : '│  ')}`;
    for (const line of rest) lines.push(`${childPrefix}${line}`);
    lines.push(...renderTree(node.children, s, childPrefix));
  });
  return lines;
}

/** The decision line, then the trace tree when the response has one. */
export function explainDecision(d: DecisionJson, s: Styles): string {
  const lines = [decisionLine(d, s)];
  if (d.trace && d.trace.length > 0) lines.push(...renderTree(traceTree(d.trace, s), s));
  return lines.join('\n');
}
