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

export function parseModelText(text: string, file = 'model.yaml'): ParsedModel {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true, strict: true });
  const at = (offset: number) => {
    const p = lines.linePos(offset);
    return { line: p.line, column: p.col };
  };
  const locate = (path: readonly PathPart[], key = false) => at(offsetOf(doc, path, key));
  const errors: ModelError[] = doc.errors.map((e) => ({ file, ...at(e.pos[0]), path: '', message: e.message.split('\n')[0] }));
  if (errors.length > 0) return { file, value: undefined, errors, locate };
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIASES });
  } catch (err) {
    errors.push({ file, line: 1, column: 1, path: '', message: (err as Error).message });
  }
  return { file, value, errors, locate };
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
