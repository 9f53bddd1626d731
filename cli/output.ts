/**
 * `--output table|json|yaml`: a command hands over its result as data and, for `table`, a
 * rendering for people; `json` and `yaml` print the data itself, so scripts read fields, not text.
 */
import { stringify as toYaml } from 'yaml';
import type { CliIo, Styles } from './io.js';

export const OUTPUT_FORMATS = ['table', 'json', 'yaml'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** Prints `data` in `format`; `table` calls `human` for the text. */
export function emit(io: CliIo, format: OutputFormat, data: unknown, human: () => string): void {
  if (format === 'json') io.out(`${JSON.stringify(data, null, 2)}\n`);
  else if (format === 'yaml') io.out(toYaml(data));
  else {
    const text = human();
    io.out(text.endsWith('\n') ? text : `${text}\n`);
  }
}

/** A value as one cell of a table. */
export function cell(value: unknown): string {
  if (value === undefined || value === null || value === '') return '-';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** Rows of `label  value`, labels padded to one width. */
export function keyValueTable(rows: readonly (readonly [string, unknown])[], styles: Styles): string {
  const width = Math.max(0, ...rows.map(([label]) => label.length));
  return rows.map(([label, value]) => `${styles.dim(label.padEnd(width))}  ${cell(value)}`).join('\n');
}

/** Rows under a header, each column padded to its widest cell. */
export function columns(header: readonly string[], rows: readonly (readonly unknown[])[], styles: Styles): string {
  const cells = rows.map((r) => r.map(cell));
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i].length)));
  const line = (r: readonly string[]) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ');
  return [styles.dim(line(header)), ...cells.map(line)].join('\n');
}
