/**
 * The condition tree of a query plan: what it is made of, the constructors that keep it small
 * (constant folding, flattening), and its evaluation over one resource row in three-valued
 * logic, a `residual` node being "unknown for this row".
 *
 * Comparisons mean exactly what a collection's `fields` operator means (match.ts): `eq` is
 * strict (`eq: null` also holds for an absent field), `gt`…`lte` compare two numbers or two
 * strings (code-unit order), `contains` is a substring of a string or an element of an array,
 * `startsWith`/`endsWith` need strings, `in` holds when `eq` holds for one element of the
 * value (an array). On `createdAt`, `gt`, `gte` and `lt` compare instants (the field is always
 * an ISO-8601 timestamp, so that is also their string order).
 */
import { getPath } from '../jsonlogic.js';
import type { Resource } from '../model.js';

export type PlanScalar = string | number | boolean | null;

export type PlanOperator = 'eq' | 'in' | 'gt' | 'gte' | 'lt' | 'lte' | 'contains' | 'startsWith' | 'endsWith';

/** A resource field a plan compares: own fields, the type key, or `attributes.<dot.path>`. */
export type PlanField = 'id' | 'externalResourceId' | 'ownerScopeId' | 'resourceType' | 'displayName' | 'createdAt' | 'createdBy' | `attributes.${string}`;

export type PlanNode =
  | { kind: 'const'; value: boolean }
  | { kind: 'all'; of: PlanNode[] }
  | { kind: 'any'; of: PlanNode[] }
  | { kind: 'not'; of: PlanNode }
  | { kind: 'compare'; field: PlanField; operator: PlanOperator; value: PlanScalar | PlanScalar[] }
  | { kind: 'residual'; reason: string; policyId?: string; collectionId?: string };

export const TRUE: PlanNode = Object.freeze({ kind: 'const', value: true }) as PlanNode;
export const FALSE: PlanNode = Object.freeze({ kind: 'const', value: false }) as PlanNode;

export const isTrue = (n: PlanNode): boolean => n.kind === 'const' && n.value;
export const isFalse = (n: PlanNode): boolean => n.kind === 'const' && !n.value;

/** AND, flattened and folded: a false part makes it false, true parts drop out. */
export function all(...parts: PlanNode[]): PlanNode {
  const out: PlanNode[] = [];
  for (const p of parts) {
    if (p.kind === 'const') {
      if (!p.value) return FALSE;
      continue;
    }
    if (p.kind === 'all') out.push(...p.of);
    else out.push(p);
  }
  if (out.length === 0) return TRUE;
  return out.length === 1 ? out[0] : { kind: 'all', of: out };
}

/** OR, flattened and folded: a true part makes it true, false parts drop out. */
export function any(...parts: PlanNode[]): PlanNode {
  const out: PlanNode[] = [];
  for (const p of parts) {
    if (p.kind === 'const') {
      if (p.value) return TRUE;
      continue;
    }
    if (p.kind === 'any') out.push(...p.of);
    else out.push(p);
  }
  if (out.length === 0) return FALSE;
  return out.length === 1 ? out[0] : { kind: 'any', of: out };
}

export function not(p: PlanNode): PlanNode {
  if (p.kind === 'const') return p.value ? FALSE : TRUE;
  if (p.kind === 'not') return p.of;
  return { kind: 'not', of: p };
}

export function compare(field: PlanField, operator: PlanOperator, value: PlanScalar | PlanScalar[]): PlanNode {
  return { kind: 'compare', field, operator, value };
}

/** `field` is one of `values` (strings); false for none. */
export function oneOf(field: PlanField, values: Iterable<string>): PlanNode {
  const list = [...new Set(values)].sort();
  return list.length === 0 ? FALSE : compare(field, 'in', list);
}

export function residual(reason: string, from: { policyId?: string; collectionId?: string } = {}): PlanNode {
  return { kind: 'residual', reason, ...from };
}

/** Whether a residual node appears in the tree. */
export function hasResidual(n: PlanNode): boolean {
  switch (n.kind) {
    case 'residual':
      return true;
    case 'all':
    case 'any':
      return n.of.some(hasResidual);
    case 'not':
      return hasResidual(n.of);
    default:
      return false;
  }
}

/** What a plan reads of a resource: its row and its type key. */
export interface PlanRow {
  resource: Resource;
  typeKey: string | undefined;
}

/** The value a comparison reads; undefined when absent. */
export function fieldValue(row: PlanRow, field: PlanField): unknown {
  if (field === 'resourceType') return row.typeKey;
  if (field.startsWith('attributes.')) return getPath(row.resource.attributes ?? undefined, field.slice('attributes.'.length));
  return (row.resource as unknown as Record<string, unknown>)[field];
}

function eq(v: unknown, x: unknown): boolean {
  if (x === null) return v === null || v === undefined;
  return v === x;
}

function ordered(v: unknown, x: unknown): number | null {
  if ((typeof v === 'number' && typeof x === 'number') || (typeof v === 'string' && typeof x === 'string')) return v < x ? -1 : v > x ? 1 : 0;
  return null;
}

/** One comparison, with the semantics of the match definitions' operators. */
export function compareHolds(operator: PlanOperator, v: unknown, x: PlanScalar | PlanScalar[]): boolean {
  switch (operator) {
    case 'eq':
      return eq(v, x);
    case 'in':
      return Array.isArray(x) && x.some((e) => eq(v, e));
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const c = ordered(v, x);
      if (c === null) return false;
      return operator === 'gt' ? c > 0 : operator === 'gte' ? c >= 0 : operator === 'lt' ? c < 0 : c <= 0;
    }
    case 'contains':
      if (typeof v === 'string') return typeof x === 'string' && v.includes(x);
      if (Array.isArray(v)) return v.some((e) => e === x);
      return false;
    case 'startsWith':
      return typeof v === 'string' && typeof x === 'string' && v.startsWith(x);
    case 'endsWith':
      return typeof v === 'string' && typeof x === 'string' && v.endsWith(x);
  }
}

/**
 * The tree's value for one row in Kleene logic: true, false, or undefined when it depends on a
 * residual (the application then asks Evaluate).
 */
export function evaluateTree(n: PlanNode, row: PlanRow): boolean | undefined {
  switch (n.kind) {
    case 'const':
      return n.value;
    case 'compare':
      return compareHolds(n.operator, fieldValue(row, n.field), n.value);
    case 'residual':
      return undefined;
    case 'not': {
      const v = evaluateTree(n.of, row);
      return v === undefined ? undefined : !v;
    }
    case 'all': {
      let out: boolean | undefined = true;
      for (const p of n.of) {
        const v = evaluateTree(p, row);
        if (v === false) return false;
        if (v === undefined) out = undefined;
      }
      return out;
    }
    case 'any': {
      let out: boolean | undefined = false;
      for (const p of n.of) {
        const v = evaluateTree(p, row);
        if (v === true) return true;
        if (v === undefined) out = undefined;
      }
      return out;
    }
  }
}

/**
 * The tree with each residual replaced by the value that can only widen the set it selects:
 * true under an even number of NOTs, false under an odd one (what the SQL rendering selects).
 */
export function widen(n: PlanNode, negated = false): PlanNode {
  switch (n.kind) {
    case 'residual':
      return negated ? FALSE : TRUE;
    case 'not':
      return not(widen(n.of, !negated));
    case 'all':
      return all(...n.of.map((p) => widen(p, negated)));
    case 'any':
      return any(...n.of.map((p) => widen(p, negated)));
    default:
      return n;
  }
}
