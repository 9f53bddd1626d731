/**
 * Links between the project's documents: every relative link of README.md, CHANGELOG.md, docs/,
 * bench/ and deploy/README.md names a file that exists and, with a `#fragment`, a heading of it
 * (GitHub's anchors: lower case, punctuation dropped, spaces as hyphens).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const PAGES = [
  'README.md', 'CHANGELOG.md', 'deploy/README.md', 'bench/README.md',
  ...readdirSync(join(ROOT, 'docs')).map((f) => `docs/${f}`),
  ...readdirSync(join(ROOT, 'bench/reports')).filter((f) => f.endsWith('.md')).map((f) => `bench/reports/${f}`),
].filter((p) => p.endsWith('.md'));

/** GitHub's anchor of a heading. */
function anchorOf(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

function anchorsOf(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchorOf(m[1])));
}

describe.each(PAGES)('%s', (page) => {
  it('links to files and headings that exist', () => {
    const text = readFileSync(join(ROOT, page), 'utf8').replace(/```[\s\S]*?```/g, '');
    const broken: string[] = [];
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target)) continue; // https:, mailto:
      const [path, fragment] = target.split('#');
      const file = path === '' ? join(ROOT, page) : resolve(dirname(join(ROOT, page)), path);
      if (!existsSync(file)) {
        broken.push(`${target}: no ${relative(ROOT, file)}`);
        continue;
      }
      if (fragment !== undefined && !statSync(file).isDirectory() && !anchorsOf(file).has(fragment)) broken.push(`${target}: no heading #${fragment}`);
    }
    expect(broken).toEqual([]);
  });
});
