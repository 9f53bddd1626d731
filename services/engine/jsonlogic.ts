/**
 * A safe wrapper over `json-logic-js` for policy conditions and collection `condition`s.
 *
 * Safety rules (checked before any evaluation, and again at evaluation time):
 * - a rule is plain JSON nested at most {@link JSON_LOGIC_MAX_DEPTH} operations deep;
 * - only the listed operators run: `method` (calls a function found in the data) and `log`
 *   (I/O) are removed, dotted operator names are refused;
 * - `var` reads only own data properties of plain objects and arrays, never `__proto__`,
 *   `constructor`, `prototype`, getters or anything inherited through the prototype chain;
 * - `merge` and `cat` refuse to build huge values, so a short rule cannot explode in memory;
 * - nothing throws out of {@link conditionOutcome} / {@link conditionPasses}: an invalid rule, a
 *   safety limit hit at run time or an exception is reported as the outcome `error`, which
 *   callers must keep apart from a rule that merely evaluates to a falsy value (`fail`): a deny
 *   policy whose condition errors still applies (fail closed, see evaluate.ts).
 *
 * `json-logic-js` keeps one operation table per process, so the hardened `var`, `merge`, `cat`
 * and `in` replace the stock ones for every importer of the package: that is intended.
 */
import jsonLogic from 'json-logic-js';

/** Deepest nesting of operations a rule may have (contract §6). */
export const JSON_LOGIC_MAX_DEPTH = 32;
/** Most nodes (operations, containers and scalars) a rule may have: bounds validation and evaluation work. */
export const JSON_LOGIC_MAX_NODES = 100_000;
/** Largest array `merge` may build and longest string `cat` may build. */
const MAX_MERGED_ITEMS = 10_000;
const MAX_CAT_LENGTH = 65_536;

const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** Operators a rule may use. `if`..`some` are handled inside `apply`, the rest in its table. */
const ALLOWED_OPERATORS = new Set([
  'if', '?:', 'and', 'or', 'filter', 'map', 'reduce', 'all', 'none', 'some',
  '==', '===', '!=', '!==', '>', '>=', '<', '<=', '!!', '!', '%', 'in', 'cat', 'substr',
  '+', '*', '-', '/', 'min', 'max', 'merge', 'var', 'missing', 'missing_some',
]);
/** Operators whose second argument runs against each element instead of the outer data. */
const SCOPED_OPERATORS = new Set(['filter', 'map', 'reduce', 'all', 'none', 'some']);

/**
 * Reads `key` from a plain JSON container: an own, data (non-accessor) property of an object
 * whose prototype is `Object.prototype` or null, or an index of an array. Anything else,
 * including the forbidden keys, reads as undefined.
 */
export function ownProp(container: unknown, key: string): unknown {
  if (FORBIDDEN_KEYS.has(key)) return undefined;
  if (Array.isArray(container)) {
    if (!isArrayIndex(key)) return undefined;
    const i = Number(key);
    return i < container.length ? container[i] : undefined;
  }
  if (container === null || typeof container !== 'object') return undefined;
  const proto = Object.getPrototypeOf(container);
  if (proto !== Object.prototype && proto !== null) return undefined;
  const desc = Object.getOwnPropertyDescriptor(container, key);
  return desc && 'value' in desc ? desc.value : undefined;
}

