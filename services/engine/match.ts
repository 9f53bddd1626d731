/**
 * Resource collection match definitions: validation for the control plane and compiled
 * matchers for the engine.
 *
 * A definition is an object whose present keys must all hold (AND):
 * - `fields`: `{<field>: <scalar> | {<op>: <operand>, ...}}`; a bare scalar means `eq`; several
 *   operators on one field must all hold. Operators: `eq`, `ne`, `gt`, `gte`, `lt`, `lte`, `in`,
 *   `nin`, `contains`, `startsWith`, `endsWith`, `regex`.
 * - `tags`: `{<tag group key>: <identifier> | [<identifier>, ...]}`: for every group key the
 *   resource carries a tag of a group with that key whose identifier is one of those given.
 * - `patterns`: `{<field>: <regex>}`: the field is a string in which the regex finds a match
 *   (unanchored, like `regex`; anchor with `^`/`$`).
 * - `time`: `{field, before?, after?, between?: [from, until)}`: the field parses as a timestamp
 *   that is `< before`, `> after` (both exclusive) and `from <= t < until`, for those given.
 * - `condition`: JSON Logic against `{resource: {id, externalResourceId, displayName,
 *   resourceTypeId, ownerScopeId, createdAt, createdBy, attributes}}`.
 * - `any` (OR), `all` (AND), `none` (NOT OR) of nested definitions; `any: []` never matches,
 *   `all: []` and `none: []` always do. Nesting is at most {@link MATCH_MAX_DEPTH} deep.
 *
 * Fields are the resource's own fields (`id`, `externalResourceId`, `displayName`,
 * `resourceTypeId`, `ownerScopeId`, `createdAt`, `createdBy`) or `attributes.<dot.path>`.
 *
 * Operator semantics (fixed here, the spec leaves them open): `eq`/`ne` use strict equality,
 * except that `eq: null` also matches an absent field; `ne` and `nin` match absent fields (as in
 * MongoDB). `gt`..`lte` compare two numbers or two strings (code-unit order), anything else is
 * false. `in`/`nin` take an array of scalars. `contains` is substring on strings and element
 * membership on arrays. `startsWith`/`endsWith` need strings. `regex` and `patterns` use RE2
 * syntax on a linear-time engine.
 *
 * Evaluation is tri-state ({@link matchOutcome}): `match`, `no_match` or `error`. A definition
 * that cannot be evaluated (invalid, an invalid stored regex, a `condition` that errors or hits
 * a run-time limit) is an `error`, which the engine keeps apart from `no_match` so that deny
 * policies of the collection still apply (fail closed, see evaluate.ts). A field that is merely
 * absent is `no_match`, never an error. `any`/`all`/`none` combine outcomes in three-valued
 * (Kleene) logic: an error decides only when the other parts cannot (`any` with one matching
 * part matches, `all` with one failing part does not match, `none` negates). The boolean
 * {@link compileMatch} / {@link matchesDefinition} count an error as not matching.
 */
import { RE2JS } from 're2js';
import { conditionOutcome, getPath, validateJsonLogic } from './jsonlogic.js';
import type { Resource } from './model.js';

export const MATCH_MAX_DEPTH = 32;
/** Most nested definitions one definition may hold (bounds validation and compilation work). */
export const MATCH_MAX_DEFINITIONS = 10_000;

const TOP_KEYS = new Set(['fields', 'tags', 'patterns', 'time', 'condition', 'any', 'all', 'none']);
const OPERATORS = new Set([
  'eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'contains', 'startsWith', 'endsWith', 'regex',
]);
const OWN_FIELDS = new Set([
  'id', 'externalResourceId', 'displayName', 'resourceTypeId', 'ownerScopeId', 'createdAt', 'createdBy',
]);
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** Tags of the resource being matched: tag group key → identifiers. */
export type ResourceTags = ReadonlyMap<string, ReadonlySet<string>>;

