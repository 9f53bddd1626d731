/**
 * A Vite plugin that measures what a browser downloads on the console's first load (the entry
 * chunk, every chunk it imports statically, and their CSS), gzipped, prints it, writes it to
 * `first-load.json` beside the build, and fails the build when it is over the budget. Views
 * loaded on demand (dynamic imports) are not part of the first load.
 */
import { gzipSync } from 'node:zlib';
import type { Plugin } from 'vite';
import type { OutputBundle, OutputChunk } from 'rollup';

export interface FirstLoad {
  readonly budgetBytes: number;
  readonly gzipBytes: number;
  readonly rawBytes: number;
  readonly files: readonly { file: string; rawBytes: number; gzipBytes: number }[];
}

export function measureFirstLoad(bundle: OutputBundle, budgetBytes: number): FirstLoad {
  const seen = new Set<string>();
  const files: { file: string; rawBytes: number; gzipBytes: number }[] = [];
  const add = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const out = bundle[file];
    if (out === undefined) return;
    const source = out.type === 'chunk' ? out.code : out.source;
    const raw = typeof source === 'string' ? Buffer.from(source) : Buffer.from(source);
    files.push({ file, rawBytes: raw.length, gzipBytes: gzipSync(raw, { level: 9 }).length });
    if (out.type !== 'chunk') return;
    for (const css of (out as OutputChunk & { viteMetadata?: { importedCss: Set<string> } }).viteMetadata?.importedCss ?? []) add(css);
    for (const imported of out.imports) add(imported);
  };
  for (const out of Object.values(bundle)) if (out.type === 'chunk' && out.isEntry) add(out.fileName);
  const sum = (k: 'rawBytes' | 'gzipBytes') => files.reduce((n, f) => n + f[k], 0);
  return { budgetBytes, gzipBytes: sum('gzipBytes'), rawBytes: sum('rawBytes'), files };
}

export function firstLoadBudget(budgetBytes: number): Plugin {
  return {
    name: 'authz-first-load-budget',
    apply: 'build',
    generateBundle(_options, bundle) {
      const report = measureFirstLoad(bundle, budgetBytes);
      const kb = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
      this.info(`first load: ${kb(report.gzipBytes)} gzipped (${kb(report.rawBytes)} raw) in ${report.files.length} files; budget ${kb(budgetBytes)}`);
      this.emitFile({ type: 'asset', fileName: 'first-load.json', source: `${JSON.stringify(report, null, 2)}\n` });
      if (report.gzipBytes > budgetBytes) this.error(`the console's first load is ${kb(report.gzipBytes)} gzipped, over its budget of ${kb(budgetBytes)}`);
    },
  };
}
