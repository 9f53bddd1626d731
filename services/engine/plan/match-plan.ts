/**
 * A collection's match definition as two conditions on a resource: `match` (the definition
 * matches) and `error` (it errors), exactly as match.ts's tri-state outcome, when the
 * decision's operation budget cannot run out (compile.ts checks that bound first).
 *
 * - `fields` operators become comparisons, except `regex` (RE2 and PostgreSQL's regular
 *   expressions differ), operators on `createdAt` other than through `time`, string orderings
 *   whose operand holds a character at or above U+D800 (JavaScript orders UTF-16 code units,
 *   PostgreSQL code points) and attribute paths PostgreSQL reads otherwise (`-1`, `01`): residual.
 * - `tags` become the ids of the resources carrying such a tag (the caller's `tagged`).
 * - `patterns`: residual. `time` on `createdAt`: instant comparisons; on another field
 *   (JavaScript's `Date.parse` reads many formats): residual.
 * - `condition`: a constant when the rule reads no data (no `var`, `missing`, `missing_some`),
 *   else residual (for its errors too).
 * - `any`, `all`, `none`: Kleene logic, as the engine combines outcomes.
 * An invalid definition errors against every resource.
 */
import { DecisionBudget } from '../budget.js';
import { isPlainObject } from '../json.js';
import { applyJsonLogic, logicTruthy } from '../jsonlogic.js';
import { validateMatchDefinition } from '../match.js';
import { FALSE, TRUE, all, any, compare, not, residual, type PlanField, type PlanNode, type PlanOperator, type PlanScalar } from './tree.js';

export interface MatchPlan {
  match: PlanNode;
  error: PlanNode;
}

export interface MatchPlanContext {
  collectionId: string;
  /** The resources (of the plan's type) carrying, for tag group key `group`, one of `wanted`. */
  tagged: (group: string, wanted: readonly string[]) => PlanNode;
  /** How `resourceTypeId` compares (a type id per resource): the caller turns it into ids. */
  typeIdHolds: (holds: (typeId: string) => boolean) => PlanNode;
}

const OWN_TEXT = new Set(['id', 'externalResourceId', 'displayName', 'ownerScopeId', 'createdBy']);

const ofBool = (b: boolean): MatchPlan => ({ match: b ? TRUE : FALSE, error: FALSE });
const unknown = (reason: string, c: MatchPlanContext): MatchPlan => {
  const r = residual(reason, { collectionId: c.collectionId });
  return { match: r, error: r };
};
/** A part that matches or not, never errors, but cannot be a condition on the row. */
const unknownMatch = (reason: string, c: MatchPlanContext): MatchPlan => ({ match: residual(reason, { collectionId: c.collectionId }), error: FALSE });

export function planMatch(def: unknown, c: MatchPlanContext): MatchPlan {
  if (validateMatchDefinition(def) !== null) return { match: FALSE, error: TRUE };
  return planDef(def as Record<string, unknown>, c);
}

function planDef(def: Record<string, unknown>, c: MatchPlanContext): MatchPlan {
  const parts: MatchPlan[] = [];
  for (const [key, v] of Object.entries(def)) {
    switch (key) {
      case 'fields':
        for (const [field, spec] of Object.entries(v as Record<string, unknown>)) {
          const ops: [string, unknown][] = isPlainObject(spec) ? Object.entries(spec) : [['eq', spec]];
          for (const [op, x] of ops) parts.push(op === 'regex' ? unknownMatch(`regular expression on ${field}`, c) : planField(field, op, x, c));
        }
        break;
      case 'tags':
        for (const [group, want] of Object.entries(v as Record<string, unknown>)) {
          parts.push({ match: c.tagged(group, typeof want === 'string' ? [want] : (want as string[])), error: FALSE });
        }
        break;
      case 'patterns':
        for (const field of Object.keys(v as Record<string, unknown>)) parts.push(unknownMatch(`regular expression on ${field}`, c));
        break;
      case 'time':
        parts.push(planTime(v as { field: string; before?: string; after?: string; between?: [string, string] }, c));
        break;
      case 'condition':
        parts.push(planCondition(v, c));
        break;
      case 'any':
        parts.push(anyOf((v as Record<string, unknown>[]).map((d) => planDef(d, c))));
        break;
      case 'all':
        parts.push(allOf((v as Record<string, unknown>[]).map((d) => planDef(d, c))));
        break;
      case 'none': {
        const o = anyOf((v as Record<string, unknown>[]).map((d) => planDef(d, c)));
        parts.push({ match: all(not(o.match), not(o.error)), error: o.error });
        break;
      }
    }
  }
  return parts.length === 1 ? parts[0] : allOf(parts);
}

/** Kleene AND: no part fails to match; it errors when none fails and one errors. */
function allOf(parts: MatchPlan[]): MatchPlan {
  const noMatch = parts.map((p) => all(not(p.match), not(p.error)));
  return { match: all(...parts.map((p) => p.match)), error: all(...noMatch.map(not), any(...parts.map((p) => p.error))) };
}

/** Kleene OR: a part matches; it errors when none matches and one errors. */
function anyOf(parts: MatchPlan[]): MatchPlan {
  const match = any(...parts.map((p) => p.match));
  return { match, error: all(not(match), any(...parts.map((p) => p.error))) };
}