/** What a matcher reads. `tags` is called at most once per match and only when needed. */
export interface MatchSubject {
  resource: Resource;
  tags: () => ResourceTags;
}

export type Matcher = (s: MatchSubject) => boolean;

/** Outcome of a definition against one resource; `error` when it could not be evaluated. */
export type MatchOutcome = 'match' | 'no_match' | 'error';
/** A compiled definition reporting {@link MatchOutcome}. */
export type OutcomeMatcher = (s: MatchSubject) => MatchOutcome;

// --- regular expressions --------------------------------------------------------------------

const REGEX_CACHE_LIMIT = 10_000;
const regexCache = new Map<string, RE2JS | null>();

/** Compiles once and caches; null when the pattern is not valid RE2 syntax. */
export function compileRegex(pattern: string): RE2JS | null {
  let re = regexCache.get(pattern);
  if (re === undefined) {
    try {
      re = RE2JS.compile(pattern);
    } catch {
      re = null;
    }
    // Bounded: patterns come from tenant data, which can be large.
    if (regexCache.size >= REGEX_CACHE_LIMIT) regexCache.clear();
    regexCache.set(pattern, re);
  }
  return re;
}

/** A non-string value does not match; an invalid pattern or a failing engine is an error. */
function regexFinds(pattern: unknown, value: unknown): MatchOutcome {
  if (typeof pattern !== 'string') return 'error';
  const re = compileRegex(pattern);
  if (!re) return 'error';
  if (typeof value !== 'string') return 'no_match';
  try {
    return re.test(value) ? 'match' : 'no_match';
  } catch {
    return 'error';
  }
}

// --- fields ---------------------------------------------------------------------------------

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

function isScalar(v: unknown): v is string | number | boolean | null {
  return v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
}

function fieldError(name: unknown): string | null {
  if (typeof name !== 'string' || name === '') return 'field name must be a non-empty string';
  if (OWN_FIELDS.has(name)) return null;
  if (name.startsWith('attributes.')) {
    const parts = name.slice('attributes.'.length).split('.');
    if (parts.some((p) => p === '')) return `invalid attribute path "${name}"`;
    const bad = parts.find((p) => FORBIDDEN_KEYS.has(p));
    if (bad) return `attribute path reads forbidden property "${bad}"`;
    return null;
  }
  return `unknown field "${name}"`;
}

/** The value of a field of the resource (own field or `attributes.<path>`); undefined when absent. */
export function resourceField(resource: Resource, name: string): unknown {
  if (OWN_FIELDS.has(name)) {
    const v = (resource as unknown as Record<string, unknown>)[name];
    return v;
  }
  if (name.startsWith('attributes.')) return getPath(resource.attributes ?? undefined, name.slice('attributes.'.length));
  return undefined;
}

function eq(v: unknown, x: unknown): boolean {
  if (x === null) return v === null || v === undefined;
  return v === x;
}

function ordered(v: unknown, x: unknown): -1 | 0 | 1 | null {
  if ((typeof v === 'number' && typeof x === 'number') || (typeof v === 'string' && typeof x === 'string')) {
    return v < x ? -1 : v > x ? 1 : 0;
  }
  return null;
}

function applyOperator(op: string, v: unknown, x: unknown): boolean {
  switch (op) {
    case 'eq':
      return eq(v, x);
    case 'ne':
      return !eq(v, x);
    case 'gt': {
      const c = ordered(v, x);
      return c !== null && c > 0;
    }
    case 'gte': {
      const c = ordered(v, x);
      return c !== null && c >= 0;
    }
    case 'lt': {
      const c = ordered(v, x);
      return c !== null && c < 0;
    }
    case 'lte': {
      const c = ordered(v, x);
      return c !== null && c <= 0;
    }
    case 'in':
      return Array.isArray(x) && x.some((e) => eq(v, e));
    case 'nin':
      return Array.isArray(x) && !x.some((e) => eq(v, e));
    case 'contains':
      if (typeof v === 'string') return typeof x === 'string' && v.includes(x);
      if (Array.isArray(v)) return v.some((e) => e === x);
      return false;
    case 'startsWith':
      return typeof v === 'string' && typeof x === 'string' && v.startsWith(x);
    case 'endsWith':
      return typeof v === 'string' && typeof x === 'string' && v.endsWith(x);
    case 'regex':
      return regexFinds(x, v) === 'match';
    default:
      return false;
  }
}

