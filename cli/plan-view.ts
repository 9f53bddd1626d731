/**
 * A model plan for people, as Terraform shows one: the changes grouped by kind, `+` create, `~`
 * update (with the fields that differ), `-/+` replace, `-` delete; entities kept although the
 * file leaves them out are counted, not listed (a file of roles alone would list every resource).
 */
import type { Styles } from './io.js';

export interface PlanChange {
  kind: string;
  action: string;
  key: string;
  fields: readonly string[];
  reason: string;
}

export type PlanCounts = Record<'create' | 'update' | 'replace' | 'delete' | 'keep', number>;

export function countChanges(changes: readonly PlanChange[]): PlanCounts {
  const counts: PlanCounts = { create: 0, update: 0, replace: 0, delete: 0, keep: 0 };
  for (const c of changes) if (c.action in counts) counts[c.action as keyof PlanCounts]++;
  return counts;
}

/** Whether applying the plan would write anything. */
export const writesSomething = (changes: readonly PlanChange[]) => changes.some((c) => c.action !== 'keep');

/** The plan's changes by kind, then a line of totals. */
export function renderPlan(changes: readonly PlanChange[], s: Styles): string {
  const marks: Record<string, string> = { create: s.green('+'), update: s.yellow('~'), replace: s.yellow('-/+'), delete: s.red('-') };
  const byKind = new Map<string, PlanChange[]>();
  for (const c of changes) {
    if (c.action === 'keep') continue;
    byKind.set(c.kind, [...(byKind.get(c.kind) ?? []), c]);
  }
  const lines: string[] = [];
  for (const [kind, list] of byKind) {
    lines.push(s.bold(kind));
    for (const c of list) {
      const fields = c.fields.length > 0 ? `: ${c.fields.join(', ')}` : '';
      const reason = c.reason && c.action !== 'create' && c.action !== 'update' ? s.dim(` (${c.reason})`) : '';
      lines.push(`  ${marks[c.action] ?? c.action} ${c.key}${fields}${reason}`);
    }
  }
  const n = countChanges(changes);
  const kept = n.keep > 0 ? `; ${n.keep} kept (not in the file: --prune deletes what the file's sections leave out, where the API can)` : '';
  if (lines.length === 0) return `No changes${kept}.`;
  lines.push(`${n.create} to create, ${n.update} to update, ${n.replace} to replace, ${n.delete} to delete${kept}.`);
  return lines.join('\n');
}
