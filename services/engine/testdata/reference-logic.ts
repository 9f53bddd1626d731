/**
 * JSON Logic for the reference evaluator, written from the documented rules (docs/limits.md,
 * docs/decision-path.md "Conditions and match definitions", contract §6). It shares no code with
 * the engine's wrapper (jsonlogic.ts): its own validity rules, its own `var`, `missing`,
 * `missing_some`, `merge` and `cat`, JSON Logic's own truthiness, and stock json-logic-js for the
 * rest of the operations.
 *
 * The engine installs its hardened operations into the json-logic-js module that every importer
 * shares, so this file runs a private copy of the package's code: a change to the engine's
 * operations cannot reach the reference.
 *
 * Not modelled: the run-time operation budget (docs/decision-path.md "Bounded cost"). Generated
 * rules stay far below it, or error for another reason first (the `merge` bound).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { compileFunction } from 'node:vm';

type JsonLogicModule = {
  apply(rule: unknown, data?: unknown): unknown;
  truthy(value: unknown): boolean;
  add_operation(name: string, fn: (...args: never[]) => unknown): void;
  rm_operation(name: string): void;
};

/** A private instance of stock json-logic-js, evaluated from the package's file. */
function privateJsonLogic(): JsonLogicModule {
  const file = createRequire(import.meta.url).resolve('json-logic-js');
  const module = { exports: {} as unknown };
  compileFunction(readFileSync(file, 'utf8'), ['module', 'exports', 'define'], { filename: file })(module, module.exports, undefined);
  return module.exports as JsonLogicModule;
}

const logic = privateJsonLogic();

/** Deepest nesting of operations and literal containers (contract §6). */
const MAX_DEPTH = 32;
/** Longest literal array or argument list (docs/limits.md). */
const MAX_ITEMS = 1_000;
/** Most keys of a literal object (docs/limits.md). */
const MAX_KEYS = 32;
/** Most nodes of one rule (docs/limits.md). */
const MAX_NODES = 100_000;
/** What a condition may spend; a rule whose literal data alone costs more is refused (docs/limits.md). */
const MAX_OPERATIONS = 10_000;
/** Largest `merge` result and longest `cat` result (docs/limits.md). */
const MAX_MERGED = 10_000;
const MAX_CAT = 65_536;

/** Names no rule may read or write (docs/decision-path.md). */
const FORBIDDEN = ['__proto__', 'constructor', 'prototype'];

/** The operations a rule may use (docs/decision-path.md); `method` and `log` are not among them. */
const OPERATIONS = [
  'if', '?:', 'and', 'or', 'filter', 'map', 'reduce', 'all', 'none', 'some',
  '==', '===', '!=', '!==', '>', '>=', '<', '<=', '!!', '!', '%', 'in', 'cat', 'substr',
  '+', '*', '-', '/', 'min', 'max', 'merge', 'var', 'missing', 'missing_some',
];
/** Operations whose first argument is looped over. */
const LOOPS = ['filter', 'map', 'reduce', 'all', 'none', 'some'];

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v) && [Object.prototype, null].includes(Object.getPrototypeOf(v));
const operationOf = (v: unknown): string | undefined => (isObject(v) && Object.keys(v).length === 1 ? Object.keys(v)[0] : undefined);
const argsOf = (v: Record<string, unknown>, op: string): unknown[] => (Array.isArray(v[op]) ? (v[op] as unknown[]) : [v[op]]);

/** Why `rule` is refused, or null when it may be stored and evaluated. */
export function refJsonLogicError(rule: unknown): string | null {
  let nodes = 0;
  const walk = (node: unknown, level: number): string | null => {
    if (++nodes > MAX_NODES) return 'too many nodes';
    if (node === null || typeof node === 'string' || typeof node === 'boolean') return null;
    if (typeof node === 'number') return Number.isFinite(node) ? null : 'not a finite number';
    // An operation or a literal container is one level; an operation's argument list is not.
    if (level + 1 > MAX_DEPTH) return 'too deep';
    if (Array.isArray(node)) {
      if (node.length > MAX_ITEMS) return 'array too long';
      for (const x of node) {
        const e = walk(x, level + 1);
        if (e) return e;
      }
      return null;
    }
    if (!isObject(node)) return 'not JSON';
    const op = operationOf(node);
    if (op !== undefined) {
      if (!OPERATIONS.includes(op)) return `operation ${op} not allowed`;
      const args = argsOf(node, op);
      if (args.length > MAX_ITEMS) return 'too many arguments';
      for (const path of literalPaths(op, args)) {
        if (String(path).split('.').some((part) => FORBIDDEN.includes(part))) return `path ${String(path)} reads a forbidden name`;
      }
      for (const x of args) {
        const e = walk(x, level + 1);
        if (e) return e;
      }
      return null;
    }
    const keys = Object.keys(node);
    if (keys.length > MAX_KEYS) return 'literal object with too many keys';
    for (const k of keys) {
      if (FORBIDDEN.includes(k)) return `forbidden key ${k}`;
      const e = walk(node[k], level + 1);
      if (e) return e;
    }
    return null;
  };
  const e = walk(rule, 0);
  if (e) return e;
  return leastCost(rule) > MAX_OPERATIONS ? 'costs too much over its literal data' : null;
}

