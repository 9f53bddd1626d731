/**
 * A safe wrapper over `json-logic-js` for policy conditions and collection `condition`s.
 *
 * Safety rules (checked before any evaluation, and again at evaluation time):
 * - a rule is plain JSON nested at most {@link JSON_LOGIC_MAX_DEPTH} operations deep, with no
 *   array longer than {@link JSON_LOGIC_MAX_ARRAY_LENGTH} and no literal object with more than
 *   {@link JSON_LOGIC_MAX_OBJECT_KEYS} keys;
 * - a rule whose worst case over its own literal data already costs more than a condition may
 *   spend ({@link CONDITION_MAX_OPERATIONS}) is refused: `some` over a literal array of n
 *   elements costs n times its body, nested ones multiply (arrays read from data are unknown
 *   here and left to the run-time budget);
 * - only the listed operators run: `method` (calls a function found in the data) and `log`
 *   (I/O) are removed, dotted operator names are refused;
 * - `var` reads only own data properties of plain objects and arrays, never `__proto__`,
 *   `constructor`, `prototype`, getters or anything inherited through the prototype chain;
 * - `merge` and `cat` refuse to build huge values, so a short rule cannot explode in memory;
 * - evaluation is metered (see budget.ts): every node evaluated costs one operation, and
 *   operations whose own work is linear in a value charge its size, so one `in` over a
 *   100,000-element array sent in the request context costs thousands, not one. Past the
 *   budget the condition errors;
 * - `missing` and `missing_some` read their keys as paths and never evaluate a value taken from
 *   the data as a rule (the stock ones do);
 * - nothing throws out of {@link conditionOutcome} / {@link conditionPasses}: an invalid rule, a
 *   safety limit hit at run time or an exception is reported as the outcome `error`, which
 *   callers must keep apart from a rule that merely evaluates to a falsy value (`fail`): a deny
 *   policy whose condition errors still applies (fail closed, see evaluate.ts).
 *
 * `json-logic-js` keeps one operation table per process, so the hardened operations (and the
 * metered `apply`) replace the stock ones for every importer of the package: that is intended.
 * Outside {@link applyJsonLogic} nothing is metered.
 */
import jsonLogic from 'json-logic-js';
import { CONDITION_MAX_OPERATIONS, BUDGET_EXHAUSTED, type DecisionBudget } from './budget.js';
import { isPlainObject } from './json.js';

/** Deepest nesting of operations a rule may have (contract §6). */
export const JSON_LOGIC_MAX_DEPTH = 32;
/** Most nodes (operations, containers and scalars) a rule may have: bounds validation and evaluation work. */
export const JSON_LOGIC_MAX_NODES = 100_000;
/**
 * Longest array a rule may hold (a literal, or the arguments of one operation): four times the
 * 249 ISO 3166 country codes, the longest `in` list we expect.
 */
export const JSON_LOGIC_MAX_ARRAY_LENGTH = 1_000;
/**
 * Most keys of a literal object in a rule (an object with one key is an operation). Every
 * evaluation of a literal object enumerates its keys (`is_logic`): 23 µs at 1,000 keys, 40 ns
 * at 32. Literal objects are constants in JSON Logic (nothing reads into them), so no real rule
 * needs many keys.
 */
export const JSON_LOGIC_MAX_OBJECT_KEYS = 32;
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
  return getPathParts(data, path.split('.'));
}

/** {@link getPath} over a path already split at its dots. */
export function getPathParts(data: unknown, parts: readonly string[]): unknown {
  let cur: unknown = data;
  for (let i = 0; i < parts.length; i++) {
    if (cur === null || cur === undefined) return undefined;
    cur = ownProp(cur, parts[i]);
  }
  return cur;
}

// --- metering -------------------------------------------------------------------------------

