/**
 * A plan as a parameterized PostgreSQL boolean expression over an application's resource table
 * (docs/plan-resources.md gives the column mapping). Values are only ever parameters (`$1`, …),
 * column names are checked as SQL identifiers and quoted. Every comparison renders to an
 * expression that is never NULL (so NOT means "does not hold", as in the tree), with the
 * engine's JSON types kept: a jsonb attribute is compared only after `jsonb_typeof` says it is
 * of the operand's type, strings are compared in code-point order (`COLLATE "C"`; the plan
 * leaves to evaluate the operands where code-unit order differs).
 *
 * The expression starts with `<resource_type> = $1` (the type key), so the table may hold
 * resources of several types. A residual renders as TRUE under an even number of NOTs and
 * FALSE under an odd one: the rows selected are then a superset of the allowed ones, to be
 * confirmed with Evaluate.
 */
import { widen, type PlanField, type PlanNode, type PlanScalar } from './tree.js';

export interface PlanColumns {
  id: string;
  externalResourceId: string;
  ownerScopeId: string;
  resourceType: string;
  attributes: string;
  displayName: string;
  createdAt: string;
  createdBy: string;
}

export const DEFAULT_PLAN_COLUMNS: Readonly<PlanColumns> = Object.freeze({
  id: 'id',
  externalResourceId: 'external_resource_id',
  ownerScopeId: 'owner_scope_id',
  resourceType: 'resource_type',
  attributes: 'attributes',
  displayName: 'display_name',
  createdAt: 'created_at',
  createdBy: 'created_by',
});