/** The paths written in the rule that `var`, `missing` and `missing_some` read. */
function literalPaths(op: string, args: unknown[]): unknown[] {
  const keys = op === 'var' ? [args[0]] : op === 'missing' ? args.flatMap((a) => (Array.isArray(a) ? a : [a])) : op === 'missing_some' && Array.isArray(args[1]) ? args[1] : [];
  return keys.filter((k) => typeof k === 'string' || typeof k === 'number');
}

/**
 * A lower bound of what a rule costs over its literal data: one operation a node; a loop over a
 * literal array of n elements costs n times its body, nested loops multiply; an `if` costs at
 * least its costliest argument. Refusing only over this bound, the reference accepts rules near
 * the limit that a finer estimate refuses: generated rules stay far from it.
 */
function leastCost(node: unknown): number {
  if (Array.isArray(node)) return 1 + node.reduce((s: number, x) => s + leastCost(x), 0);
  const op = operationOf(node);
  if (op === undefined) return 1;
  const args = argsOf(node as Record<string, unknown>, op);
  if (LOOPS.includes(op)) {
    const n = Array.isArray(args[0]) ? args[0].length : 0;
    return 1 + leastCost(args[0]) + n * leastCost(args[1]);
  }
  const costs = args.map(leastCost);
  if (op === 'if' || op === '?:') return 1 + Math.max(0, ...costs);
  return 1 + costs.reduce((s, c) => s + c, 0);
}

// --- evaluation --------------------------------------------------------------------------------

/** `var` reads own data properties of plain objects and array indexes only, never a forbidden name. */
function readPath(data: unknown, path: unknown, notFound: unknown): unknown {
  if (path === undefined || path === null || path === '') return data;
  let cur = data;
  for (const part of String(path).split('.')) {
    if (cur === null || cur === undefined) return notFound;
    if (FORBIDDEN.includes(part)) cur = undefined;
    else if (Array.isArray(cur)) cur = /^(0|[1-9][0-9]*)$/.test(part) ? cur[Number(part)] : undefined;
    else if (isObject(cur)) {
      const d = Object.getOwnPropertyDescriptor(cur, part);
      cur = d && 'value' in d ? d.value : undefined;
    } else cur = undefined;
  }
  return cur === undefined ? notFound : cur;
}

function refVar(this: unknown, path?: unknown, fallback?: unknown): unknown {
  return readPath(this, path, fallback === undefined ? null : fallback);
}

/** `missing` reads each key as a path (an array key as `[path, default]`), never as a rule. */
function refMissing(this: unknown, ...args: unknown[]): unknown[] {
  const keys = Array.isArray(args[0]) ? (args[0] as unknown[]) : args;
  return keys.filter((key) => {
    const v = Array.isArray(key) ? refVar.call(this, key[0], key[1]) : refVar.call(this, key);
    return v === null || v === '';
  });
}

function refMissingSome(this: unknown, need: unknown, options: unknown): unknown[] {
  const list = Array.isArray(options) ? options : [options];
  const missing = refMissing.apply(this, list);
  return list.length - missing.length >= (need as number) ? [] : missing;
}

function refMerge(...args: unknown[]): unknown[] {
  const out = ([] as unknown[]).concat(...args);
  if (out.length > MAX_MERGED) throw new Error('merge result too large');
  return out;
}

function refCat(...args: unknown[]): string {
  const out = args.join('');
  if (out.length > MAX_CAT) throw new Error('cat result too long');
  return out;
}

logic.rm_operation('method');
logic.rm_operation('log');
logic.add_operation('var', refVar as never);
logic.add_operation('missing', refMissing as never);
logic.add_operation('missing_some', refMissingSome as never);
logic.add_operation('merge', refMerge as never);
logic.add_operation('cat', refCat as never);

export type RefLogicResult = { ok: true; value: unknown } | { ok: false };

/** Evaluates a rule against data: `ok: false` when the rule is refused or fails while running. */
export function refApplyLogic(rule: unknown, data: unknown): RefLogicResult {
  if (refJsonLogicError(rule) !== null) return { ok: false };
  try {
    return { ok: true, value: logic.apply(rule, data) };
  } catch {
    return { ok: false };
  }
}

/** JSON Logic's truthiness (jsonlogic.com/truthy): `[]` is falsy, `"0"` and `{}` are truthy. */
export function refTruthy(value: unknown): boolean {
  return logic.truthy(value);
}

/** A condition holds: valid, evaluated without error, truthy. `undefined` when it errors. */
export function refHolds(rule: unknown, data: unknown): boolean | undefined {
  const r = refApplyLogic(rule, data);
  return r.ok ? refTruthy(r.value) : undefined;
}