/**
 * The meter: whether it runs, the operations left to the condition being evaluated, the error
 * thrown when they run out (built once, so no stack is captured), and the stock `apply` it
 * wraps. Only {@link applyJsonLogic} turns metering on, and evaluation is synchronous and never
 * re-entered, so one counter serves every call. It lives on the package's object, like the
 * operations it meters: should this module be evaluated twice in one process (a test runner
 * sharing modules between files does), both copies meter through one state and wrap the stock
 * `apply` once, where module variables made each copy's operations charge a counter the other
 * copy never read.
 */
interface Meter {
  metering: boolean;
  opsLeft: number;
  readonly outOfOperations: Error;
  readonly stockApply: typeof jsonLogic.apply;
}
const meter: Meter = ((jsonLogic as unknown as Record<symbol, Meter>)[Symbol.for('authz.jsonlogic.meter')] ??= {
  metering: false,
  opsLeft: 0,
  outOfOperations: new Error(BUDGET_EXHAUSTED),
  stockApply: jsonLogic.apply,
});
const OUT_OF_OPERATIONS = meter.outOfOperations;

/** Charges `n` operations to the running condition. */
function charge(n: number): void {
  if (meter.metering && n > 0) {
    meter.opsLeft -= n;
    if (meter.opsLeft < 0) throw OUT_OF_OPERATIONS;
  }
}

/**
 * What converting `v` to a string or number costs: one operation per array element (joining
 * costs 20–40 ns an element, measured), one per 16 characters of a string, nested arrays
 * included. Counting stops once it is past what is left, so it costs at most the budget itself.
 */
function weight(v: unknown): number {
  if (typeof v === 'string') return v.length >>> 4;
  if (!meter.metering || !Array.isArray(v)) return 0;
  const cap = meter.opsLeft + 1;
  let n = 0;
  const stack: unknown[][] = [v];
  while (stack.length > 0) {
    const a = stack.pop() as unknown[];
    n += a.length;
    if (n > cap) return n;
    for (let i = 0; i < a.length; i++) {
      const x = a[i];
      if (typeof x === 'string') n += x.length >>> 4;
      else if (Array.isArray(x)) stack.push(x);
    }
    if (n > cap) return n;
  }
  return n;
}

// Every node json-logic-js evaluates goes through `jsonLogic.apply` (it recurses through that
// property, also for each element `some`/`all`/`none`/`filter`/`map`/`reduce` visit), so one
// wrapper counts them all.
const stockApply = meter.stockApply;
jsonLogic.apply = function meteredApply(logic: unknown, data?: unknown): unknown {
  if (meter.metering && --meter.opsLeft < 0) throw OUT_OF_OPERATIONS;
  return stockApply(logic as never, data);
} as typeof jsonLogic.apply;

// --- hardened operations -------------------------------------------------------------------

function safeVar(this: unknown, a?: unknown, b?: unknown): unknown {
  const notFound = b === undefined ? null : b;
  if (a === undefined || a === '' || a === null) return this;
  charge(weight(a));
  const path = String(a);
  const parts = path.split('.');
  // Splitting costs by length, each step an own-property lookup.
  charge((path.length >>> 4) + (parts.length >>> 1));
  let cur: unknown = this;
  for (const part of parts) {
    if (cur === null || cur === undefined) return notFound;
    cur = ownProp(cur, part);
  }
  return cur === undefined ? notFound : cur;
}

/**
 * The stock `missing` reads each key through `apply({var: key})`, which evaluates a key taken
 * from the data as a rule. Here a key is read as `var` reads a path (an array key as
 * `[path, default]`); for keys written in the rule the result is the same, since they were
 * evaluated before the operation ran.
 */
function safeMissing(this: unknown, ...args: unknown[]): unknown[] {
  const missing: unknown[] = [];
  const keys = Array.isArray(args[0]) ? (args[0] as unknown[]) : args;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i];
    charge(2); // a `var` read: 170 ns measured
    const value = Array.isArray(key) ? safeVar.call(this, key[0], key[1]) : safeVar.call(this, key);
    if (value === null || value === '') missing.push(key);
  }
  return missing;
}

