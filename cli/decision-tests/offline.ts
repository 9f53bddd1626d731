/**
 * The offline target: the tenant index built straight from the model (no server, no database)
 * and the engine the control plane and the sidecar run, asked in this process.
 */
import { TenantIndex, effectivePermissions, evaluate, lookupResources, lookupSubjects, type Decision, type GateMode } from '../../services/engine/mod.js';
import { modelSnapshot, type CheckCase, type CheckedModel, type LookupCase, type PermissionsCase } from '../../services/model/mod.js';
import type { DecisionJson } from '../explain.js';
import type { DecisionTarget } from './run.js';

/** A scope the model does not have: the servers answer `not_found`, so does this target. */
class UnknownName extends Error {}

const key = (kind: string, ...identity: string[]) => `${kind} ${JSON.stringify(identity)}`;

/** How a trace names an entity of each kind, from its identity in the model. */
const NAMED: Record<string, (identity: string[]) => string> = {
  scope: (i) => i[0], subject: (i) => i[0], resource: (i) => i.join('/'), policy: (i) => i[0], collection: (i) => i[0],
  role: (i) => (i[0] === '/' ? i[1] : `${i[1]}@${i[0]}`),
};

/** `type/external id` split at the first `/`. */
export function splitResourceRef(ref: string): { resourceType: string; externalResourceId: string } {
  const at = ref.indexOf('/');
  return { resourceType: ref.slice(0, at), externalResourceId: ref.slice(at + 1) };
}

/** The engine's decision as the REST surface writes it (what the servers' answers are compared in). */
function decisionJson(d: Decision): DecisionJson {
  return {
    allowed: d.allowed,
    reason: d.reason,
    revision: d.revision,
    decidedByPolicy: d.decidedByPolicy,
    evaluatedPolicy: d.evaluatedPolicy ? { id: d.evaluatedPolicy.id, effect: d.evaluatedPolicy.effect, priority: d.evaluatedPolicy.priority ?? 0 } : null,
    trace: (d.trace ?? []).map((t) => ({ step: t.leg, result: t.outcome, message: t.message, ...(t.detail ? { details: JSON.parse(JSON.stringify(t.detail)) } : {}) })),
  };
}

/**
 * The offline target of a checked model. `now` is the clock of every decision (the real clock
 * when absent); the reachability gate is `off`, the control plane's default.
 */
export function offlineTarget(model: CheckedModel, now: Date | undefined, gate: GateMode = 'off'): DecisionTarget {
  const built = modelSnapshot(model.entities!);
  const index = TenantIndex.fromSnapshot(built.snapshot);
  const policyNames = new Map<string, string>();
  const names = new Map<string, string>();
  for (const [k, id] of built.ids) {
    const space = k.indexOf(' ');
    const kind = k.slice(0, space);
    const identity = JSON.parse(k.slice(space + 1)) as string[];
    if (kind === 'policy') policyNames.set(id, identity[0]);
    const name = NAMED[kind]?.(identity);
    if (name !== undefined) names.set(id, name);
  }
  const scopeId = (path: string) => {
    const id = built.ids.get(key('scope', path));
    if (id === undefined) throw new UnknownName(`scope ${path} is not in the model`);
    return id;
  };
  return {
    kind: 'offline',
    where: 'the engine, from the model file',
    async decide(c: CheckCase) {
      const d = evaluate(index, {
        // By external id, as the servers are asked: the same lookup, the same answers.
        actor: { externalId: c.subject, ...(c.subjectType ? { subjectType: c.subjectType } : {}) },
        scopeId: scopeId(c.scope),
        action: c.action,
        ...(c.resource ? { resource: splitResourceRef(c.resource) } : {}),
        ...(c.context ? { context: c.context } : {}),
        explain: true,
      }, { now: now ?? new Date(), gate });
      return decisionJson(d);
    },
    policyName: (id) => policyNames.get(id),
    nameOf: (id) => names.get(id),
    async permissions(c: PermissionsCase) {
      let resourceId: string | undefined;
      if (c.resource) {
        const r = splitResourceRef(c.resource);
        resourceId = built.ids.get(key('resource', r.resourceType, r.externalResourceId));
        if (resourceId === undefined) throw new UnknownName(`resource ${c.resource} is not in the model`);
      }
      const held = effectivePermissions(index, { subjectExternalId: c.subject, scopeId: scopeId(c.scope), ...(resourceId ? { resourceId } : {}) });
      return held.map((p) => `${p.resourceType}:${p.action}:${p.resourcePattern === resourceId ? c.resource : p.resourcePattern}`);
    },
    async lookup(c: LookupCase) {
      const options = { now: now ?? new Date(), gate };
      const out: string[] = [];
      // Every page, as the servers are paged (a page may end short at its visit budget).
      let after: string | undefined;
      if ('resources' in c) {
        const q = c.resources;
        do {
          const page = lookupResources(index, {
            actor: { externalId: q.subject, ...(q.subjectType ? { subjectType: q.subjectType } : {}) },
            scopeId: scopeId(q.scope), action: q.action, resourceType: q.resourceType, context: q.context, pageSize: 1000, after,
          }, options);
          out.push(...page.resources.map((r) => `${index.resourceType(r.resourceTypeId)?.key ?? ''}/${r.externalResourceId}`));
          after = page.last;
        } while (after !== undefined);
      } else {
        const q = c.subjects;
        do {
          const page = lookupSubjects(index, {
            scopeId: scopeId(q.scope), action: q.action, subjectType: q.subjectType, context: q.context, pageSize: 1000, after,
            ...(q.resource ? { resource: splitResourceRef(q.resource) } : {}),
          }, options);
          out.push(...page.subjects.map((x) => x.subject.externalId));
          after = page.last;
        } while (after !== undefined);
      }
      return out;
    },
  };
}
