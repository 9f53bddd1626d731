/**
 * Match definitions for the reference evaluator: which are valid and what they match, written
 * from contract §5 and docs/decision-path.md ("Conditions and match definitions", "Bounded
 * cost") and docs/limits.md, sharing no code with the engine's match.ts. Regular expressions run
 * on RE2 (re2js), conditions on the reference's own JSON Logic (reference-logic.ts).
 */
import { RE2JS } from 're2js';
import type { JsonValue, Resource } from '../model.js';
import { refApplyLogic, refJsonLogicError, refTruthy } from './reference-logic.js';

/** `all`/`any`/`none` nesting, definitions in one match, regex program sizes (docs/limits.md). */
const MAX_DEPTH = 32;
const MAX_DEFINITIONS = 10_000;
const MAX_PROGRAM = 1_000;
const MAX_PROGRAM_TOTAL = 4_000;

const KEYS = ['fields', 'tags', 'patterns', 'time', 'condition', 'any', 'all', 'none'];
const OWN_FIELDS = ['id', 'externalResourceId', 'displayName', 'resourceTypeId', 'ownerScopeId', 'createdAt', 'createdBy'];
const FORBIDDEN = ['__proto__', 'constructor', 'prototype'];

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v) && [Object.prototype, null].includes(Object.getPrototypeOf(v));
const isScalar = (v: unknown) => v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
const isTime = (v: unknown) => typeof v === 'string' && !Number.isNaN(Date.parse(v));

/** A field a definition may name: an own field, or `attributes.` and a dot path of non-empty, allowed names. */
function fieldOk(name: unknown): boolean {
  if (typeof name !== 'string') return false;
  if (OWN_FIELDS.includes(name)) return true;
  if (!name.startsWith('attributes.')) return false;
  return name.slice('attributes.'.length).split('.').every((part) => part !== '' && !FORBIDDEN.includes(part));
}

/** What each operator of `fields` takes. */
function operandOk(op: string, x: unknown): boolean {
  switch (op) {
    case 'eq': case 'ne': case 'contains':
      return isScalar(x);
    case 'gt': case 'gte': case 'lt': case 'lte':
      return typeof x === 'string' || (typeof x === 'number' && Number.isFinite(x));
    case 'in': case 'nin':
      return Array.isArray(x) && x.every(isScalar);
    case 'startsWith': case 'endsWith': case 'regex':
      return typeof x === 'string';
    default:
      return false;
  }
}

/** Why `def` is refused, or null when it is a valid match definition. */
export function refMatchDefinitionError(def: unknown): string | null {
  let definitions = 0;
  let program = 0;
  const regexOk = (pattern: unknown): boolean => {
    if (typeof pattern !== 'string') return false;
    let size: number;
    try {
      size = RE2JS.compile(pattern).programSize();
    } catch {
      return false;
    }
    program += size;
    return size <= MAX_PROGRAM && program <= MAX_PROGRAM_TOTAL;
  };
  const check = (d: unknown, level: number): string | null => {
    if (++definitions > MAX_DEFINITIONS) return 'too many definitions';
    if (level > MAX_DEPTH) return 'too deep';
    if (!isObject(d)) return 'not an object';
    for (const [key, v] of Object.entries(d)) {
      if (!KEYS.includes(key)) return `unknown key ${key}`;
      if (key === 'condition') {
        if (refJsonLogicError(v) !== null) return 'invalid condition';
        continue;
      }
      if (key === 'any' || key === 'all' || key === 'none') {
        if (!Array.isArray(v)) return `${key} is not a list`;
        for (const sub of v) {
          const e = check(sub, level + 1);
          if (e) return e;
        }
        continue;
      }
      if (!isObject(v)) return `${key} is not an object`;
      if (key === 'fields') {
        for (const [field, spec] of Object.entries(v)) {
          if (!fieldOk(field)) return `bad field ${field}`;
          if (isObject(spec)) {
            const ops = Object.entries(spec);
            if (ops.length === 0) return 'no operator';
            for (const [op, x] of ops) {
              if (!operandOk(op, x)) return `bad operator or operand ${op}`;
              if (op === 'regex' && !regexOk(x)) return 'bad regex';
            }
          } else if (!isScalar(spec)) return 'a bare value must be a scalar';
        }
      } else if (key === 'tags') {
        for (const [group, want] of Object.entries(v)) {
          if (group === '') return 'empty tag group key';
          const list = typeof want === 'string' ? [want] : want;
          if (!Array.isArray(list) || list.length === 0 || !list.every((w) => typeof w === 'string')) return 'bad tag identifiers';
        }
      } else if (key === 'patterns') {
        for (const [field, pattern] of Object.entries(v)) {
          if (!fieldOk(field)) return `bad field ${field}`;
          if (!regexOk(pattern)) return 'bad regex';
        }
      } else if (key === 'time') {
        if (Object.keys(v).some((k) => !['field', 'before', 'after', 'between'].includes(k))) return 'unknown time key';
        if (!fieldOk(v.field)) return 'bad time field';
        if (v.before === undefined && v.after === undefined && v.between === undefined) return 'no bound';
        if (v.before !== undefined && !isTime(v.before)) return 'bad before';
        if (v.after !== undefined && !isTime(v.after)) return 'bad after';
        if (v.between !== undefined && !(Array.isArray(v.between) && v.between.length === 2 && v.between.every(isTime))) return 'bad between';
      }
    }
    return null;
  };
  return check(def, 1);
}

type Tri = 'match' | 'no_match' | 'error';

