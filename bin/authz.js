#!/usr/bin/env node
// The `authz` command (package.json "bin"). In a checkout with its TypeScript sources and tsx
// installed (a clone after `npm install`), it runs the sources, so it never runs a stale build;
// elsewhere (an installation without sources or dev dependencies), the build in dist/ from
// `npm run build`.
import { existsSync } from 'node:fs';

const sources = new URL('../cli/main.ts', import.meta.url);
const built = new URL('../dist/cli/main.js', import.meta.url);

/** tsx's loader, or undefined where tsx is not installed. */
async function tsxLoader() {
  try {
    return await import('tsx/esm/api');
  } catch {
    return undefined;
  }
}

const tsx = existsSync(sources) ? await tsxLoader() : undefined;
if (tsx) {
  tsx.register();
  await import(sources.href);
} else if (existsSync(built)) {
  await import(built.href);
} else {
  process.stderr.write('authz: neither the sources with tsx nor a build were found: run npm install, or npm run build\n');
  process.exitCode = 1;
}