function safeMissingSome(this: unknown, needCount: unknown, options: unknown): unknown[] {
  // As the stock one, which evaluates `{missing: options}`: each option is one key.
  const areMissing = safeMissing.apply(this, Array.isArray(options) ? options : [options]);
  if ((options as unknown[]).length - areMissing.length >= (needCount as number)) return [];
  return areMissing;
}

function safeMerge(...args: unknown[]): unknown[] {
  let total = 0;
  for (const a of args) total += Array.isArray(a) ? a.length : 1;
  if (total > MAX_MERGED_ITEMS) throw new Error('merge result too large');
  charge(total >>> 4);
  // As the stock one (`reduce` of `concat`), in one native call.
  return Array.prototype.concat.apply([], args);
}

function safeCat(...args: unknown[]): string {
  let out = '';
  for (const a of args) {
    // Joining strings builds a rope (no copy); converting an array costs by its elements.
    if (typeof a !== 'string') charge(weight(a));
    // Same conversion as the stock `cat` (Array.prototype.join). Data is plain JSON, so String()
    // only reaches built-in toString methods.
    const s = a === null || a === undefined ? '' : String(a);
    if (out.length + s.length > MAX_CAT_LENGTH) throw new Error('cat result too long');
    out += s;
  }
  return out;
}

function safeIn(a: unknown, b: unknown): boolean {
  if (typeof b === 'string') {
    // Stock: `if (!b …) return false`, so nothing is "in" the empty string, not even "".
    if (b === '') return false;
    charge(weight(a) + (b.length >>> 4));
    return typeof a === 'string' ? b.includes(a) : b.includes(String(a));
  }
  if (Array.isArray(b)) {
    let n = b.length >>> 4;
    // A string is compared by content with the elements of its length.
    if (typeof a === 'string' && a.length >= 16) {
      for (let i = 0; i < b.length; i++) {
        const x = b[i];
        if (typeof x === 'string' && x.length === a.length) n += a.length >>> 4;
      }
    }
    charge(n);
    return b.indexOf(a) !== -1; // as stock (`includes` would also find NaN)
  }
  return false;
}

// The stock operations below convert their arguments (an array becomes the string of all its
// elements, `[1,2] < 3` joins), so they charge what converting costs. Their results are the
// stock ones: json-logic-js 2.0.5, logic.js, line for line.
function conv1(a: unknown): void {
  if (meter.metering && typeof a === 'object') charge(weight(a));
  else if (typeof a === 'string' && a.length >= 16) charge(a.length >>> 4);
}
function conv2(a: unknown, b: unknown): void {
  conv1(a);
  conv1(b);
}
function convAll(args: ArrayLike<unknown>): void {
  for (let i = 0; i < args.length; i++) conv1(args[i]);
}

jsonLogic.rm_operation('method');
jsonLogic.rm_operation('log');
jsonLogic.add_operation('var', safeVar);
jsonLogic.add_operation('missing', safeMissing);
jsonLogic.add_operation('missing_some', safeMissingSome);
jsonLogic.add_operation('merge', safeMerge);
jsonLogic.add_operation('cat', safeCat);
jsonLogic.add_operation('in', safeIn);
jsonLogic.add_operation('==', (a: unknown, b: unknown) => (conv2(a, b), a == b));
jsonLogic.add_operation('!=', (a: unknown, b: unknown) => (conv2(a, b), a != b));
jsonLogic.add_operation('>', (a: number, b: number) => (conv2(a, b), a > b));
jsonLogic.add_operation('>=', (a: number, b: number) => (conv2(a, b), a >= b));
jsonLogic.add_operation('<', (a: number, b: number, c?: number) => (conv2(a, b), conv1(c), c === undefined ? a < b : a < b && b < c));
jsonLogic.add_operation('<=', (a: number, b: number, c?: number) => (conv2(a, b), conv1(c), c === undefined ? a <= b : a <= b && b <= c));
jsonLogic.add_operation('%', (a: number, b: number) => (conv2(a, b), a % b));
jsonLogic.add_operation('-', (a: number, b: number) => (conv2(a, b), b === undefined ? -a : a - b));
jsonLogic.add_operation('/', (a: number, b: number) => (conv2(a, b), a / b));
jsonLogic.add_operation('+', function (...args: unknown[]) {
  convAll(args);
  return args.reduce((a: number, b) => parseFloat(a as never) + parseFloat(b as never), 0);
});
jsonLogic.add_operation('*', function (...args: unknown[]) {
  convAll(args);
  // No initial value, as the stock one: `{"*": []}` throws (and so errors).
  return (args as number[]).reduce((a, b) => parseFloat(a as never) * parseFloat(b as never));
});
jsonLogic.add_operation('min', (...args: number[]) => (convAll(args), Math.min(...args)));
jsonLogic.add_operation('max', (...args: number[]) => (convAll(args), Math.max(...args)));
jsonLogic.add_operation('substr', (source: unknown, start: number, end: number) => {
  conv2(source, start);
  conv1(end);
  if (end < 0) {
    const temp = String(source).substr(start);
    return temp.substr(0, temp.length + end);
  }
  return String(source).substr(start, end);
});

