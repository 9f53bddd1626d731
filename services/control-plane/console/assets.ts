/**
 * The console's static files (the Vite build of `console/`, in `dist/console`), served by the
 * control plane under `/console/` on its one port. Everything is read into memory once at start
 * (a few hundred KiB), with a gzip copy of each compressible file: a request is a map lookup and
 * never touches the file system, so no path it names can reach outside the build.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { NodeServerRequest, NodeServerResponse } from '../../transport/node-types.js';

export const CONSOLE_PREFIX = '/console/';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};
const COMPRESSIBLE = new Set(['.html', '.js', '.css', '.svg', '.json', '.txt']);

/**
 * What every console answer carries. The page runs only its own scripts and styles and talks
 * only to its own origin; no page of another origin may frame it (clickjacking).
 */
const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
};

interface Asset {
  readonly type: string;
  readonly body: Buffer;
  readonly gzip?: Buffer;
  /** Vite names its output by content hash under assets/: such a file never changes. */
  readonly immutable: boolean;
}

export interface ConsoleAssets {
  /** Relative path (`index.html`, `assets/index-abc.js`) → file. */
  readonly files: ReadonlyMap<string, Asset>;
  /** Where the build was read from. */
  readonly dir: string;
}

/** The repository's (or image's) root: the nearest directory above this file with a package.json. */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('no package.json above the console assets module');
    dir = up;
  }
  return dir;
}

/** The default build directory, `dist/console` under the package root. */
export function defaultConsoleDir(): string {
  return join(packageRoot(), 'dist', 'console');
}

function walk(dir: string, out: string[]): void {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path, out);
    else out.push(path);
  }
}

/** The build in `dir`, or undefined when there is none (no index.html). */
export function loadConsoleAssets(dir = defaultConsoleDir()): ConsoleAssets | undefined {
  if (!existsSync(join(dir, 'index.html'))) return undefined;
  const paths: string[] = [];
  walk(dir, paths);
  const files = new Map<string, Asset>();
  for (const path of paths) {
    const rel = relative(dir, path).split(sep).join('/');
    const ext = extname(path);
    const type = TYPES[ext];
    if (type === undefined) continue;
    const body = readFileSync(path);
    const gzip = COMPRESSIBLE.has(ext) && body.length > 512 ? gzipSync(body, { level: 9 }) : undefined;
    files.set(rel, { type, body, gzip: gzip !== undefined && gzip.length < body.length ? gzip : undefined, immutable: rel.startsWith('assets/') });
  }
  return { files, dir };
}

function send(req: NodeServerRequest, res: NodeServerResponse, status: number, asset: Asset, cache: string): void {
  const gz = asset.gzip !== undefined && /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
  const body = gz ? asset.gzip! : asset.body;
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    'content-type': asset.type,
    'content-length': String(body.length),
    'cache-control': cache,
    vary: 'accept-encoding',
    ...(gz ? { 'content-encoding': 'gzip' } : {}),
  });
  if (req.method === 'HEAD') res.end();
  else res.end(body);
}

function plain(res: NodeServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  const body = Buffer.from(text);
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'text/plain; charset=utf-8', 'content-length': String(body.length), 'cache-control': 'no-store', ...headers });
  res.end(body);
}

/**
 * The handler of `/` (for a browser: `Accept` names text/html), `/console` and every `/console/…`
 * path but the ones the server routes first (`/console/session`): GET and HEAD only. `/` and
 * `/console` redirect to `/console/`; a
 * file of the build is served as is; any other path is the single-page app's own (a view's URL),
 * answered with index.html so that a link to a view loads it.
 */
export function consoleRoute(assets: ConsoleAssets | undefined): (req: NodeServerRequest, res: NodeServerResponse, path: string) => boolean {
  return (req, res, path) => {
    if (path !== '/' && path !== '/console' && !path.startsWith(CONSOLE_PREFIX)) return false;
    // `GET /` from a browser opens the console; any other client gets the server's JSON pointer.
    if (path === '/' && !String(req.headers.accept ?? '').includes('text/html')) return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      plain(res, 405, `${req.method} is not allowed on ${path}; allowed: GET, HEAD\n`, { allow: 'GET, HEAD' });
      return true;
    }
    if (path === '/' || path === '/console') {
      plain(res, 302, `the console is at ${CONSOLE_PREFIX}\n`, { location: CONSOLE_PREFIX });
      return true;
    }
    if (assets === undefined) {
      plain(res, 503, 'the console is not built: run `npm run build:console` (npm install does it) and restart\n');
      return true;
    }
    const rel = path.slice(CONSOLE_PREFIX.length);
    const file = rel === '' ? undefined : assets.files.get(rel);
    if (file !== undefined) {
      send(req, res, 200, file, file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
      return true;
    }
    // A missing hashed asset is a 404 (an old page asking for a file of a former build), not the app.
    if (rel.startsWith('assets/')) {
      plain(res, 404, `no such console file: ${path}\n`);
      return true;
    }
    send(req, res, 200, assets.files.get('index.html')!, 'no-cache');
    return true;
  };
}