/** Match definition against a resource and its (group key, identifier) tags; an error does not match. */
export function refMatch(def: JsonValue, r: Resource, resourceTags: [string, string][]): boolean {
  return refMatchOutcome(def, r, resourceTags) === 'match';
}

/** Three-valued: an invalid definition, or one whose condition fails while running, is an `error`. */
export function refMatchOutcome(def: JsonValue, r: Resource, resourceTags: [string, string][]): Tri {
  if (refMatchDefinitionError(def) !== null) return 'error';
  return refMatchValid(def as Record<string, JsonValue>, r, resourceTags);
}

const tri = (b: boolean): Tri => (b ? 'match' : 'no_match');
/** Kleene AND / OR over outcomes. */
const and = (xs: Tri[]): Tri => (xs.includes('no_match') ? 'no_match' : xs.includes('error') ? 'error' : 'match');
const or = (xs: Tri[]): Tri => (xs.includes('match') ? 'match' : xs.includes('error') ? 'error' : 'no_match');
const not = (x: Tri): Tri => (x === 'error' ? x : x === 'match' ? 'no_match' : 'match');

/** An unanchored search; a value that is not a string does not match. */
function refRegex(pattern: string, v: unknown): Tri {
  if (typeof v !== 'string') return 'no_match';
  try {
    return tri(RE2JS.compile(pattern).test(v));
  } catch {
    return 'error';
  }
}

function field(r: Resource, name: string): unknown {
  if (OWN_FIELDS.includes(name)) return (r as unknown as Record<string, unknown>)[name];
  let v: unknown = r.attributes;
  for (const part of name.slice('attributes.'.length).split('.')) {
    if (v === null || typeof v !== 'object') return undefined;
    if (Array.isArray(v)) {
      const i = Number(part);
      v = String(i) === part ? v[i] : undefined;
    } else v = Object.hasOwn(v, part) ? (v as Record<string, unknown>)[part] : undefined;
  }
  return v;
}

function refOp(op: string, v: unknown, x: unknown): Tri {
  if (op === 'regex') return refRegex(x as string, v);
  const same = (a: unknown, b: unknown) => (b === null ? a === null || a === undefined : a === b);
  const comparable = (typeof v === 'number' && typeof x === 'number') || (typeof v === 'string' && typeof x === 'string');
  switch (op) {
    case 'eq': return tri(same(v, x));
    case 'ne': return tri(!same(v, x));
    case 'gt': return tri(comparable && (v as number) > (x as number));
    case 'gte': return tri(comparable && (v as number) >= (x as number));
    case 'lt': return tri(comparable && (v as number) < (x as number));
    case 'lte': return tri(comparable && (v as number) <= (x as number));
    case 'in': return tri((x as unknown[]).some((e) => same(v, e)));
    case 'nin': return tri(!(x as unknown[]).some((e) => same(v, e)));
    case 'contains': return tri(typeof v === 'string' ? typeof x === 'string' && v.indexOf(x) >= 0 : Array.isArray(v) && v.indexOf(x) >= 0);
    case 'startsWith': return tri(typeof v === 'string' && v.startsWith(x as string));
    case 'endsWith': return tri(typeof v === 'string' && v.endsWith(x as string));
  }
  return 'error';
}

function refMatchValid(def: Record<string, JsonValue>, r: Resource, resourceTags: [string, string][]): Tri {
  const parts: Tri[] = [];
  if (def.fields) {
    for (const [name, spec] of Object.entries(def.fields as Record<string, JsonValue>)) {
      const v = field(r, name);
      const ops = isObject(spec) ? Object.entries(spec) : [['eq', spec] as const];
      for (const [op, x] of ops) parts.push(refOp(op, v, x));
    }
  }
  if (def.tags) {
    for (const [group, want] of Object.entries(def.tags as Record<string, JsonValue>)) {
      const wanted = Array.isArray(want) ? want : [want];
      parts.push(tri(resourceTags.some(([g, id]) => g === group && wanted.includes(id))));
    }
  }
  if (def.patterns) {
    for (const [name, re] of Object.entries(def.patterns as Record<string, JsonValue>)) parts.push(refRegex(re as string, field(r, name)));
  }
  if (def.time) {
    const t = def.time as { field: string; before?: string; after?: string; between?: [string, string] };
    const v = field(r, t.field);
    const at = typeof v === 'string' ? Date.parse(v) : NaN;
    parts.push(
      tri(
        !Number.isNaN(at) &&
          (t.before === undefined || at < Date.parse(t.before)) &&
          (t.after === undefined || at > Date.parse(t.after)) &&
          (t.between === undefined || (at >= Date.parse(t.between[0]) && at < Date.parse(t.between[1]))),
      ),
    );
  }
  if (def.condition !== undefined) {
    const data = {
      resource: {
        id: r.id,
        externalResourceId: r.externalResourceId,
        displayName: r.displayName ?? null,
        resourceTypeId: r.resourceTypeId,
        ownerScopeId: r.ownerScopeId,
        createdAt: r.createdAt,
        createdBy: r.createdBy,
        attributes: r.attributes ?? {},
      },
    };
    const out = refApplyLogic(def.condition, data);
    parts.push(out.ok ? tri(refTruthy(out.value)) : 'error');
  }
  const sub = (d: JsonValue) => refMatchValid(d as Record<string, JsonValue>, r, resourceTags);
  if (def.any) parts.push(or((def.any as JsonValue[]).map(sub)));
  if (def.all) parts.push(and((def.all as JsonValue[]).map(sub)));
  if (def.none) parts.push(not(or((def.none as JsonValue[]).map(sub))));
  return and(parts);
}