function isArrayIndex(key: string): boolean {
  if (key.length === 0 || key.length > 10) return false;
  if (key.length > 1 && key.charCodeAt(0) === 48) return false; // no leading zeros
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** Follows a dot path with {@link ownProp}; undefined when any step is missing. */
export function getPath(data: unknown, path: string): unknown {
  let cur: unknown = data;
  for (const part of path.split('.')) {
    if (cur === null || cur === undefined) return undefined;
    cur = ownProp(cur, part);
  }
  return cur;
}

// --- hardened operations -------------------------------------------------------------------

function safeVar(this: unknown, a?: unknown, b?: unknown): unknown {
  const notFound = b === undefined ? null : b;
  if (a === undefined || a === '' || a === null) return this;
  const value = getPath(this, String(a));
  return value === undefined ? notFound : value;
}

function safeMerge(...args: unknown[]): unknown[] {
  const out: unknown[] = [];
  for (const a of args) {
    if (Array.isArray(a)) {
      if (out.length + a.length > MAX_MERGED_ITEMS) throw new Error('merge result too large');
      for (const x of a) out.push(x);
    } else {
      if (out.length + 1 > MAX_MERGED_ITEMS) throw new Error('merge result too large');
      out.push(a);
    }
  }
  return out;
}

function safeCat(...args: unknown[]): string {
  let out = '';
  for (const a of args) {
    // Same conversion as the stock `cat` (Array.prototype.join). Data is plain JSON, so String()
    // only reaches built-in toString methods.
    const s = a === null || a === undefined ? '' : String(a);
    if (out.length + s.length > MAX_CAT_LENGTH) throw new Error('cat result too long');
    out += s;
  }
  return out;
}

function safeIn(a: unknown, b: unknown): boolean {
  if (typeof b === 'string') return typeof a === 'string' ? b.includes(a) : b.includes(String(a));
  if (Array.isArray(b)) return b.includes(a);
  return false;
}

jsonLogic.rm_operation('method');
jsonLogic.rm_operation('log');
jsonLogic.add_operation('var', safeVar);
jsonLogic.add_operation('merge', safeMerge);
jsonLogic.add_operation('cat', safeCat);
jsonLogic.add_operation('in', safeIn);

// --- validation -----------------------------------------------------------------------------

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/**
 * Returns why `rule` is not an acceptable JSON Logic rule, or null when it is. Used by the
 * control plane before storing a condition and by the engine before evaluating one.
 */
export function validateJsonLogic(rule: unknown): string | null {
  const budget = { nodes: JSON_LOGIC_MAX_NODES };
  return check(rule, 0, 'rule', budget);
}

/**
 * Depth counts operations and literal containers: `{"!": {"!": true}}` is 2 deep; the argument
 * array of an operation is part of that operation and adds nothing.
 */
function check(node: unknown, depth: number, path: string, budget: { nodes: number }): string | null {
  // Shared sub-objects built in memory are visited once per reference: the budget bounds that too.
  if (--budget.nodes < 0) return `${path}: more than ${JSON_LOGIC_MAX_NODES} nodes`;
  if (node === null || typeof node === 'string' || typeof node === 'boolean') return null;
  if (typeof node === 'number') return Number.isFinite(node) ? null : `${path}: not a finite number`;
  if (depth + 1 > JSON_LOGIC_MAX_DEPTH) return `${path}: nested deeper than ${JSON_LOGIC_MAX_DEPTH}`;
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) {
      const err = check(node[i], depth + 1, `${path}[${i}]`, budget);
      if (err) return err;
    }
    return null;
  }
  if (!isPlainObject(node)) return `${path}: not JSON`;
  const keys = Object.keys(node);
  if (keys.length === 1) {
    const op = keys[0];
    // json-logic-js treats every one-key object as an operation.
    if (!ALLOWED_OPERATORS.has(op)) return `${path}: unknown or forbidden operator "${op}"`;
    const args = node[op];
    const list = Array.isArray(args) ? args : [args];
    if (op === 'var' || op === 'missing' || op === 'missing_some') {
      const err = checkVarPaths(op, list, path);
      if (err) return err;
    }
    for (let i = 0; i < list.length; i++) {
      const err = check(list[i], depth + 1, `${path}.${op}[${i}]`, budget);
      if (err) return err;
    }
    return null;
  }
  for (const k of keys) {
    if (FORBIDDEN_KEYS.has(k)) return `${path}: forbidden key "${k}"`;
    const err = check(node[k], depth + 1, `${path}.${k}`, budget);
    if (err) return err;
  }
  return null;
}

