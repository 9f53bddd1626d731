/**
 * `dist/` as `npm run build` makes it, for the tests that run the build: `npm test` builds first,
 * and a developer running such a test file alone gets a build when dist/ is older than a source.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const buildConfig = JSON.parse(readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8')) as { include: string[] };

/** Source files tsconfig.build.json compiles, each with the dist/ file it becomes. */
export function buildOutputs(): { source: string; output: string }[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? (e.name === 'testdata' ? [] : walk(join(dir, e.name))) : [join(dir, e.name)]));
  const excluded = (f: string) => /\.test\.ts$/.test(f) || /\.d\.ts$/.test(f);
  return buildConfig.include
    .flatMap((d) => walk(join(ROOT, d)))
    .filter((f) => f.endsWith('.ts') && !excluded(f))
    .map((source) => ({ source, output: join(ROOT, 'dist', relative(ROOT, source).replace(/\.ts$/, '.js')) }));
}

/** Runs the build when an output is missing or older than its source. */
export function ensureBuild(): void {
  const stale = buildOutputs().filter(({ source, output }) => !existsSync(output) || statSync(output).mtimeMs < statSync(source).mtimeMs);
  if (stale.length > 0) execFileSync(join(ROOT, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'pipe', timeout: 300_000 });
}