function operandError(op: string, x: unknown): string | null {
  switch (op) {
    case 'eq':
    case 'ne':
    case 'contains':
      return isScalar(x) ? null : 'operand must be a string, number, boolean or null';
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      return typeof x === 'string' || (typeof x === 'number' && Number.isFinite(x)) ? null : 'operand must be a number or a string';
    case 'in':
    case 'nin':
      return Array.isArray(x) && x.every(isScalar) ? null : 'operand must be an array of scalars';
    case 'startsWith':
    case 'endsWith':
      return typeof x === 'string' ? null : 'operand must be a string';
    case 'regex':
      return regexError(x);
    default:
      return 'unknown operator';
  }
}

function regexError(x: unknown): string | null {
  if (typeof x !== 'string') return 'regular expression must be a string';
  try {
    RE2JS.compile(x);
    return null;
  } catch (e) {
    return `invalid regular expression: ${e instanceof Error ? e.message : 'syntax error'}`;
  }
}

function timeOf(v: unknown): number {
  return typeof v === 'string' ? Date.parse(v) : NaN;
}

// --- validation -----------------------------------------------------------------------------

/**
 * Returns a message naming the first offending path (e.g. `match.fields.size.gtx: unknown
 * operator`), or null when the definition is valid.
 */
export function validateMatchDefinition(def: unknown, path = 'match'): string | null {
  return validateAt(def, path, 1, { defs: MATCH_MAX_DEFINITIONS });
}

function validateAt(def: unknown, path: string, depth: number, budget: { defs: number }): string | null {
  if (--budget.defs < 0) return `${path}: more than ${MATCH_MAX_DEFINITIONS} nested definitions`;
  if (depth > MATCH_MAX_DEPTH) return `${path}: nested deeper than ${MATCH_MAX_DEPTH}`;
  if (!isPlainObject(def)) return `${path}: must be an object`;
  for (const key of Object.keys(def)) {
    if (!TOP_KEYS.has(key)) return `${path}.${key}: unknown key`;
    const v = def[key];
    const p = `${path}.${key}`;
    switch (key) {
      case 'fields': {
        if (!isPlainObject(v)) return `${p}: must be an object`;
        for (const [field, spec] of Object.entries(v)) {
          // Operators first: the most specific path wins the message.
          if (isPlainObject(spec)) {
            const ops = Object.keys(spec);
            if (ops.length === 0) return `${p}.${field}: no operator`;
            for (const op of ops) {
              if (!OPERATORS.has(op)) return `${p}.${field}.${op}: unknown operator`;
              const oe = operandError(op, spec[op]);
              if (oe) return `${p}.${field}.${op}: ${oe}`;
            }
          } else if (!isScalar(spec)) {
            return `${p}.${field}: a bare value must be a string, number, boolean or null (use "in" for lists)`;
          }
          const fe = fieldError(field);
          if (fe) return `${p}.${field}: ${fe}`;
        }
        break;
      }
      case 'tags': {
        if (!isPlainObject(v)) return `${p}: must be an object`;
        for (const [group, want] of Object.entries(v)) {
          if (group === '') return `${p}: tag group key must not be empty`;
          if (typeof want === 'string') continue;
          if (!Array.isArray(want) || want.length === 0 || !want.every((w) => typeof w === 'string')) {
            return `${p}.${group}: must be an identifier or a non-empty array of identifiers`;
          }
        }
        break;
      }
      case 'patterns': {
        if (!isPlainObject(v)) return `${p}: must be an object`;
        for (const [field, re] of Object.entries(v)) {
          const fe = fieldError(field);
          if (fe) return `${p}.${field}: ${fe}`;
          const re2 = regexError(re);
          if (re2) return `${p}.${field}: ${re2}`;
        }
        break;
      }
      case 'time': {
        if (!isPlainObject(v)) return `${p}: must be an object`;
        for (const k of Object.keys(v)) {
          if (!['field', 'before', 'after', 'between'].includes(k)) return `${p}.${k}: unknown key`;
        }
        const fe = fieldError(v.field);
        if (fe) return `${p}.field: ${fe}`;
        if (v.before === undefined && v.after === undefined && v.between === undefined) {
          return `${p}: needs before, after or between`;
        }
        for (const k of ['before', 'after'] as const) {
          if (v[k] !== undefined && Number.isNaN(timeOf(v[k]))) return `${p}.${k}: must be an ISO-8601 timestamp`;
        }
        if (v.between !== undefined) {
          const b = v.between;
          if (!Array.isArray(b) || b.length !== 2 || b.some((x) => Number.isNaN(timeOf(x)))) {
            return `${p}.between: must be [from, until) as two ISO-8601 timestamps`;
          }
        }
        break;
      }
      case 'condition': {
        const le = validateJsonLogic(v);
        if (le) return `${p}: ${le}`;
        break;
      }
      case 'any':
      case 'all':
      case 'none': {
        if (!Array.isArray(v)) return `${p}: must be an array of match definitions`;
        for (let i = 0; i < v.length; i++) {
          const e = validateAt(v[i], `${p}[${i}]`, depth + 1, budget);
          if (e) return e;
        }
        break;
      }
    }
  }
  return null;
}