// --- validation -----------------------------------------------------------------------------

/**
 * Returns why `rule` is not an acceptable JSON Logic rule, or null when it is. Used by the
 * control plane before storing a condition and by the engine before evaluating one.
 */
export function validateJsonLogic(rule: unknown): string | null {
  const budget = { nodes: JSON_LOGIC_MAX_NODES };
  const err = check(rule, 0, 'rule', budget);
  if (err) return err;
  const found: { error: string | null } = { error: null };
  estimate(rule, 'rule', found);
  return found.error;
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
    if (node.length > JSON_LOGIC_MAX_ARRAY_LENGTH) return tooLong(path, node.length);
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
    if (list.length > JSON_LOGIC_MAX_ARRAY_LENGTH) return tooLong(`${path}.${op}`, list.length);
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
  if (keys.length > JSON_LOGIC_MAX_OBJECT_KEYS) {
    return `${path}: a literal object with ${keys.length} keys; at most ${JSON_LOGIC_MAX_OBJECT_KEYS} are allowed`;
  }
  for (const k of keys) {
    if (FORBIDDEN_KEYS.has(k)) return `${path}: forbidden key "${k}"`;
    const err = check(node[k], depth + 1, `${path}.${k}`, budget);
    if (err) return err;
  }
  return null;
}

/**
 * The worst-case cost of a rule over its literal data (see {@link estimate}), in operations;
 * null when the rule is not structurally valid.
 */
export function estimateJsonLogic(rule: unknown): number | null {
  if (check(rule, 0, 'rule', { nodes: JSON_LOGIC_MAX_NODES }) !== null) return null;
  return estimate(rule, 'rule', { error: null }).cost;
}

function tooLong(path: string, n: number): string {
  return `${path}: an array of ${n} elements; at most ${JSON_LOGIC_MAX_ARRAY_LENGTH} are allowed`;
}

/** Worst-case cost of one evaluation of a node, and its length when it is an array known from literals (-1 otherwise). */
interface Estimate {
  cost: number;
  len: number;
}

/** Operations that convert their arguments (see the metered table above). */
const CONVERTING = new Set(['==', '!=', '>', '>=', '<', '<=', '%', '-', '/', '+', '*', 'min', 'max', 'substr', 'cat']);

/** What converting a literal costs at run time ({@link weight}); 0 for a computed value. */
function literalWeight(node: unknown): number {
  if (typeof node === 'string') return node.length >>> 4;
  if (!Array.isArray(node)) return 0;
  let n = node.length;
  for (const x of node) {
    if (typeof x === 'string') n += x.length >>> 4;
    else if (Array.isArray(x)) n += literalWeight(x);
  }
  return n;
}

/**
 * The worst case of a validated rule over its literal data, in the operations the run-time meter
 * counts: one per node evaluated (the costliest path through an `if`, every argument of
 * `and`/`or`), n times its body for a scoped operator over an array of known length n (one
 * pass over an array read from the data: its length is unknown here and left to the run-time
 * budget), and what the meter charges operations over literals. Records the deepest node
 * already over {@link CONDITION_MAX_OPERATIONS}: the smallest part of the rule that can never fit.
 */
