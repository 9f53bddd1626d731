import { describe, expect, it } from 'vitest';
import type { OutputBundle } from 'rollup';
import { measureFirstLoad } from './first-load-budget.js';

const chunk = (fileName: string, code: string, imports: string[], opts: { isEntry?: boolean; css?: string[] } = {}) => ({
  type: 'chunk', fileName, code, imports, dynamicImports: [], isEntry: opts.isEntry ?? false,
  viteMetadata: { importedCss: new Set(opts.css ?? []), importedAssets: new Set() },
});
const asset = (fileName: string, source: string) => ({ type: 'asset', fileName, source });

describe('the first load a browser makes', () => {
  const bundle = {
    'index.js': chunk('index.js', 'a'.repeat(1000), ['vendor.js'], { isEntry: true, css: ['index.css'] }),
    'vendor.js': chunk('vendor.js', 'b'.repeat(2000), ['index.js']),
    'view.js': chunk('view.js', 'c'.repeat(5000), ['vendor.js']),
    'index.css': asset('index.css', 'd'.repeat(300)),
  } as unknown as OutputBundle;

  it('counts the entry, what it imports statically (once, cycles included) and its CSS, not views loaded later', () => {
    const r = measureFirstLoad(bundle, 250 * 1024);
    expect(r.files.map((f) => f.file).sort()).toEqual(['index.css', 'index.js', 'vendor.js']);
    expect(r.rawBytes).toBe(3300);
    expect(r.gzipBytes).toBeGreaterThan(0);
    expect(r.gzipBytes).toBeLessThan(r.rawBytes);
  });
});