// --- compilation ----------------------------------------------------------------------------

const NEVER: Matcher = () => false;
const ERROR: OutcomeMatcher = () => 'error';
const compiledDefs = new WeakMap<object, Matcher>();
const compiledOutcomes = new WeakMap<object, OutcomeMatcher>();

const outcomeOf = (b: boolean): MatchOutcome => (b ? 'match' : 'no_match');

/**
 * Compiles a definition into a tri-state matcher, once per definition object (definitions are
 * immutable once indexed). An invalid definition compiles to a matcher that always errors.
 * The matcher may throw; {@link matchOutcome} turns that into `error`.
 */
export function compileMatchOutcome(def: unknown): OutcomeMatcher {
  if (def === null || typeof def !== 'object') return ERROR;
  let m = compiledOutcomes.get(def);
  if (!m) {
    m = validateMatchDefinition(def) === null ? build(def as Record<string, unknown>) : ERROR;
    compiledOutcomes.set(def, m);
  }
  return m;
}

/**
 * Compiles a definition into a boolean matcher, once per definition object. A definition that
 * errors (invalid, or failing at evaluation) does not match: callers that must fail closed use
 * {@link matchOutcome} instead.
 */
export function compileMatch(def: unknown): Matcher {
  if (def === null || typeof def !== 'object') return NEVER;
  let m = compiledDefs.get(def);
  if (!m) {
    const outcome = compileMatchOutcome(def);
    m = outcome === ERROR ? NEVER : (s) => outcome(s) === 'match';
    compiledDefs.set(def, m);
  }
  return m;
}

/** How `def` comes out against the resource; never throws. */
export function matchOutcome(def: unknown, subject: MatchSubject): MatchOutcome {
  try {
    return compileMatchOutcome(def)(subject);
  } catch {
    return 'error';
  }
}

/** True when `def` matches the resource (an error counts as not matching). */
export function matchesDefinition(def: unknown, subject: MatchSubject): boolean {
  return matchOutcome(def, subject) === 'match';
}