function estimate(node: unknown, path: string, found: { error: string | null }): Estimate {
  let e: Estimate;
  if (Array.isArray(node)) {
    let cost = 1;
    for (let i = 0; i < node.length; i++) cost += estimate(node[i], `${path}[${i}]`, found).cost;
    e = { cost, len: node.length };
  } else if (!isPlainObject(node) || Object.keys(node).length !== 1) {
    e = { cost: 1, len: -1 };
  } else {
    const op = Object.keys(node)[0];
    const args = node[op];
    const list = Array.isArray(args) ? args : [args];
    const sub = list.map((a, i) => estimate(a, `${path}.${op}[${i}]`, found));
    if (SCOPED_OPERATORS.has(op)) {
      const over = sub[0] ?? { cost: 1, len: -1 };
      const body = sub[1]?.cost ?? 1;
      const n = over.len >= 0 ? over.len : 1;
      let cost = 1 + over.cost + n * body;
      // The charging operation around the input (see meteredRule) and what it charges.
      if (op === 'reduce') cost += (sub[2]?.cost ?? 0) + 1 + n;
      if (op === 'map') cost += 1 + (n >>> 4);
      e = { cost, len: op === 'map' || op === 'filter' ? over.len : -1 };
    } else {
      let cost = 1;
      let len = -1;
      if (op === 'if' || op === '?:') {
        // Conditions run in order until one holds, then one branch: the worst such path.
        let conditions = 0;
        let worst = 0;
        let i = 0;
        for (; i + 1 < sub.length; i += 2) {
          conditions += sub[i].cost;
          worst = Math.max(worst, conditions + sub[i + 1].cost);
          len = Math.max(len, sub[i + 1].len);
        }
        worst = Math.max(worst, conditions + (i < sub.length ? sub[i].cost : 0));
        if (i < sub.length) len = Math.max(len, sub[i].len);
        cost += worst;
      } else for (const x of sub) cost += x.cost;
      if (op === 'and' || op === 'or') {
        for (const x of sub) len = Math.max(len, x.len);
      } else if (op === 'merge') {
        len = 0;
        for (let i = 0; i < list.length; i++) len += sub[i].len >= 0 ? sub[i].len : Array.isArray(list[i]) || isPlainObject(list[i]) ? 0 : 1;
        cost += len >>> 4;
      } else if (op === 'in') {
        const b = list[1];
        if (typeof b === 'string') cost += (b.length + literalWeight(list[0])) >>> 4;
        else if (sub[1] !== undefined && sub[1].len >= 0) {
          cost += sub[1].len >>> 4;
          const a = list[0];
          if (typeof a === 'string' && a.length >= 16 && Array.isArray(b)) {
            for (const x of b) if (typeof x === 'string' && x.length === a.length) cost += a.length >>> 4;
          }
        }
      } else if (op === 'missing' || op === 'missing_some') {
        // Each key is one `var` read.
        const keys = op === 'missing' ? (Array.isArray(list[0]) ? list[0] : list) : Array.isArray(list[1]) ? list[1] : [list[1]];
        cost += 2 * keys.length;
      } else if (op === 'var') {
        const p = list[0];
        if (typeof p === 'string') cost += (p.length >>> 4) + (p.split('.').length >>> 1);
      } else if (CONVERTING.has(op)) {
        for (const a of list) cost += literalWeight(a);
      }
      e = { cost, len };
    }
  }
  if (found.error === null && e.cost > CONDITION_MAX_OPERATIONS) {
    found.error = `${path}: costs up to ${Math.round(e.cost)} operations over its literal data alone; a condition may spend at most ${CONDITION_MAX_OPERATIONS}`;
  }
  return e;
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
  /** What is evaluated: the rule, with each `map` and `reduce` charging its input's length (see {@link meteredRule}). */
  readonly run: unknown;
}

const compiled = new WeakMap<object, CompiledLogic>();

