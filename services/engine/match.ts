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
import type { DecisionBudget } from './budget.js';
import { isPlainObject } from './json.js';
import { applyJsonLogic, getPathParts, logicTruthy, validateJsonLogic } from './jsonlogic.js';
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
  /**
   * The decision's budget: every part evaluated, each `condition` and each regex search draw on
   * it (see budget.ts). Without one, {@link matchOutcome} gives the definition a decision's
   * worth of its own.
   */
  budget?: DecisionBudget;
  /** Set by the matcher to why the definition errored (the first reason), for explanations. */
  error?: string;
}

export type Matcher = (s: MatchSubject) => boolean;

/** Outcome of a definition against one resource; `error` when it could not be evaluated. */
export type MatchOutcome = 'match' | 'no_match' | 'error';
/** A compiled definition reporting {@link MatchOutcome}. */
export type OutcomeMatcher = (s: MatchSubject) => MatchOutcome;

// --- regular expressions --------------------------------------------------------------------

/**
 * Largest program one pattern may compile to, in RE2 instructions. re2js's own limit (1,398,101)
 * is what let `a{0,1000}` × 600 through: 1.2M instructions, 2 s and ~900 MB to compile. Applied
 * to {@link estimateRegexProgram} before compiling, then to the compiled `programSize()`. At this
 * size a pattern compiles in under a millisecond (an alternation of the 249 country codes is 759
 * instructions); what a search costs is charged to the decision ({@link regexSearchCost}), so a
 * large program only fits short inputs.
 */
export const REGEX_MAX_PROGRAM_SIZE = 1_000;
/** Largest sum of the program estimates of the patterns of one match definition (its compile time stays a few ms). */
export const MATCH_MAX_REGEX_PROGRAM_TOTAL = 4 * REGEX_MAX_PROGRAM_SIZE;
/**
 * Compiled patterns (and refusals) are cached per process: at most this many, weighing at most
 * {@link REGEX_CACHE_MAX_WEIGHT} in all (cleared when either is full). A pattern weighs its
 * program size plus a quarter of its length (the key is kept too: a refused 16 KiB pattern
 * weighs 4,096). Retained heap measured 175 bytes an instruction for large patterns once
 * searched (program, one-pass program, NFA machine), so the cache holds at most about 45 MiB;
 * an ordinary pattern (10–50 instructions) takes about 1 KiB. The lazy DFA, which would add up
 * to 8 MiB of states per pattern, is off (see {@link disableDfa}).
 */
const REGEX_CACHE_MAX_ENTRIES = 4_096;
const REGEX_CACHE_MAX_WEIGHT = 250_000;

/** A compiled pattern, or why it is refused. */
type CompiledRegex = RE2JS | string;
const regexCache = new Map<string, CompiledRegex>();
let regexCacheWeight = 0;

/**
 * Turns re2js's lazy DFA off for a compiled pattern, so searches take its backtracker or NFA,
 * linear in input length × program size. The DFA is faster on ordinary patterns, but an
 * adversarial pattern makes it build a state at every character (1.4 µs each, 40–120 ns per
 * character and instruction measured, against 12 for the NFA) and keep up to 8 MiB of states per
 * pattern. Ordinary patterns mostly never reach it: literal prefixes, prefilters and the one-pass
 * matcher come first. Uses the DFA's own `failed` flag (set by re2js for programs it cannot run);
 * re2js 2.10, pinned; {@link regexDfaDisabled} lets a test notice a change.
 */
function disableDfa(re: RE2JS): void {
  const dfa = (re as unknown as { re2Input?: { dfa?: { failed?: boolean } } }).re2Input?.dfa;
  if (dfa !== undefined && typeof dfa.failed === 'boolean') dfa.failed = true;
}

/** Whether {@link disableDfa} took effect on a compiled pattern (for tests). */
export function regexDfaDisabled(re: RE2JS): boolean {
  return (re as unknown as { re2Input?: { lazyDFA?: { failed?: boolean } } }).re2Input?.lazyDFA?.failed === true;
}

/**
 * An upper bound of the number of instructions `pattern` compiles to, from its text alone, in
 * one pass and without recursion: literals, escapes, classes and assertions count 1, a group 2
 * plus its alternatives and one per `|`, and repetitions multiply (`x{n,m}` is m copies of x and
 * m − n optional ones, as RE2 simplifies it; nested ones multiply). It over-estimates (a
 * non-capturing group costs nothing in RE2, alternations of single characters become one class)
 * and is meant to: compiling is what costs, so it must come after this check. Syntax errors are
 * left to the compiler.
 */