/** Kleene AND: no_match if any part does not match, else error if any errors, else match. */
function allOf(parts: readonly OutcomeMatcher[], s: MatchSubject): MatchOutcome {
  let out: MatchOutcome = 'match';
  for (const m of parts) {
    const o = m(s);
    if (o === 'no_match') return o;
    if (o === 'error') out = o;
  }
  return out;
}

/** Kleene OR: match if any part matches, else error if any errors, else no_match. */
function anyOf(parts: readonly OutcomeMatcher[], s: MatchSubject): MatchOutcome {
  let out: MatchOutcome = 'no_match';
  for (const m of parts) {
    const o = m(s);
    if (o === 'match') return o;
    if (o === 'error') out = o;
  }
  return out;
}

/** Builds from a validated definition. */
function build(def: Record<string, unknown>): OutcomeMatcher {
  const parts: OutcomeMatcher[] = [];
  for (const [key, v] of Object.entries(def)) {
    switch (key) {
      case 'fields':
        for (const [field, spec] of Object.entries(v as Record<string, unknown>)) {
          const ops: [string, unknown][] = isPlainObject(spec) ? Object.entries(spec) : [['eq', spec]];
          for (const [op, x] of ops) {
            if (op === 'regex') {
              compileRegex(x as string); // warm the cache
              parts.push((s) => regexFinds(x, resourceField(s.resource, field)));
            } else parts.push((s) => outcomeOf(applyOperator(op, resourceField(s.resource, field), x)));
          }
        }
        break;
      case 'tags':
        for (const [group, want] of Object.entries(v as Record<string, unknown>)) {
          const wanted = typeof want === 'string' ? [want] : (want as string[]);
          parts.push((s) => {
            const have = s.tags().get(group);
            return outcomeOf(have !== undefined && wanted.some((w) => have.has(w)));
          });
        }
        break;
      case 'patterns':
        for (const [field, re] of Object.entries(v as Record<string, unknown>)) {
          compileRegex(re as string);
          parts.push((s) => regexFinds(re, resourceField(s.resource, field)));
        }
        break;
      case 'time': {
        const t = v as { field: string; before?: string; after?: string; between?: [string, string] };
        const before = t.before !== undefined ? timeOf(t.before) : undefined;
        const after = t.after !== undefined ? timeOf(t.after) : undefined;
        const between = t.between ? [timeOf(t.between[0]), timeOf(t.between[1])] : undefined;
        parts.push((s) => {
          const at = timeOf(resourceField(s.resource, t.field));
          if (Number.isNaN(at)) return 'no_match';
          if (before !== undefined && !(at < before)) return 'no_match';
          if (after !== undefined && !(at > after)) return 'no_match';
          if (between !== undefined && !(at >= between[0] && at < between[1])) return 'no_match';
          return 'match';
        });
        break;
      }
      case 'condition':
        parts.push((s) => {
          const o = conditionOutcome(v, conditionData(s.resource));
          return o === 'pass' ? 'match' : o === 'fail' ? 'no_match' : 'error';
        });
        break;
      case 'any': {
        const subs = (v as unknown[]).map((d) => build(d as Record<string, unknown>));
        parts.push((s) => anyOf(subs, s));
        break;
      }
      case 'all': {
        const subs = (v as unknown[]).map((d) => build(d as Record<string, unknown>));
        parts.push((s) => allOf(subs, s));
        break;
      }
      case 'none': {
        const subs = (v as unknown[]).map((d) => build(d as Record<string, unknown>));
        parts.push((s) => {
          const o = anyOf(subs, s);
          return o === 'match' ? 'no_match' : o === 'no_match' ? 'match' : 'error';
        });
        break;
      }
    }
  }
  if (parts.length === 1) return parts[0];
  return (s) => allOf(parts, s);
}

/** The data a `condition` reads. */
export function conditionData(r: Resource): { resource: Record<string, unknown> } {
  return {
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
}
