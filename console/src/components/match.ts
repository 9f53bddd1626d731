/**
 * A collection's match definition as clauses a person reads, all of which must hold (the keys of
 * a definition are ANDed): `fields`, `tags`, `patterns`, `time`, `condition`, and the nested
 * groups `any`, `all`, `none` (see services/engine/match.ts for what each means). A key or an
 * operator this does not know is shown as its JSON rather than dropped.
 */
import { formatLogic } from './logic.js';

export type MatchClause =
  | { readonly kind: 'clause'; readonly text: string }
  | { readonly kind: 'group'; readonly text: string; readonly clauses: readonly MatchClause[] };

const FIELD_OPERATORS: Record<string, string> = {
  eq: '==', ne: '!=', gt: '>', gte: '>=', lt: '<', lte: '<=', in: 'in', nin: 'not in',
  contains: 'contains', startsWith: 'starts with', endsWith: 'ends with',
};

const GROUPS: Record<string, { label: string; empty: string }> = {
  any: { label: 'any of these holds:', empty: 'any of nothing: never matches' },
  all: { label: 'all of these hold:', empty: 'all of nothing: always holds' },
  none: { label: 'none of these holds:', empty: 'none of nothing: always holds' },
};

export function describeMatch(def: unknown): MatchClause[] {
  if (!isObject(def)) return [clause(`not a definition: ${JSON.stringify(def)}`)];
  const out: MatchClause[] = [];
  for (const [key, value] of Object.entries(def)) {
    switch (key) {
      case 'fields':
        if (isObject(value)) for (const [field, spec] of Object.entries(value)) out.push(...fieldClauses(field, spec));
        else out.push(unknown(key, value));
        break;
      case 'tags':
        if (isObject(value)) for (const [group, wanted] of Object.entries(value)) out.push(clause(tagText(group, wanted)));
        else out.push(unknown(key, value));
        break;
      case 'patterns':
        if (isObject(value)) for (const [field, pattern] of Object.entries(value)) out.push(clause(`${field} matches ${regex(pattern)}`));
        else out.push(unknown(key, value));
        break;
      case 'time':
        out.push(isObject(value) ? clause(timeText(value)) : unknown(key, value));
        break;
      case 'condition':
        out.push(clause(formatLogic(value)));
        break;
      case 'any':
      case 'all':
      case 'none':
        out.push(Array.isArray(value) ? group(key, value) : unknown(key, value));
        break;
      default:
        out.push(unknown(key, value));
    }
  }
  if (out.length === 0) out.push(clause('every resource of the type (no conditions)'));
  return out;
}

/** A bare value means `eq`; several operators on one field must all hold, one clause each. */
function fieldClauses(field: string, spec: unknown): MatchClause[] {
  if (!isObject(spec)) return [clause(equals(field, spec))];
  return Object.entries(spec).map(([op, operand]) => {
    if (op === 'eq') return clause(equals(field, operand));
    if (op === 'regex') return clause(`${field} matches ${regex(operand)}`);
    const symbol = FIELD_OPERATORS[op];
    return clause(symbol ? `${field} ${symbol} ${literal(operand)}` : `${field} ${op} ${JSON.stringify(operand)}`);
  });
}

/** `eq: null` also matches an absent field: said so. */
function equals(field: string, value: unknown): string {
  return value === null ? `${field} is absent or null` : `${field} == ${literal(value)}`;
}

function tagText(group: string, wanted: unknown): string {
  if (typeof wanted === 'string') return `tag ${group} is ${literal(wanted)}`;
  if (Array.isArray(wanted)) return `tag ${group} is one of ${wanted.map(literal).join(', ')}`;
  return `tag ${group}: ${JSON.stringify(wanted)}`;
}

/** Bounds are exclusive except the start of `between`, which is included. */
function timeText(t: Record<string, unknown>): string {
  const parts: string[] = [];
  if (t.after !== undefined) parts.push(`after ${String(t.after)}`);
  if (t.before !== undefined) parts.push(`before ${String(t.before)}`);
  if (Array.isArray(t.between) && t.between.length === 2) parts.push(`from ${String(t.between[0])} (included) until ${String(t.between[1])} (excluded)`);
  const field = typeof t.field === 'string' ? t.field : JSON.stringify(t.field);
  return parts.length > 0 ? `${field} is ${parts.join(' and ')}` : `time: ${JSON.stringify(t)}`;
}

function group(key: string, definitions: unknown[]): MatchClause {
  const { label, empty } = GROUPS[key];
  if (definitions.length === 0) return clause(empty);
  return {
    kind: 'group',
    text: label,
    clauses: definitions.map((d) => {
      // A nested definition of several keys is itself an AND.
      const inner = describeMatch(d);
      return inner.length === 1 ? inner[0] : { kind: 'group', text: GROUPS.all.label, clauses: inner };
    }),
  };
}

function regex(pattern: unknown): string {
  return typeof pattern === 'string' ? `/${pattern}/` : JSON.stringify(pattern);
}

function literal(value: unknown): string {
  return Array.isArray(value) ? `[${value.map(literal).join(', ')}]` : JSON.stringify(value) ?? String(value);
}

function unknown(key: string, value: unknown): MatchClause {
  return clause(`${key}: ${JSON.stringify(value)}`);
}

function clause(text: string): MatchClause {
  return { kind: 'clause', text };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
