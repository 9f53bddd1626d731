/**
 * Tenants and queries for the PlanResources oracles (in memory and on PostgreSQL): the
 * differential generator's tenants with more resources, and queries over a type key.
 */
import type { EvaluateRequest } from '../evaluate.js';
import type { Resource, TenantSnapshot } from '../model.js';
import { chance, genRequest, int, pick, type Rng } from './generate.js';

/** More resources than the generator makes: copies under new ids, some with a fresh parent edge. */
export function withCopies(r: Rng, t: TenantSnapshot): TenantSnapshot {
  const resources = t.rows.resource ?? [];
  if (resources.length === 0 || !chance(r, 0.5)) return t;
  const copies: Resource[] = [];
  const n = int(r, 1, 12);
  for (let i = 0; i < n; i++) {
    const base = pick(r, resources);
    copies.push({ ...base, id: `${base.id}_${String.fromCharCode(97 + (i % 26))}${i}` });
  }
  const edges = copies
    .filter(() => chance(r, 0.4))
    .map((c, i) => ({ id: `resource_edge_copy_${i}`, parentResourceId: pick(r, resources).id, childResourceId: c.id, cascade: pick(r, ['inherit', 'none'] as const) }));
  return { ...t, rows: { ...t.rows, resource: [...copies, ...resources], resource_edge: [...(t.rows.resource_edge ?? []), ...edges] } };
}

export interface PlanCase {
  query: { actor: EvaluateRequest['actor']; scopeId: string; action: string; resourceType: string; context?: Record<string, unknown> };
  now: Date;
}

export function genPlanCase(r: Rng, t: TenantSnapshot): PlanCase {
  const c = genRequest(r, t);
  const byExternal = chance(r, 0.2);
  const actor: EvaluateRequest['actor'] = byExternal ? { externalId: `ext-${c.request.actor.subjectId}`, subjectType: c.request.actor.subjectType } : c.request.actor;
  return {
    query: { actor, scopeId: c.request.scopeId, action: c.request.action, resourceType: pick(r, ['doc', 'doc', 'folder', 'image', 'nope']), context: c.request.context },
    now: c.options.now,
  };
}
