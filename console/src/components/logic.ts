/**
 * A JSON Logic rule (the conditions of policies and collections, run by json-logic-js) as an
 * expression a person reads, e.g. `context.deviceType == "managed" and resource.attributes.level >= 3`.
 *
 * Operators are written infix with the usual precedence, and parentheses appear only where the
 * reading would otherwise change. An operator this does not know, or an object that is not an
 * operation, is shown as its JSON, so nothing of the rule is hidden or guessed at.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** How tightly an expression binds; an operand binding looser than its place needs parentheses. */
const Level = {
  Conditional: 1, // if … then … else …, some/every/no item in …: …
  Or: 2,
  And: 3,
  Not: 4,
  Compare: 5,
  Sum: 6,
  Product: 7,
  Negate: 8,
  Atom: 10,
} as const;
type Level = number;

interface Expr {
  readonly text: string;
  readonly level: Level;
}

/** What `{"var": ""}` and relative paths mean where the rule is read. */
interface Frame {
  /** Inside the body of some/all/none/filter/map/reduce, paths are read from the current element. */
  readonly element?: 'item' | 'reduce';
}

const COMPARISONS: Record<string, string> = { '==': '==', '===': '===', '!=': '!=', '!==': '!==', '<': '<', '<=': '<=', '>': '>', '>=': '>=' };
const QUANTIFIERS: Record<string, string> = { some: 'some item in', all: 'every item in', none: 'no item in' };
/** Operators read as function calls: their arguments as they are. */
const CALLS = new Set(['cat', 'substr', 'min', 'max', 'merge']);

export function formatLogic(rule: unknown): string {
  return format(rule as Json, {}).text;
}

function format(rule: Json, frame: Frame): Expr {
  if (rule === null || typeof rule !== 'object') return atom(literal(rule));
  if (Array.isArray(rule)) return atom(`[${rule.map((r) => format(r, frame).text).join(', ')}]`);
  const keys = Object.keys(rule);
  // An object that is not a single-key operation is a literal value in JSON Logic.
  if (keys.length !== 1) return atom(json(rule));
  const op = keys[0];
  const raw = rule[op];
  const args: Json[] = Array.isArray(raw) ? raw : [raw];
  return operation(op, args, frame) ?? atom(json(rule));
}

/** The expression for a known operator, or undefined to fall back to JSON. */
function operation(op: string, args: Json[], frame: Frame): Expr | undefined {
  const sub = (r: Json) => format(r, frame);
  if (op === 'var') return variable(args, frame);
  if (op in COMPARISONS) return comparison(COMPARISONS[op], args, frame);
  switch (op) {
    case 'and':
    case 'or':
      if (args.length === 0) return undefined;
      if (args.length === 1) return sub(args[0]);
      return joined(args.map(sub), ` ${op} `, op === 'and' ? Level.And : Level.Or);
    case '!':
      return { text: `not ${wrap(sub(args[0] ?? null), Level.Atom)}`, level: Level.Not };
    case '!!':
      return atom(`truthy(${sub(args[0] ?? null).text})`);
    case 'in':
      if (args.length !== 2) return undefined;
      return { text: `${wrap(sub(args[0]), Level.Sum)} in ${wrap(sub(args[1]), Level.Sum)}`, level: Level.Compare };
    case 'if':
    case '?:':
      return conditional(args.map(sub));
    case '+':
      if (args.length === 1) return atom(`number(${sub(args[0]).text})`);
      return args.length === 0 ? undefined : arithmetic(args.map(sub), ' + ', Level.Sum);
    case '*':
      return args.length === 0 ? undefined : arithmetic(args.map(sub), ' * ', Level.Product);
    case '-':
      if (args.length === 1) return { text: `-${wrap(sub(args[0]), Level.Negate)}`, level: Level.Negate };
      return args.length === 2 ? arithmetic(args.map(sub), ' - ', Level.Sum) : undefined;
    case '/':
    case '%':
      return args.length === 2 ? arithmetic(args.map(sub), ` ${op} `, Level.Product) : undefined;
    case 'some':
    case 'all':
    case 'none':
      if (args.length !== 2) return undefined;
      return { text: `${QUANTIFIERS[op]} ${wrap(sub(args[0]), Level.Atom)}: ${format(args[1], { element: 'item' }).text}`, level: Level.Conditional };
    case 'filter':
    case 'map':
      if (args.length !== 2) return undefined;
      return atom(`${op}(${sub(args[0]).text}, ${format(args[1], { element: 'item' }).text})`);
    case 'reduce':
      if (args.length < 2 || args.length > 3) return undefined;
      return atom(`reduce(${[sub(args[0]).text, format(args[1], { element: 'reduce' }).text, ...args.slice(2).map((a) => sub(a).text)].join(', ')})`);
    case 'missing':
      return atom(`missing(${pathList(args, frame)})`);
    case 'missing_some':
      if (args.length !== 2) return undefined;
      return atom(`missing_some(${sub(args[0]).text}, ${Array.isArray(args[1]) ? `[${pathList(args[1], frame)}]` : sub(args[1]).text})`);
    default:
      return CALLS.has(op) ? atom(`${op}(${args.map((a) => sub(a).text).join(', ')})`) : undefined;
  }
}