/** Validates once per rule object (rules are immutable once indexed) and caches the result. */
export function compileJsonLogic(rule: unknown): CompiledLogic {
  if (rule === null || typeof rule !== 'object') {
    return { rule, error: validateJsonLogic(rule), vars: [], run: rule };
  }
  let c = compiled.get(rule);
  if (!c) {
    const error = validateJsonLogic(rule);
    c = { rule, error, vars: error ? [] : collectVars(rule), run: error ? rule : meteredRule(rule) };
    compiled.set(rule, c);
  }
  return c;
}

/**
 * Internal operations wrapped around the input of each `map` and `reduce`, charging by its
 * length before the stock code runs: `map` allocates its whole result first (5 ns an element),
 * `reduce` builds an object per element and never stops early (130 ns an element measured
 * where other bodies cost 50–70). Rules cannot name them (not in ALLOWED_OPERATORS).
 */
const MAP_INPUT = '__authz_map_input';
const REDUCE_INPUT = '__authz_reduce_input';
jsonLogic.add_operation(MAP_INPUT, (v: unknown) => {
  if (Array.isArray(v)) charge(v.length >>> 4);
  return v;
});
jsonLogic.add_operation(REDUCE_INPUT, (v: unknown) => {
  if (Array.isArray(v)) charge(v.length);
  return v;
});

/** A copy of a validated rule with every `map` and `reduce` input passed through its charging operation; the rule itself when it has neither. */
function meteredRule(node: unknown): unknown {
  if (Array.isArray(node)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < node.length; i++) {
      const m = meteredRule(node[i]);
      if (m !== node[i]) (out ??= [...node])[i] = m;
    }
    return out ?? node;
  }
  if (!isPlainObject(node)) return node;
  const keys = Object.keys(node);
  if (keys.length !== 1) return node;
  const op = keys[0];
  const args = node[op];
  const list = Array.isArray(args) ? args : [args];
  const metered = meteredRule(list) as unknown[];
  if (op === 'map') return { map: [{ [MAP_INPUT]: [metered[0]] }, ...metered.slice(1)] };
  if (op === 'reduce') return { reduce: [{ [REDUCE_INPUT]: [metered[0]] }, ...metered.slice(1)] };
  return metered === list ? node : { [op]: metered };
}

/** Result of one evaluation: `ok: false` carries why it could not be evaluated. */
export type LogicResult = { ok: true; value: unknown } | { ok: false; error: string };

/**
 * Evaluates a rule against data; never throws. It may spend {@link CONDITION_MAX_OPERATIONS},
 * and no more than is left of `budget` (the decision's), which is charged what it spent; with
 * nothing left it errors without running.
 */
export function applyJsonLogic(rule: unknown, data: unknown, budget?: DecisionBudget): LogicResult {
  const c = compileJsonLogic(rule);
  if (c.error) return { ok: false, error: c.error };
  const own = budget === undefined || budget.left >= CONDITION_MAX_OPERATIONS;
  const allowance = own ? CONDITION_MAX_OPERATIONS : (budget as DecisionBudget).left;
  if (allowance <= 0) return { ok: false, error: (budget as DecisionBudget).spent() };
  meter.metering = true;
  meter.opsLeft = allowance;
  try {
    return { ok: true, value: jsonLogic.apply(c.run as never, data) };
  } catch (e) {
    if (e === OUT_OF_OPERATIONS) {
      return { ok: false, error: own ? `${BUDGET_EXHAUSTED}: the condition took more than ${CONDITION_MAX_OPERATIONS} operations` : (budget as DecisionBudget).spent() };
    }
    return { ok: false, error: e instanceof Error ? e.message : 'evaluation failed' };
  } finally {
    meter.metering = false;
    if (budget !== undefined) budget.left -= allowance - Math.max(0, meter.opsLeft);
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

export function conditionOutcome(rule: unknown, data: unknown, budget?: DecisionBudget): ConditionOutcome {
  const r = applyJsonLogic(rule, data, budget);
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