export function estimateRegexProgram(pattern: string): number {
  // One frame per open group: finished alternatives, the running sequence, and its last atom.
  interface Frame { alts: number; altCount: number; seq: number; last: number }
  const stack: Frame[] = [];
  let f: Frame = { alts: 0, altCount: 0, seq: 0, last: -1 };
  const atom = (size: number): void => {
    f.seq += size;
    f.last = size;
  };
  // Replaces the last atom (size s) by its repetition.
  const repeat = (min: number, max: number): void => {
    if (f.last < 0) return; // nothing to repeat: a syntax error
    const s = f.last;
    let size: number;
    if (max === -1) size = min === 0 ? s + 2 : (min + 1) * s + 2;
    else size = Math.max(1, max * s) + (max - min) + 2;
    f.seq += size - s;
    f.last = size;
  };
  const closeAlternation = (g: Frame): number => {
    const alts = g.alts + Math.max(1, g.seq);
    return alts + g.altCount; // one alternation instruction per `|`
  };
  const n = pattern.length;
  let i = 0;
  while (i < n) {
    const c = pattern[i];
    if (c === '\\') {
      const d = pattern[i + 1];
      if (d === 'Q') {
        const end = pattern.indexOf('\\E', i + 2);
        const stop = end < 0 ? n : end;
        for (let j = i + 2; j < stop; j++) atom(1);
        i = end < 0 ? n : end + 2;
        continue;
      }
      if ((d === 'p' || d === 'P' || d === 'x') && pattern[i + 2] === '{') {
        const end = pattern.indexOf('}', i + 3);
        i = end < 0 ? n : end + 1;
      } else i += 2;
      atom(1);
      continue;
    }
    if (c === '[') {
      // A class is one instruction; find where it ends as the parser does.
      let j = i + 1;
      if (pattern[j] === '^') j++;
      let first = true;
      while (j < n && (pattern[j] !== ']' || first)) {
        first = false;
        if (pattern[j] === '[' && pattern[j + 1] === ':') {
          // As the parser: `[:` runs to the next `:]` (a POSIX class, else a syntax error).
          const end = pattern.indexOf(':]', j + 2);
          if (end >= 0) {
            j = end + 2;
            continue;
          }
        }
        if (pattern[j] === '\\') {
          const d = pattern[j + 1];
          if ((d === 'p' || d === 'P' || d === 'x') && pattern[j + 2] === '{') {
            const end = pattern.indexOf('}', j + 3);
            j = end < 0 ? n : end + 1;
          } else j += 2;
          continue;
        }
        j++;
      }
      i = j + 1;
      atom(1);
      continue;
    }
    if (c === '(') {
      if (pattern[i + 1] === '?' && !pattern.startsWith('(?P<', i) && !pattern.startsWith('(?<', i)) {
        // `(?flags)` sets flags and is no group; `(?flags:` opens one.
        let j = i + 2;
        while (j < n && pattern[j] !== ')' && pattern[j] !== ':') j++;
        if (pattern[j] === ')') {
          i = j + 1;
          f.last = -1;
          continue;
        }
        i = j + 1;
      } else if (pattern[i + 1] === '?') {
        const end = pattern.indexOf('>', i);
        i = end < 0 ? n : end + 1;
      } else i++;
      stack.push(f);
      f = { alts: 0, altCount: 0, seq: 0, last: -1 };
      continue;
    }
    if (c === ')') {
      const size = 2 + closeAlternation(f);
      f = stack.pop() ?? { alts: 0, altCount: 0, seq: 0, last: -1 };
      atom(size);
      i++;
      continue;
    }
    if (c === '|') {
      f.alts += Math.max(1, f.seq);
      f.altCount++;
      f.seq = 0;
      f.last = -1;
      i++;
      continue;
    }
    if (c === '*' || c === '+' || c === '?') {
      repeat(c === '+' ? 1 : 0, c === '?' ? 1 : -1);
      i++;
      if (pattern[i] === '?') i++; // non-greedy
      continue;
    }
    if (c === '{') {
      const m = /^\{(\d{1,8})(,(\d{0,8}))?\}/.exec(pattern.slice(i, i + 20));
      if (m) {
        const min = Number(m[1]);
        const max = m[2] === undefined ? min : m[3] === '' ? -1 : Number(m[3]);
        repeat(min, max);
        i += m[0].length;
        if (pattern[i] === '?') i++;
        continue;
      }
    }
    atom(1);
    i++;
  }
  // Unclosed groups are a syntax error; count them anyway.
  while (stack.length > 0) {
    const size = 2 + closeAlternation(f);
    f = stack.pop() as Frame;
    atom(size);
  }
  return closeAlternation(f) + 4;
}