/**
 * `{"var": "a.b"}` reads as the path `a.b`; a default given as a second argument is spelled out.
 * Inside some/all/none/filter/map the data is the current element (`item`), inside reduce it is
 * `{current, accumulator}`, which are already readable names.
 */
function variable(args: Json[], frame: Frame): Expr {
  const [path, fallback] = args;
  let text: string;
  if (path === undefined || path === null || path === '' || (Array.isArray(path) && path.length === 0)) text = frame.element === 'item' ? 'item' : 'data';
  else if (typeof path === 'string' || typeof path === 'number') text = frame.element === 'item' ? `item.${path}` : String(path);
  else text = `var(${format(path, frame).text})`;
  if (args.length > 1) text += ` (default ${format(fallback, frame).text})`;
  return atom(text);
}

/** `a < b`, and json-logic's between form `{"<": [a, b, c]}` as `a < b < c`. */
function comparison(symbol: string, args: Json[], frame: Frame): Expr | undefined {
  const between = symbol === '<' || symbol === '<=';
  if (args.length !== 2 && !(between && args.length === 3)) return undefined;
  // Comparisons do not chain in meaning: an operand that is itself a comparison keeps its parentheses.
  return { text: args.map((a) => wrap(format(a, frame), Level.Sum)).join(` ${symbol} `), level: Level.Compare };
}

function conditional(parts: Expr[]): Expr {
  if (parts.length === 0) return atom('null');
  if (parts.length === 1) return parts[0];
  let text = '';
  let i = 0;
  for (; i + 1 < parts.length; i += 2) {
    text += `${i === 0 ? 'if' : ' else if'} ${wrap(parts[i], Level.Or)} then ${wrap(parts[i + 1], Level.Or)}`;
  }
  if (i < parts.length) text += ` else ${wrap(parts[i], Level.Or)}`;
  return { text, level: Level.Conditional };
}

/**
 * and/or: an operand of the same operator joins the list without parentheses (they associate);
 * `and` inside `or` keeps them, though not needed, so that nobody has to remember which binds tighter.
 */
function joined(parts: Expr[], separator: string, level: Level): Expr {
  return { text: parts.map((p) => (p.level === level ? p.text : wrap(p, Level.Not))).join(separator), level };
}

/** Left to right: the first operand may bind as tightly as the operator, the others must bind tighter. */
function arithmetic(parts: Expr[], separator: string, level: Level): Expr {
  return { text: parts.map((p, i) => wrap(p, i === 0 ? level : level + 1)).join(separator), level };
}

/** Keys of `missing`: paths, written as `var` writes them. */
function pathList(keys: Json[], frame: Frame): string {
  return keys.map((k) => (typeof k === 'string' ? variable([k], frame).text : format(k, frame).text)).join(', ');
}

function wrap(e: Expr, atLeast: Level): string {
  return e.level >= atLeast ? e.text : `(${e.text})`;
}

function atom(text: string): Expr {
  return { text, level: Level.Atom };
}

/** Strings quoted with their quotes and backslashes escaped, as JSON writes them. */
function literal(v: null | boolean | number | string): string {
  return typeof v === 'string' ? JSON.stringify(v) : String(v);
}

function json(v: Json): string {
  return JSON.stringify(v);
}
