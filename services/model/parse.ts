/**
 * Reading a model file (YAML, or JSON, which YAML 1.2 reads the same) with the place of every
 * node kept, so that each error can name the file, line and column of what it is about.
 */
import { LineCounter, isMap, isPair, isScalar, isSeq, parseDocument, type Document, type Node } from 'yaml';

/** One problem found in a model: where it is and what is wrong. */
export interface ModelError {
  file: string;
  /** 1-based; 0 when the problem has no place in the file (a server-side state). */
  line: number;
  column: number;
  /** The JSON path of the value at fault (`roles[2].permissions[0]`); '' for the whole document. */
  path: string;
  message: string;
}

/** An error as one line: `file:line:column: path: message` (no place when it has none, no path for the whole document). */
export function formatModelError(e: ModelError): string {
  return `${e.file}${e.line > 0 ? `:${e.line}:${e.column}` : ''}: ${e.path ? `${e.path}: ` : ''}${e.message}`;
}

/** A step of a path: a property name or an array index. */
export type PathPart = string | number;

/** A parsed model document: its plain value and a way to find where a path sits in the text. */
export interface ParsedModel {
  file: string;
  /** The document as plain data (undefined when the text could not be read). */
  value: unknown;
  /** Syntax errors (the value is undefined when there are any). */
  errors: ModelError[];
  /** Line and column of the node at `path`, or of its nearest ancestor present; of the key itself with `key`. */
  locate(path: readonly PathPart[], key?: boolean): { line: number; column: number };
}

/** `roles[2].permissions[0]` from its parts. */
export function formatPath(path: readonly PathPart[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out ? `.${p}` : p;
  return out;
}

/** Aliases a document may expand: enough for any real file, too few for an alias bomb. */
const MAX_ALIASES = 100;

/** Nesting a model file needs: JSON Logic's 32 levels, each an object and an array in flow style, inside a section's entry, with room. */
const MAX_NESTING = 128;
/** Indentation a model file needs, in columns. */
const MAX_INDENT = 256;

/**
 * Why the text nests deeper than a model can, found in one pass before the parser, which
 * recurses per level and takes seconds over a megabyte of `[[[[…`: flow collections (`[`, `{`
 * opening a value), block indentation, and `- - -` runs. Undefined when it does not.
 */
export function nestingProblem(text: string): { line: number; column: number; message: string } | undefined {
  let depth = 0;
  let line = 1;
  let lineStart = 0;
  let quote = '';
  let plain = false;
  let prev = '\n';
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '\n') {
      line++;
      lineStart = i + 1;
      prev = c;
      plain = false;
      if (quote === "'") continue;
      let indent = 0;
      while (text[i + 1 + indent] === ' ') indent++;
      let dashes = 0;
      while (text[i + 1 + indent + 2 * dashes] === '-' && text[i + 2 + indent + 2 * dashes] === ' ') dashes++;
      if (indent > MAX_INDENT || dashes > MAX_NESTING) return { line, column: 1, message: `the document nests deeper than a model can (more than ${MAX_INDENT} columns of indentation or ${MAX_NESTING} levels)` };
      continue;
    }
    if (quote) {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) quote = '';
      prev = c;
      continue;
    }
    if (c === '#' && (prev === ' ' || prev === '\t' || prev === '\n')) {
      while (i + 1 < text.length && text[i + 1] !== '\n') i++;
      continue;
    }
    // A plain scalar (`a[b`, `^[a-z]+`) runs to `: `, or in a flow to `,`, `]` or `}`.
    if (plain) {
      const ends = (depth > 0 && (c === ',' || c === ']' || c === '}')) || (c === ':' && (text[i + 1] === ' ' || text[i + 1] === '\n' || text[i + 1] === undefined));
      if (!ends) {
        prev = c;
        continue;
      }
      plain = false;
    }
    if (c === '"' || c === "'") quote = c;
    else if (c === '[' || c === '{') {
      if (++depth > MAX_NESTING) return { line, column: i - lineStart + 1, message: `the document nests deeper than ${MAX_NESTING} levels, more than a model can` };
    } else if (c === ']' || c === '}') depth = Math.max(0, depth - 1);
    else if (!' \t\r,:-?'.includes(c)) plain = true;
    prev = c;
  }
  return undefined;
}

export function parseModelText(text: string, file = 'model.yaml'): ParsedModel {
  const lines = new LineCounter();
  const deep = nestingProblem(text);
  if (deep) return { file, value: undefined, errors: [{ file, ...deep, path: '' }], locate: () => ({ line: 1, column: 1 }) };
  let doc: Document;
  try {
    // The parser's own duplicate-key check compares each key with every earlier one of its map
    // (seconds for 20,000 keys): duplicateKeys below does it with a set.
    doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: false, strict: true });
  } catch (err) {
    // The parser recurses per level of nesting: a document nested deeper than the stack allows is
    // refused as a document, not answered as a server error.
    if (!(err instanceof RangeError)) throw err;
    return { file, value: undefined, errors: [{ file, line: 1, column: 1, path: '', message: 'the document nests too deep to be read' }], locate: () => ({ line: 1, column: 1 }) };
  }
  const at = (offset: number) => {
    const p = lines.linePos(offset);
    return { line: p.line, column: p.col };
  };
  const locate = (path: readonly PathPart[], key = false) => at(offsetOf(doc, path, key));
  const errors: ModelError[] = doc.errors.map((e) => ({ file, ...at(e.pos[0]), path: '', message: e.message.split('\n')[0] }));
  if (errors.length === 0) for (const offset of duplicateKeys(doc.contents)) errors.push({ file, ...at(offset), path: '', message: 'Map keys must be unique' });
  if (errors.length > 0) return { file, value: undefined, errors, locate };
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIASES });
  } catch (err) {
    errors.push({ file, line: 1, column: 1, path: '', message: (err as Error).message });
  }
  return { file, value, errors, locate };
}

/** Offsets of keys that repeat an earlier key of their map, in one pass (the nesting is bounded before). */
function duplicateKeys(node: unknown, out: number[] = []): number[] {
  if (isMap(node)) {
    const seen = new Set<string>();
    for (const pair of node.items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : JSON.stringify(pair.key);
      if (seen.has(key)) out.push(startOf(pair.key) ?? 0);
      seen.add(key);
      duplicateKeys(pair.value, out);
    }
  } else if (isSeq(node)) {
    for (const item of node.items) duplicateKeys(item, out);
  }
  return out;
}

/** The start offset of the node at `path` (or of the deepest ancestor that exists). */
function offsetOf(doc: Document, path: readonly PathPart[], key: boolean): number {
  let node: unknown = doc.contents;
  let offset = startOf(node) ?? 0;
  for (let i = 0; i < path.length; i++) {
    const part = path[i];
    let next: unknown;
    let keyNode: unknown;
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(part));
      keyNode = pair?.key;
      next = pair ? (pair.value ?? pair.key) : undefined;
    } else if (isSeq(node) && typeof part === 'number') {
      next = node.items[part];
    }
    if (next === undefined) break;
    if (key && i === path.length - 1 && keyNode !== undefined) return startOf(keyNode) ?? offset;
    node = next;
    offset = startOf(node) ?? offset;
  }
  return offset;
}

function startOf(node: unknown): number | undefined {
  return (node as Node | null | undefined)?.range?.[0];
}
