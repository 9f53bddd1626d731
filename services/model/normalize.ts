/**
 * The normal form of a model, and its text: defaults left out, every list sorted by identity,
 * JSON values with sorted keys, times in UTC with milliseconds. Export writes exactly this form,
 * so the same state always gives the same bytes, and `normaliseModel(file)` is what an export
 * gives back after the file is applied.
 */
import { stringify } from 'yaml';
import type { JsonObject, JsonValue } from '../engine/model.js';
import { SECTIONS, type TenantModel } from './format.js';

/** A JSON value with every object's keys sorted (undefined stays undefined). */
export function canonicalJson(v: unknown): JsonValue | undefined {
  if (v === undefined) return undefined;
  if (Array.isArray(v)) return v.map((x) => canonicalJson(x) ?? null);
  if (v !== null && typeof v === 'object') {
    const out: JsonObject = {};
    for (const k of Object.keys(v).sort(compareText)) {
      const x = canonicalJson((v as Record<string, unknown>)[k]);
      if (x !== undefined) out[k] = x;
    }
    return out;
  }
  return v as JsonValue;
}

/** Free-form attributes (metadata, attributes): canonical, and an empty object is no object. */
export function attributesJson(v: unknown): JsonObject | undefined {
  const c = canonicalJson(v) as JsonObject | undefined;
  return c && Object.keys(c).length > 0 ? c : undefined;
}

/** Code-unit order: the same on every machine and locale. */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareParts(a: readonly string[], b: readonly string[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const c = compareText(a[i], b[i]);
    if (c !== 0) return c;
  }
  return a.length - b.length;
}

function sortBy<T>(items: readonly T[] | undefined, key: (item: T) => string[]): T[] | undefined {
  return items && [...items].sort((x, y) => compareParts(key(x), key(y)));
}

/** Drops the keys whose value is undefined, the default `fallback`, or an empty list. */
function compact<T extends object>(item: T, defaults: Partial<Record<keyof T, unknown>> = {}): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(item)) {
    if (v === undefined || (Array.isArray(v) && v.length === 0 && k !== 'actions')) continue;
    if (k in defaults && (defaults as Record<string, unknown>)[k] === v) continue;
    out[k] = v;
  }
  return out as T;
}

const time = (t: string | undefined) => {
  if (t === undefined) return undefined;
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? t : new Date(ms).toISOString();
};
const sorted = (xs: readonly string[] | undefined) => xs && [...xs].sort(compareText);
const targetOf = (t: Record<string, string | undefined>): [string, string] => (Object.entries(t).find(([, v]) => v !== undefined) as [string, string] | undefined) ?? ['', ''];
const S = '/';