/** A column name that is not a plain SQL identifier (`field` names the mapping's field). */
export class InvalidColumnError extends Error {
  constructor(readonly field: keyof PlanColumns, value: string) {
    super(`column name ${JSON.stringify(value)} is not an SQL identifier (a letter or _, then letters, digits or _, at most 63)`);
  }
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** The mapping with defaults for unset (empty) names; throws InvalidColumnError for a bad one. */
export function planColumns(given: Partial<PlanColumns> = {}): PlanColumns {
  const out = { ...DEFAULT_PLAN_COLUMNS };
  for (const key of Object.keys(DEFAULT_PLAN_COLUMNS) as (keyof PlanColumns)[]) {
    const v = given[key];
    if (v === undefined || v === '') continue;
    if (!IDENTIFIER.test(v)) throw new InvalidColumnError(key, v);
    out[key] = v;
  }
  return out;
}

export interface PlanSql {
  sql: string;
  /** `$n` is `params[n - 1]`: strings, and arrays of strings for `text[]` and `jsonb[]`. */
  params: (string | string[])[];
}

const quote = (name: string): string => `"${name}"`;

/** Renders a plan's condition for resources of type key `resourceType`. */
export function planToSql(condition: PlanNode, resourceType: string, given: Partial<PlanColumns> = {}): PlanSql {
  const columns = planColumns(given);
  const params: (string | string[])[] = [];
  const param = (v: string | string[], cast = ''): string => {
    params.push(v);
    return `$${params.length}${cast}`;
  };
  const typeFilter = `${quote(columns.resourceType)} = ${param(resourceType)}`;
  const body = widen(condition);
  if (body.kind === 'const') return { sql: body.value ? typeFilter : 'false', params: body.value ? params : [] };
  return { sql: `${typeFilter} AND ${render(body, columns, param)}`, params };
}

type Param = (v: string | string[], cast?: string) => string;

function render(n: PlanNode, c: PlanColumns, param: Param): string {
  switch (n.kind) {
    case 'const':
      return n.value ? 'true' : 'false';
    case 'residual':
      throw new Error('a residual reached the SQL rendering (widen first)');
    case 'not':
      return `NOT ${render(n.of, c, param)}`;
    case 'all':
      return `(${n.of.map((p) => render(p, c, param)).join(' AND ')})`;
    case 'any':
      return `(${n.of.map((p) => render(p, c, param)).join(' OR ')})`;
    case 'compare':
      return n.field.startsWith('attributes.') ? renderAttribute(n.field, n.operator, n.value, c, param) : renderColumn(n.field, n.operator, n.value, c, param);
  }
}

const OWN_COLUMNS: Partial<Record<PlanField, keyof PlanColumns>> = {
  id: 'id',
  externalResourceId: 'externalResourceId',
  ownerScopeId: 'ownerScopeId',
  displayName: 'displayName',
  createdBy: 'createdBy',
};

const ORDER: Record<string, string> = { gt: '>', gte: '>=', lt: '<', lte: '<=' };

/** A comparison on a text column (or `createdAt`, a timestamptz). */
function renderColumn(field: PlanField, op: string, x: PlanScalar | PlanScalar[], c: PlanColumns, param: Param): string {
  if (field === 'createdAt') {
    if (ORDER[op] === undefined || typeof x !== 'string') throw new Error(`createdAt compares only as an instant, not with ${op}`);
    return `COALESCE(${quote(c.createdAt)} ${ORDER[op]} ${param(x, '::timestamptz')}, false)`;
  }
  const key = OWN_COLUMNS[field];
  if (key === undefined) throw new Error(`no column for field ${field}`);
  const col = quote(c[key]);
  switch (op) {
    case 'eq':
      if (x === null) return `${col} IS NULL`;
      return typeof x === 'string' ? `COALESCE(${col} = ${param(x, '::text')}, false)` : 'false';
    case 'in': {
      const list = x as PlanScalar[];
      const strings = list.filter((e): e is string => typeof e === 'string');
      const parts: string[] = [];
      if (strings.length > 0) parts.push(`COALESCE(${col} = ANY(${param(strings, '::text[]')}), false)`);
      if (list.includes(null)) parts.push(`${col} IS NULL`);
      return parts.length === 0 ? 'false' : parts.length === 1 ? parts[0] : `(${parts.join(' OR ')})`;
    }
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      return typeof x === 'string' ? `COALESCE(${col} COLLATE "C" ${ORDER[op]} ${param(x, '::text')}, false)` : 'false';
    case 'contains':
      return typeof x === 'string' ? `COALESCE(strpos(${col}, ${param(x, '::text')}) > 0, false)` : 'false';
    case 'startsWith':
      return typeof x === 'string' ? `COALESCE(starts_with(${col}, ${param(x, '::text')}), false)` : 'false';
    case 'endsWith':
      return typeof x === 'string' ? endsWith(col, param(x, '::text')) : 'false';
    default:
      throw new Error(`unknown operator ${op}`);
  }
}

const endsWith = (text: string, p: string): string => `COALESCE(right(${text}, char_length(${p})) = ${p}, false)`;

/** A comparison on a jsonb attribute: the value at the path, typed as the engine types it. */
function renderAttribute(field: string, op: string, x: PlanScalar | PlanScalar[], c: PlanColumns, param: Param): string {
  // Comparisons that cannot hold (an operand of another type) render as `false` with no parameter.
  if (op === 'startsWith' || op === 'endsWith' ? typeof x !== 'string' : ORDER[op] !== undefined && typeof x !== 'number' && typeof x !== 'string') return 'false';
  if (op === 'in' && (x as PlanScalar[]).length === 0) return 'false';
  const path = field.slice('attributes.'.length).split('.');
  const j = `(${quote(c.attributes)} #> ${param(path, '::text[]')})`;
  const isNull = `(${j} IS NULL OR ${j} = 'null'::jsonb)`;
  const text = `(${j} #>> '{}')`;
  const ifType = (type: string, then: string) => `CASE WHEN jsonb_typeof(${j}) = '${type}' THEN ${then} ELSE false END`;
  switch (op) {
    case 'eq':
      return x === null ? isNull : `COALESCE(${j} = ${param(JSON.stringify(x), '::jsonb')}, false)`;
    case 'in': {
      const list = x as PlanScalar[];
      const values = list.filter((e) => e !== null).map((e) => JSON.stringify(e));
      const parts: string[] = [];
      if (values.length > 0) parts.push(`COALESCE(${j} = ANY(${param(values, '::jsonb[]')}), false)`);
      if (list.includes(null)) parts.push(isNull);
      return parts.length === 0 ? 'false' : parts.length === 1 ? parts[0] : `(${parts.join(' OR ')})`;
    }
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      if (typeof x === 'number') return ifType('number', `(${j})::numeric ${ORDER[op]} ${param(JSON.stringify(x), '::numeric')}`);
      if (typeof x === 'string') return ifType('string', `${text} COLLATE "C" ${ORDER[op]} ${param(x, '::text')}`);
      return 'false';
    case 'contains': {
      const inString = typeof x === 'string' ? `strpos(${text}, ${param(x, '::text')}) > 0` : 'false';
      return `CASE jsonb_typeof(${j}) WHEN 'string' THEN ${inString} WHEN 'array' THEN ${j} @> jsonb_build_array(${param(JSON.stringify(x), '::jsonb')}) ELSE false END`;
    }
    case 'startsWith':
      return typeof x === 'string' ? ifType('string', `starts_with(${text}, ${param(x, '::text')})`) : 'false';
    case 'endsWith':
      return typeof x === 'string' ? ifType('string', endsWith(text, param(x, '::text'))) : 'false';
    default:
      throw new Error(`unknown operator ${op}`);
  }
}