/** Why a pattern is refused before compiling it, or null. */
function regexSizeError(pattern: string, estimate: number): string | null {
  return estimate > REGEX_MAX_PROGRAM_SIZE
    ? `regular expression too large: it may compile to ${estimate > 1e9 ? 'over a billion' : Math.ceil(estimate)} instructions; at most ${REGEX_MAX_PROGRAM_SIZE} are allowed (${pattern.length} characters)`
    : null;
}

/**
 * Compiles once and caches: the pattern, or why it is refused (invalid RE2 syntax, or a program
 * over {@link REGEX_MAX_PROGRAM_SIZE}, refused before compiling when the estimate says so).
 */
function compileCached(pattern: string): CompiledRegex {
  let re = regexCache.get(pattern);
  if (re === undefined) {
    const estimate = estimateRegexProgram(pattern);
    re = regexSizeError(pattern, estimate) ?? compileBounded(pattern);
    const weight = (typeof re === 'string' ? 0 : re.programSize()) + (pattern.length >>> 2);
    // Bounded: patterns come from tenant data, which can be large.
    if (regexCache.size >= REGEX_CACHE_MAX_ENTRIES || regexCacheWeight + weight > REGEX_CACHE_MAX_WEIGHT) {
      regexCache.clear();
      regexCacheWeight = 0;
    }
    regexCache.set(pattern, re);
    regexCacheWeight += weight;
  }
  return re;
}

function compileBounded(pattern: string): CompiledRegex {
  let re: RE2JS;
  try {
    re = RE2JS.compile(pattern);
  } catch (e) {
    return `invalid regular expression: ${e instanceof Error ? e.message : 'syntax error'}`;
  }
  // The estimate is an upper bound; this only guards against a mistake in it.
  if (re.programSize() > REGEX_MAX_PROGRAM_SIZE) {
    return `regular expression too large: it compiles to ${re.programSize()} instructions; at most ${REGEX_MAX_PROGRAM_SIZE} are allowed`;
  }
  disableDfa(re);
  return re;
}

/** Compiles once and caches; null when the pattern is not valid RE2 syntax or too large. */
export function compileRegex(pattern: string): RE2JS | null {
  const re = compileCached(pattern);
  return typeof re === 'string' ? null : re;
}

/** Characters × instructions per operation in {@link regexSearchCost}; see budget.ts for the unit. */
const REGEX_STEPS_PER_OPERATION = 6;

/**
 * What one search costs, in operations: (input length + 32) × program size / 6. The NFA and
 * backtracker took at most 10–12 ns per character and instruction on adversarial patterns, 19
 * with large Unicode classes, so an operation is at most ~110 ns, like the slowest JSON Logic
 * operations. Ordinary patterns run far faster than charged (literal prefixes and prefilters
 * skip most of the input): the charge is what the input could cost.
 */
export function regexSearchCost(programSize: number, inputLength: number): number {
  return Math.ceil(((inputLength + 32) * programSize) / REGEX_STEPS_PER_OPERATION);
}

/** Compiling a pattern: 15 µs + up to 0.4 µs an instruction measured; charged on every use (see compileMatchOutcome). */
export function regexCompileCost(estimate: number): number {
  return 100 + 4 * Math.min(estimate, REGEX_MAX_PROGRAM_SIZE);
}

/**
 * A non-string value does not match; an invalid or oversize pattern, a failing engine or a
 * search the decision's budget cannot pay for is an error (its reason in `s.error`).
 */
function regexFinds(pattern: unknown, value: unknown, s: MatchSubject): MatchOutcome {
  if (typeof pattern !== 'string') return fail(s, 'regular expression must be a string');
  const budget = s.budget;
  const re = compileCached(pattern);
  if (typeof re === 'string') return fail(s, re);
  if (typeof value !== 'string') return 'no_match';
  if (budget !== undefined) {
    const cost = regexSearchCost(re.programSize(), value.length);
    if (!budget.take(cost)) return fail(s, `${budget.spent()} (a regular expression search over ${value.length} characters costs ${cost})`);
  }
  try {
    return re.test(value) ? 'match' : 'no_match';
  } catch {
    return fail(s, 'regular expression search failed');
  }
}