/** The model in normal form: same meaning, one spelling (see the module comment). */
export function normaliseModel(m: TenantModel): TenantModel {
  const out: TenantModel = { apiVersion: m.apiVersion, kind: m.kind };
  const set = <K extends keyof TenantModel>(k: K, v: TenantModel[K] | undefined) => {
    if (v !== undefined) out[k] = v;
  };
  set('scopeTypes', sortBy(m.scopeTypes, (t) => [t.name])?.map((t) => compact({ name: t.name, description: t.description }, { description: '' })));
  set('scopes', sortBy(m.scopes, (s) => [s.path])?.map((s) => ({ path: s.path, type: s.type })));
  set('resourceTypes', sortBy(m.resourceTypes, (t) => [t.key])?.map((t) => compact({ key: t.key, name: t.name, scope: t.scope }, { name: t.key, scope: S })));
  set('resourceTypeHierarchy', sortBy(m.resourceTypeHierarchy, (e) => [e.parent, e.child])?.map((e) => ({ parent: e.parent, child: e.child })));
  set('permissions', sortBy(m.permissions, (p) => [p.scope ?? S, p.key])?.map((p) => compact(
    { key: p.key, scope: p.scope, name: p.name, description: p.description }, { scope: S, name: '', description: '' })));
  set('roles', sortBy(m.roles, (r) => [r.scope ?? S, r.key])?.map((r) => compact(
    { key: r.key, scope: r.scope, name: r.name, description: r.description, permissions: sorted(r.permissions) },
    { scope: S, name: r.key, description: '' })));
  set('scopeOverrides', sortBy(m.scopeOverrides, (o) => [o.scope ?? S, o.role, o.mode])?.map((o) => compact(
    { scope: o.scope, role: o.role, mode: o.mode, permissions: sorted(o.permissions) }, { scope: S })));
  set('tagGroups', sortBy(m.tagGroups, (g) => [g.key])?.map((g) => compact({
    key: g.key, scope: g.scope, name: g.name, description: g.description, maxAppliedPerTarget: g.maxAppliedPerTarget, locked: g.locked,
    tags: sortBy(g.tags, (t) => [t.identifier])?.map((t) => compact({ identifier: t.identifier, label: t.label, scope: t.scope }, { label: '', scope: g.scope ?? S })),
  }, { scope: S, name: g.key, description: '', maxAppliedPerTarget: 0, locked: false })));
  set('collections', sortBy(m.collections, (c) => [c.name])?.map((c) => compact({
    name: c.name, scope: c.scope, resourceType: c.resourceType, description: c.description, match: (canonicalJson(c.match) ?? {}) as JsonObject,
  }, { scope: S, description: '' })));
  set('policies', sortBy(m.policies, (p) => [p.name])?.map((p) => {
    const [k, v] = targetOf(p.target);
    return compact({
      name: p.name, scope: p.scope, target: { [k]: v }, actions: [...new Set(p.actions)].sort(compareText), effect: p.effect, priority: p.priority,
      subjectCondition: canonicalJson(p.subjectCondition) as JsonObject | undefined, contextCondition: canonicalJson(p.contextCondition) as JsonObject | undefined,
      validFrom: time(p.validFrom), validUntil: time(p.validUntil),
    }, { scope: S, priority: 0 });
  }));
  set('tagBindings', sortBy(m.tagBindings, (b) => [b.tag.group, b.tag.identifier, b.role, b.scope ?? S])?.map((b) => compact(
    { tag: { group: b.tag.group, identifier: b.tag.identifier }, role: b.role, scope: b.scope }, { scope: S })));
  set('subjects', sortBy(m.subjects, (s) => [s.externalId])?.map((s) => compact(
    { externalId: s.externalId, type: s.type, metadata: attributesJson(s.metadata) }, { type: 'user' })));
  set('memberships', sortBy(m.memberships, (ms) => [ms.subject, ms.scope ?? S])?.map((ms) => compact(
    { subject: ms.subject, scope: ms.scope, roles: sorted(ms.roles) }, { scope: S })));
  set('resources', sortBy(m.resources, (r) => [r.type, r.externalId])?.map((r) => compact({
    type: r.type, externalId: r.externalId, scope: r.scope, displayName: r.displayName, attributes: attributesJson(r.attributes),
  }, { scope: S, displayName: '' })));
  set('resourceHierarchy', sortBy(m.resourceHierarchy, (e) => [e.child])?.map((e) => compact(
    { parent: e.parent, child: e.child, cascade: e.cascade, relationshipType: e.relationshipType }, { cascade: 'none', relationshipType: '' })));
  set('scopeLinks', sortBy(m.scopeLinks, (l) => [l.resource, l.scope, l.linkType])?.map((l) => compact(
    { resource: l.resource, scope: l.scope, linkType: l.linkType, metadata: attributesJson(l.metadata) })));
  set('ownershipGrants', sortBy(m.ownershipGrants, (g) => [g.subject, g.resource, g.role])?.map((g) => ({ subject: g.subject, resource: g.resource, role: g.role })));
  set('tagAssignments', sortBy(m.tagAssignments, (a) => [a.tag.group, a.tag.identifier, ...targetOf(a.target)])?.map((a) => {
    const [k, v] = targetOf(a.target);
    return { tag: { group: a.tag.group, identifier: a.tag.identifier }, target: { [k]: v } };
  }));
  return out;
}

export type ModelFormat = 'yaml' | 'json';

/** The model's text in normal form: the same model always gives the same bytes. */
export function renderModel(m: TenantModel, format: ModelFormat = 'yaml'): string {
  const n = normaliseModel(m);
  if (format === 'json') return `${JSON.stringify(n, null, 2)}\n`;
  return stringify(n, { lineWidth: 0, minContentWidth: 0, aliasDuplicateObjects: false });
}

/** The sections a model holds (its managed kinds), in file order. */
export function sectionsOf(m: TenantModel): (typeof SECTIONS)[number][] {
  return SECTIONS.filter((s) => m[s] !== undefined);
}