/** A segment of an attribute path that PostgreSQL reads as an array index where the engine does not (`-1`, `01`, ` 1`), or too long to be one. */
function ambiguousSegment(s: string): boolean {
  if (/^(0|[1-9][0-9]{0,8})$/.test(s)) return false;
  return /^\s*[+-]?\s*[0-9]/.test(s) || /^[0-9]+$/.test(s);
}

/** No UTF-16 code unit from U+D800 up: code-unit and code-point order agree against it. */
const orderSafe = (x: string): boolean => !/[\uD800-\uFFFF]/.test(x);

function planField(field: string, op: string, x: unknown, c: MatchPlanContext): MatchPlan {
  if (field === 'resourceTypeId') return { match: c.typeIdHolds((t) => holds(op, t, x)), error: FALSE };
  if (field === 'createdAt') return unknownMatch(`operator ${op} on createdAt`, c);
  let f: PlanField;
  if (OWN_TEXT.has(field)) f = field as PlanField;
  else {
    // validateMatchDefinition allows only own fields and attributes paths.
    if (field.slice('attributes.'.length).split('.').some(ambiguousSegment)) return unknownMatch(`attribute path ${field}`, c);
    f = field as PlanField;
  }
  const value = x as PlanScalar | PlanScalar[];
  switch (op) {
    case 'eq':
      return { match: compare(f, 'eq', value), error: FALSE };
    case 'ne':
      return { match: not(compare(f, 'eq', value)), error: FALSE };
    case 'in':
      return { match: (value as PlanScalar[]).length === 0 ? FALSE : compare(f, 'in', value), error: FALSE };
    case 'nin':
      return { match: (value as PlanScalar[]).length === 0 ? TRUE : not(compare(f, 'in', value)), error: FALSE };
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      if (typeof x === 'string' && !orderSafe(x)) return unknownMatch(`string order against ${JSON.stringify(x)}`, c);
      return { match: compare(f, op as PlanOperator, value), error: FALSE };
    case 'contains':
    case 'startsWith':
    case 'endsWith':
      return { match: compare(f, op as PlanOperator, value), error: FALSE };
    default:
      return unknown(`operator ${op}`, c);
  }
}

/** The engine's operator on a value known at plan time. */
function holds(op: string, v: unknown, x: unknown): boolean {
  const eq = (a: unknown, b: unknown) => (b === null ? a === null || a === undefined : a === b);
  const ord = (a: unknown, b: unknown) =>
    (typeof a === 'number' && typeof b === 'number') || (typeof a === 'string' && typeof b === 'string') ? (a < b ? -1 : a > b ? 1 : 0) : null;
  switch (op) {
    case 'eq': return eq(v, x);
    case 'ne': return !eq(v, x);
    case 'in': return Array.isArray(x) && x.some((e) => eq(v, e));
    case 'nin': return Array.isArray(x) && !x.some((e) => eq(v, e));
    case 'gt': { const o = ord(v, x); return o !== null && o > 0; }
    case 'gte': { const o = ord(v, x); return o !== null && o >= 0; }
    case 'lt': { const o = ord(v, x); return o !== null && o < 0; }
    case 'lte': { const o = ord(v, x); return o !== null && o <= 0; }
    case 'contains': return typeof v === 'string' && typeof x === 'string' && v.includes(x);
    case 'startsWith': return typeof v === 'string' && typeof x === 'string' && v.startsWith(x);
    case 'endsWith': return typeof v === 'string' && typeof x === 'string' && v.endsWith(x);
    default: return false;
  }
}

const MIN_ISO = Date.parse('0000-01-01T00:00:00.000Z');
const MAX_ISO = Date.parse('9999-12-31T23:59:59.999Z');

function planTime(t: { field: string; before?: string; after?: string; between?: [string, string] }, c: MatchPlanContext): MatchPlan {
  if (t.field !== 'createdAt') return unknownMatch(`time on ${t.field}`, c);
  const bounds: [PlanOperator, string | undefined][] = [
    ['lt', t.before],
    ['gt', t.after],
    ['gte', t.between?.[0]],
    ['lt', t.between?.[1]],
  ];
  const parts: PlanNode[] = [];
  for (const [op, iso] of bounds) {
    if (iso === undefined) continue;
    const ms = Date.parse(iso);
    // Outside four-digit years the ISO form is not the instant order PostgreSQL and strings share.
    if (!(ms >= MIN_ISO && ms <= MAX_ISO)) return unknownMatch('time bound outside years 0000-9999', c);
    parts.push(compare('createdAt', op, new Date(ms).toISOString()));
  }
  return { match: all(...parts), error: FALSE };
}

/** Whether a JSON Logic rule may read its data. */
function readsData(rule: unknown): boolean {
  if (Array.isArray(rule)) return rule.some(readsData);
  if (!isPlainObject(rule)) return false;
  for (const [k, v] of Object.entries(rule)) {
    if (k === 'var' || k === 'missing' || k === 'missing_some') return true;
    if (readsData(v)) return true;
  }
  return false;
}

function planCondition(rule: unknown, c: MatchPlanContext): MatchPlan {
  if (readsData(rule)) return unknown('condition reads the resource', c);
  const r = applyJsonLogic(rule, {}, new DecisionBudget());
  if (!r.ok) return { match: FALSE, error: TRUE };
  return ofBool(logicTruthy(r.value));
}
