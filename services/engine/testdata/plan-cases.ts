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

/** Values of every JSON type (and lookalikes) for attributes, so comparisons meet other types than their operand's. */
const ODD_VALUES: unknown[] = [
  '3', 2.5, 3, 3.0, -0, 1e21, true, false, null, [1], [3], { a: 1 }, '', 'gold', 'Gold', 'go', 'golden', 'gold\u00e9', '\u00e9', 'x', 'xy', 'yx', ['x', 'y'], [['x']], ['X'], ['x', null], { 0: 'x' }, 'e1', '\u{1F600}', '\uFFFD',
];

/** Some resources' attributes (and display names) replaced by values of other JSON types. */
export function withOddAttributes(r: Rng, t: TenantSnapshot): TenantSnapshot {
  if (!chance(r, 0.5)) return t;
  const resource = (t.rows.resource ?? []).map((x) => {
    if (!chance(r, 0.5)) return x;
    const attributes: Record<string, unknown> = { ...((x.attributes as Record<string, unknown> | null) ?? {}) };
    for (const k of ['size', 'tier', 'labels', 'nested']) if (chance(r, 0.4)) attributes[k] = k === 'nested' ? pick(r, [{ deep: pick(r, ODD_VALUES) }, pick(r, ODD_VALUES)]) : pick(r, ODD_VALUES);
    const displayName = chance(r, 0.3) ? pick(r, ['name1', 'e1', '', '1', 'x1', '\u{1F600}1']) : x.displayName;
    return { ...x, attributes, ...(displayName === undefined ? {} : { displayName }) } as Resource;
  });
  return { ...t, rows: { ...t.rows, resource } };
}
