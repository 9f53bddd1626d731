import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * Starts the worker `name` that sits beside the module `from` (its `import.meta.url`): the
 * built `.js` when `from` is built, else the TypeScript source through tsx, which a worker
 * does not inherit from its parent's loader (tests, `npm start`, `npm run sidecar`).
 */
export function startWorker(from: string, name: string, options: WorkerOptions): Worker {
  const source = from.endsWith('.ts');
  const entry = new URL(`./${name}${source ? '.ts' : '.js'}`, from);
  if (!source) return new Worker(entry, options);
  const tsx = pathToFileURL(createRequire(from).resolve('tsx/esm/api')).href;
  const boot = `import(${JSON.stringify(tsx)}).then((m) => { (m.register ?? m.default.register)(); return import(${JSON.stringify(entry.href)}); })`;
  return new Worker(boot, { ...options, eval: true });
}