/** Records the first reason a definition errored, for the explanation; returns `error`. */
function fail(s: MatchSubject, reason: string): MatchOutcome {
  s.error ??= reason;
  return 'error';
}

// --- fields ---------------------------------------------------------------------------------

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
  if (name.startsWith('attributes.')) return getPathParts(resource.attributes ?? undefined, attributePath(name));
  return undefined;
}

/**
 * `attributes.<path>` split at its dots, kept by field name: a decision reads the same few fields
 * of its definitions many times, and slicing and splitting the name each time cost more than the
 * reads (a fifth of matching a collection). Names come from stored definitions; past
 * {@link MAX_SPLIT_PATHS} of them the memo starts over.
 */
const splitPaths = new Map<string, readonly string[]>();
const MAX_SPLIT_PATHS = 10_000;
function attributePath(name: string): readonly string[] {
  let parts = splitPaths.get(name);
  if (parts === undefined) {
    if (splitPaths.size >= MAX_SPLIT_PATHS) splitPaths.clear();
    splitPaths.set(name, (parts = name.slice('attributes.'.length).split('.')));
  }
  return parts;
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
    default:
      return false;
  }
}

function operandError(op: string, x: unknown, budget: ValidationBudget, path: string): string | null {
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
      return regexError(x, budget, path);
    default:
      return 'unknown operator';
  }
}

/**
 * Why a pattern is refused, or null. Counts its estimate into the definition's total first, so a
 * definition of many patterns is refused before they are all compiled. Without
 * `budget.compile` (the engine) the pattern is only recorded: the matcher compiles it when it
 * first runs, on the decision's budget.
 */
function regexError(x: unknown, budget: ValidationBudget, path: string): string | null {
  if (typeof x !== 'string') return 'regular expression must be a string';
  const estimate = estimateRegexProgram(x);
  const tooLarge = regexSizeError(x, estimate);
  if (tooLarge) return tooLarge;
  budget.regex += estimate;
  if (budget.regex > MATCH_MAX_REGEX_PROGRAM_TOTAL) {
    return `the definition's regular expressions may compile to more than ${MATCH_MAX_REGEX_PROGRAM_TOTAL} instructions in all`;
  }
  if (!budget.compile) {
    budget.patterns.push({ path, pattern: x });
    return null;
  }
  const re = compileCached(x);
  return typeof re === 'string' ? re : null;
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
  return validateAt(def, path, 1, { defs: MATCH_MAX_DEFINITIONS, regex: 0, compile: true, patterns: [] });
}

/**
 * The regular expressions of a definition as the engine checks it (without compiling them), or
 * null when the definition is invalid: then it errors against every resource, and so does it
 * when one of these does not compile ({@link compileRegex} is null).
 */
export function definitionPatterns(def: unknown): string[] | null {
  const checked: ValidationBudget = { defs: MATCH_MAX_DEFINITIONS, regex: 0, compile: false, patterns: [] };
  return validateAt(def, 'match', 1, checked) === null ? checked.patterns.map((p) => p.pattern) : null;
}

/** What validating one definition has used up (nested definitions, program estimates), and how. */
interface ValidationBudget {
  defs: number;
  regex: number;
  /** Compile each pattern (the control plane, refusing bad syntax), or only record it (the engine). */
  compile: boolean;
  patterns: { path: string; pattern: string }[];
}

