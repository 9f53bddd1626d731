/** A plan (PlanTenantModel's changes) arranged for reading: by kind, with counts, as the command line shows it. */
import type { ModelChange } from '../../../../gen/authz/v1/tenant_model_service_pb.js';

export type PlanChange = Pick<ModelChange, 'kind' | 'action' | 'key' | 'fields' | 'reason' | 'path'>;

export const PLAN_ACTIONS = ['create', 'update', 'replace', 'delete', 'keep'] as const;
export type PlanAction = (typeof PLAN_ACTIONS)[number];
export type PlanCounts = Record<PlanAction, number>;

export interface PlanSummary {
  /** The changes that write something, by kind, kinds in the plan's order (the file's sections). */
  readonly groups: readonly { readonly kind: string; readonly changes: readonly PlanChange[] }[];
  readonly counts: PlanCounts;
  /** How many changes write something (all but keeps). */
  readonly writes: number;
}

/**
 * Keeps are counted, not listed: a file of roles alone keeps every resource, and a list of those
 * would hide the few changes that matter.
 */
export function summarisePlan(changes: readonly PlanChange[]): PlanSummary {
  const counts: PlanCounts = { create: 0, update: 0, replace: 0, delete: 0, keep: 0 };
  const byKind = new Map<string, PlanChange[]>();
  for (const c of changes) {
    if (c.action in counts) counts[c.action as PlanAction]++;
    if (c.action === 'keep') continue;
    const list = byKind.get(c.kind);
    if (list) list.push(c);
    else byKind.set(c.kind, [c]);
  }
  const groups = [...byKind].map(([kind, list]) => ({ kind, changes: list }));
  return { groups, counts, writes: changes.length - counts.keep };
}

/** `1 to create, 0 to update, 0 to replace, 0 to delete`. */
export function countsSentence(counts: PlanCounts): string {
  return `${counts.create} to create, ${counts.update} to update, ${counts.replace} to replace, ${counts.delete} to delete`;
}

/** `roles[2].permissions[0]` as its steps. */
export function pathSteps(path: string): (string | number)[] {
  const out: (string | number)[] = [];
  for (const m of path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) out.push(m[2] !== undefined ? Number(m[2]) : m[1]);
  return out;
}

/**
 * The value the file gives `field` of the entry at `path` (`resources[1]`, `displayName`), or
 * undefined when the entry or the field is not there (a field the file leaves at its default).
 * The plan names the fields that differ; the file says what they become.
 */
export function fileValue(document: unknown, path: string, field: string): unknown {
  if (path === '') return undefined;
  let node: unknown = document;
  for (const step of pathSteps(path)) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as Record<string | number, unknown>)[step];
  }
  if (typeof node !== 'object' || node === null || Array.isArray(node)) return undefined;
  return Object.hasOwn(node, field) ? (node as Record<string, unknown>)[field] : undefined;
}
