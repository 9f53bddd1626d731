/**
 * A model file read in the browser before it is sent: the server's own reader
 * (services/model/parse.ts, which needs nothing but `yaml`), so a syntax error is found here with
 * the line and column the server would give. Everything else (the schema, references) is the
 * server's to check when it plans.
 */
import { formatModelError, parseModelText } from '../../../../services/model/parse.js';

export interface ModelProblem {
  readonly line: number;
  readonly column: number;
  /** `file:line:column: message`, as the server and the command line write it. */
  readonly text: string;
}

export type ReadModel = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly problems: readonly ModelProblem[] };

export function readModel(text: string, fileName: string): ReadModel {
  if (text.trim() === '') return { ok: false, problems: [{ line: 0, column: 0, text: 'The model is empty: paste one or choose a file.' }] };
  const parsed = parseModelText(text, fileName);
  if (parsed.errors.length > 0) return { ok: false, problems: parsed.errors.map((e) => ({ line: e.line, column: e.column, text: formatModelError(e) })) };
  if (typeof parsed.value !== 'object' || parsed.value === null || Array.isArray(parsed.value)) {
    return { ok: false, problems: [{ line: 1, column: 1, text: `${fileName}:1:1: a model is a mapping (apiVersion, kind, then its sections), not ${Array.isArray(parsed.value) ? 'a list' : 'a single value'}` }] };
  }
  return { ok: true, value: parsed.value };
}