function validateAt(def: unknown, path: string, depth: number, budget: ValidationBudget): string | null {
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
              const oe = operandError(op, spec[op], budget, `${p}.${field}.${op}`);
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
          const re2 = regexError(re, budget, `${p}.${field}`);
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
const compiledDefs = new WeakMap<object, Matcher>();
const compiledOutcomes = new WeakMap<object, OutcomeMatcher>();

const outcomeOf = (b: boolean): MatchOutcome => (b ? 'match' : 'no_match');

/** Matchers of invalid definitions: they always error. */
const invalidMatchers = new WeakSet<OutcomeMatcher>();

function invalidMatcher(reason: string): OutcomeMatcher {
  const m: OutcomeMatcher = (s) => fail(s, reason);
  invalidMatchers.add(m);
  return m;
}

const NOT_AN_OBJECT = invalidMatcher('match definition must be an object');

/**
 * Compiles a definition into a tri-state matcher, once per definition object (definitions are
 * immutable once indexed). An invalid definition (a stored one may predate a bound, such as an
 * oversize regex) compiles to a matcher that always errors, without compiling its patterns.
 * The matcher may throw; {@link matchOutcome} turns that into `error`.
 */
export function compileMatchOutcome(def: unknown): OutcomeMatcher {
  if (def === null || typeof def !== 'object') return NOT_AN_OBJECT;
  let m = compiledOutcomes.get(def);
  if (!m) {
    const checked: ValidationBudget = { defs: MATCH_MAX_DEFINITIONS, regex: 0, compile: false, patterns: [] };
    const err = validateAt(def, 'match', 1, checked);
    if (err !== null) m = invalidMatcher(`invalid match definition: ${err}`);
    else {
      const inner = build(def as Record<string, unknown>);
      // A pattern that does not compile makes the whole definition invalid, as at write time.
      // Every use of the definition pays for compiling its patterns, cached or not: patterns
      // live in a cache shared by every tenant, so whether one is cached depends on others'
      // traffic, and a decision must not (the same data must cost the same everywhere).
      const patterns = checked.patterns.map((x) => ({ ...x, cost: regexCompileCost(estimateRegexProgram(x.pattern)) }));
      m =
        patterns.length === 0
          ? inner
          : (s) => {
              for (const { path, pattern, cost } of patterns) {
                if (s.budget !== undefined && !s.budget.take(cost)) return fail(s, `${s.budget.spent()} (compiling a regular expression costs ${cost})`);
                const re = compileCached(pattern);
                if (typeof re === 'string') return fail(s, `invalid match definition: ${path}: ${re}`);
              }
              return inner(s);
            };
    }
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
    m = invalidMatchers.has(outcome) ? NEVER : (s) => outcome(s) === 'match';
    compiledDefs.set(def, m);
  }
  return m;
}

/**
 * How `def` comes out against the resource; never throws. With `subject.budget` (the decision
 * path), every part evaluated draws on it and the definition errors when it cannot pay; without
 * one, only the per-condition limit of its `condition` applies. `subject.error` says why it
 * errored.
 */
export function matchOutcome(def: unknown, subject: MatchSubject): MatchOutcome {
  subject.error = undefined;
  try {
    return compileMatchOutcome(def)(subject);
  } catch {
    return fail(subject, 'evaluation failed');
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

/**
 * Charges `n` operations to the decision, when there is one; false (the reason recorded) when
 * it cannot pay. One operation per part evaluated, plus one per 16 elements or characters of the
 * values a part scans.
 */
function pay(s: MatchSubject, n: number): boolean {
  const b = s.budget;
  if (b === undefined || b.take(n)) return true;
  s.error ??= b.spent();
  return false;
}

/** What scanning a field value costs (contains, comparisons, parsing): 1 per 16 elements or characters. */
function sizeCost(v: unknown): number {
  return typeof v === 'string' || Array.isArray(v) ? v.length >>> 4 : 0;
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
              parts.push((s) => regexFinds(x, resourceField(s.resource, field), s));
            } else {
              const own = 1 + sizeCost(x);
              parts.push((s) => {
                const value = resourceField(s.resource, field);
                return pay(s, own + sizeCost(value)) ? outcomeOf(applyOperator(op, value, x)) : 'error';
              });
            }
          }
        }
        break;
      case 'tags':
        for (const [group, want] of Object.entries(v as Record<string, unknown>)) {
          const wanted = typeof want === 'string' ? [want] : (want as string[]);
          const own = 1 + (wanted.length >>> 4);
          parts.push((s) => {
            if (!pay(s, own)) return 'error';
            const have = s.tags().get(group);
            return outcomeOf(have !== undefined && wanted.some((w) => have.has(w)));
          });
        }
        break;
      case 'patterns':
        for (const [field, re] of Object.entries(v as Record<string, unknown>)) {
          parts.push((s) => regexFinds(re, resourceField(s.resource, field), s));
        }
        break;
      case 'time': {
        const t = v as { field: string; before?: string; after?: string; between?: [string, string] };
        const before = t.before !== undefined ? timeOf(t.before) : undefined;
        const after = t.after !== undefined ? timeOf(t.after) : undefined;
        const between = t.between ? [timeOf(t.between[0]), timeOf(t.between[1])] : undefined;
        parts.push((s) => {
          const value = resourceField(s.resource, t.field);
          if (!pay(s, 1 + sizeCost(value))) return 'error';
          const at = timeOf(value);
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
          const r = applyJsonLogic(v, conditionData(s.resource), s.budget);
          if (!r.ok) return fail(s, r.error);
          return logicTruthy(r.value) ? 'match' : 'no_match';
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