/** Literal paths are refused up front; computed ones are still guarded by {@link ownProp}. */
function checkVarPaths(op: string, args: unknown[], path: string): string | null {
  const literals: unknown[] =
    op === 'var' ? [args[0]] : op === 'missing_some' ? (Array.isArray(args[1]) ? args[1] : []) : args.flat();
  for (const p of literals) {
    if (typeof p !== 'string' && typeof p !== 'number') continue;
    for (const part of String(p).split('.')) {
      if (FORBIDDEN_KEYS.has(part)) return `${path}.${op}: path "${String(p)}" reads forbidden property "${part}"`;
    }
  }
  return null;
}

// --- evaluation -----------------------------------------------------------------------------

/** A validated rule with the data paths it reads at top level (for explanations). */
export interface CompiledLogic {
  readonly rule: unknown;
  readonly error: string | null;
  readonly vars: readonly string[];
}

const compiled = new WeakMap<object, CompiledLogic>();

/** Validates once per rule object (rules are immutable once indexed) and caches the result. */
export function compileJsonLogic(rule: unknown): CompiledLogic {
  if (rule === null || typeof rule !== 'object') {
    return { rule, error: validateJsonLogic(rule), vars: [] };
  }
  let c = compiled.get(rule);
  if (!c) {
    const error = validateJsonLogic(rule);
    c = { rule, error, vars: error ? [] : collectVars(rule) };
    compiled.set(rule, c);
  }
  return c;
}

/** Result of one evaluation: `ok: false` carries why it could not be evaluated. */
export type LogicResult = { ok: true; value: unknown } | { ok: false; error: string };

/** Evaluates a rule against data; never throws. */
export function applyJsonLogic(rule: unknown, data: unknown): LogicResult {
  const c = compileJsonLogic(rule);
  if (c.error) return { ok: false, error: c.error };
  try {
    return { ok: true, value: jsonLogic.apply(rule as never, data) };
  } catch (e) {
    return { ok: false, error: e instanceof Error ? e.message : 'evaluation failed' };
  }
}

/** JSON Logic truthiness (`[]` is falsy, `"0"` is truthy). */
export function logicTruthy(value: unknown): boolean {
  return jsonLogic.truthy(value);
}

/**
 * How a condition comes out against `data`: `pass` (valid, evaluated, truthy), `fail` (valid,
 * evaluated, falsy: a missing variable reads as null and usually lands here) or `error` (the
 * rule is invalid, hit a safety limit such as the size of a `merge` or `cat` result, or threw).
 * Never throws.
 */
export type ConditionOutcome = 'pass' | 'fail' | 'error';

export function conditionOutcome(rule: unknown, data: unknown): ConditionOutcome {
  const r = applyJsonLogic(rule, data);
  if (!r.ok) return 'error';
  return jsonLogic.truthy(r.value) ? 'pass' : 'fail';
}

/** True only when the rule is valid, evaluates without error and yields a JSON Logic truthy value. */
export function conditionPasses(rule: unknown, data: unknown): boolean {
  return conditionOutcome(rule, data) === 'pass';
}

/** The literal `var` paths the rule reads from its data that are absent (undefined or null) in `data`. */
export function missingVariables(rule: unknown, data: unknown): string[] {
  const c = compileJsonLogic(rule);
  return c.vars.filter((p) => {
    const v = getPath(data, p);
    return v === undefined || v === null;
  });
}

/** Literal `var` paths read from the rule's own data (not from the elements of map/filter/...). */
function collectVars(rule: unknown): string[] {
  const out = new Set<string>();
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) {
      node.forEach(walk);
      return;
    }
    if (!isPlainObject(node)) return;
    const keys = Object.keys(node);
    if (keys.length !== 1) return;
    const op = keys[0];
    const args = Array.isArray(node[op]) ? (node[op] as unknown[]) : [node[op]];
    if (op === 'var') {
      const p = args[0];
      if ((typeof p === 'string' && p !== '') || typeof p === 'number') out.add(String(p));
      else walk(p);
      return;
    }
    if (SCOPED_OPERATORS.has(op)) {
      walk(args[0]);
      if (op === 'reduce') walk(args[2]);
      return;
    }
    args.forEach(walk);
  };
  walk(rule);
  return [...out];
}
