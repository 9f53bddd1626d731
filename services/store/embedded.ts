import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import type { PGliteOptions } from '@electric-sql/pglite';
import { startWorker } from '../common/worker.js';

/** PGlite's WebAssembly and file-system bundle, compiled and read once per process. */
interface PgliteAssets {
  pgliteWasmModule: WasmModule;
  initdbWasmModule: WasmModule;
  fsBundle: Blob;
}

/** What the embedded database's thread is started with. */
export interface EmbeddedStart extends PgliteAssets {
  /** PGlite's data directory; undefined keeps the database in memory. */
  dir: string | undefined;
  /** A file of {@link EmbeddedDatabase.saveImage} an in-memory database starts from. */
  image?: string;
}
export type EmbeddedRequest = { type: 'stop' } | { type: 'save-image'; path: string };
export type EmbeddedReply = { type: 'ready'; conn: string } | { type: 'saved'; error?: string };

export interface EmbeddedDatabase {
  /** `postgres://…` of the loopback port the thread serves. */
  url: string;
  /** The thread PGlite runs on. */
  readonly thread: Worker;
  /** Writes the data directory, as a tar, to `path` (for {@link startEmbedded}'s `image`). */
  saveImage(path: string): Promise<void>;
  /** Closes the server and the database, and ends the thread. */
  stop(): Promise<void>;
}

type WasmModule = NonNullable<PGliteOptions['pgliteWasmModule']>;

/** Node's WebAssembly global (this project's libs do not declare it). */
const wasm = (globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<WasmModule> } }).WebAssembly;

let assets: Promise<PgliteAssets> | undefined;

/**
 * PGlite's assets, compiled once: a thread does not share its parent's module cache, and
 * compiling them in every thread made each database open take 1.1 s longer.
 */
function pgliteAssets(): Promise<PgliteAssets> {
  assets ??= (async () => {
    const dist = dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));
    const [pgliteWasmModule, initdbWasmModule, fsBundle] = await Promise.all([
      readFile(join(dist, 'pglite.wasm')).then((b) => wasm.compile(b)),
      readFile(join(dist, 'initdb.wasm')).then((b) => wasm.compile(b)),
      readFile(join(dist, 'pglite.data')).then((b) => new Blob([b])),
    ]);
    return { pgliteWasmModule, initdbWasmModule, fsBundle };
  })();
  return assets;
}

/** How long a stop may take before the thread is terminated (a close that hangs must not hang shutdown). */
const STOP_TIMEOUT_MS = 10_000;

/**
 * Starts PGlite on a thread of its own (embedded-worker.ts) and answers once it serves.
 * `onLost` hears of a thread that ends without being stopped (every query fails from then
 * on), so that the log says why. `image`: a file of `saveImage` an in-memory database starts
 * from instead of an empty cluster (no initdb: a quarter of the time to start).
 */
export async function startEmbedded(dir: string | undefined, onLost: (why: string) => void, image?: string): Promise<EmbeddedDatabase> {
  const worker: Worker = startWorker(import.meta.url, 'embedded-worker', { workerData: { dir, image, ...(await pgliteAssets()) } satisfies EmbeddedStart });
  let stopping: Promise<void> | undefined;
  return new Promise((resolve, reject) => {
    let ready = false;
    let lost = false;
    const lose = (why: string) => {
      if (!lost && !stopping) onLost(why);
      lost = true;
    };
    worker.once('message', (m: EmbeddedReply) => {
      ready = true;
      if (m.type === 'ready') resolve({ url: `postgres://postgres@${m.conn}/postgres`, thread: worker, saveImage, stop });
    });
    worker.on('error', (err) => (ready ? lose(`embedded database thread failed: ${err.message}`) : reject(err)));
    worker.on('exit', (code) => {
      if (!ready) reject(new Error(`embedded database thread exited (code ${code}) before it served`));
      else lose(`embedded database thread exited (code ${code})`);
    });
  });

  function saveImage(path: string): Promise<void> {
    return new Promise((resolve, reject) => {
      worker.once('message', (m: EmbeddedReply) => (m.type === 'saved' && m.error === undefined ? resolve() : reject(new Error(`embedded database image not saved: ${m.type === 'saved' ? m.error : m.type}`))));
      worker.postMessage({ type: 'save-image', path } satisfies EmbeddedRequest);
    });
  }

  function stop(): Promise<void> {
    stopping ??= new Promise<void>((resolve) => {
      const timer = setTimeout(() => void worker.terminate(), STOP_TIMEOUT_MS);
      worker.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      worker.postMessage({ type: 'stop' } satisfies EmbeddedRequest);
    });
    return stopping;
  }
}
