/**
 * A health check for the image's three entry points, run inside the container:
 *
 *   node dist/cmd/healthcheck/main.js [--wait SECONDS] [--pid PID] [URL]
 *
 * It has two users, and only two: the image's Docker HEALTHCHECK (no URL) and the
 * `container`-mode sidecar's postStart wait (`--wait` and a URL), a hook that runs inside the
 * container and so asks the loopback decision listener. The injected sidecar's kubelet probes are
 * HTTP probes on its probe port (SIDECAR_PROBE_PORT) and do not start a process.
 *
 * With a URL it asks that URL. Without one it finds the entry point the container runs (PID 1, else the first process running
 * one of them, or `--pid`), reads that process's settings the way it did (its environment and its
 * flags) and asks its `/healthz`: the image's Docker HEALTHCHECK, whichever command it was started
 * with. Exit 0 when the answer is 200; 1 otherwise, with the reason on stderr. `--wait` retries
 * until 200 or that many seconds have passed (the `container`-mode sidecar's postStart hook).
 * HTTPS (the injector, and the control plane with SERVICE_TLS_CERT_FILE) is not verified: the
 * target is a process of this container, and their certificates name their Services, not loopback.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { loadConfig } from '../../services/control-plane/config.js';
import { loadSidecarConfig } from '../../sidecar/config.js';
import { loadInjectorConfig } from '../../services/injector/config.js';

/** Entry points by the path that ends their script argument (sources or `dist/`), and how to find their /healthz. */
const ENTRIES: { script: RegExp; url: (env: Record<string, string | undefined>, argv: string[]) => string }[] = [
  { script: /cmd\/control-plane\/main\.[jt]s$/, url: (env, argv) => controlPlaneUrl(loadConfig(env, argv)) },
  { script: /cmd\/sidecar\/main\.[jt]s$/, url: (env, argv) => local('http', loadSidecarConfig(env, argv)) },
  { script: /cmd\/injector\/main\.[jt]s$/, url: (env, argv) => local('https', loadInjectorConfig(env, argv)) },
];

/** The control plane serves TLS when given a certificate (SERVICE_TLS_CERT_FILE), plain text otherwise. */
function controlPlaneUrl(c: ReturnType<typeof loadConfig>): string {
  return local(c.tlsCertFile === undefined ? 'http' : 'https', c);
}

function local(scheme: 'http' | 'https', c: { host: string; port: number }): string {
  const host = c.host === '0.0.0.0' ? '127.0.0.1' : c.host === '::' ? '[::1]' : c.host.includes(':') ? `[${c.host}]` : c.host;
  return `${scheme}://${host}:${c.port}/healthz`;
}

const readArgs = (pid: string, file: 'cmdline' | 'environ') => readFileSync(`/proc/${pid}/${file}`, 'utf8').split('\0').filter((s) => s !== '');

/** The /healthz URL of the entry point running as `pid` (or undefined when it runs none of them). */
function healthUrlOf(pid: string): string | undefined {
  let cmdline: string[];
  try {
    cmdline = readArgs(pid, 'cmdline');
  } catch {
    return undefined;
  }
  for (let i = 0; i < cmdline.length; i++) {
    const entry = ENTRIES.find((e) => e.script.test(cmdline[i]));
    if (!entry) continue;
    let env: Record<string, string | undefined>;
    try {
      env = Object.fromEntries(readArgs(pid, 'environ').map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
    } catch {
      env = process.env; // not readable (another user): the container's environment is the same
    }
    return entry.url(env, cmdline.slice(i + 1));
  }
  return undefined;
}

function findTarget(pid: string | undefined): string {
  if (pid !== undefined) {
    const url = healthUrlOf(pid);
    if (!url) throw new Error(`process ${pid} runs none of the entry points`);
    return url;
  }
  const fromInit = healthUrlOf('1');
  if (fromInit) return fromInit;
  // Under an init process (docker run --init, tini) the service is not PID 1.
  for (const p of readdirSync('/proc').filter((d) => /^\d+$/.test(d) && d !== String(process.pid))) {
    const url = healthUrlOf(p);
    if (url) return url;
  }
  throw new Error('no control plane, sidecar or injector process found');
}

/** The status code of a GET, or an error after `timeoutMs`. */
function statusOf(url: string, timeoutMs = 2000): Promise<number> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const request = u.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = request(u, { method: 'GET', timeout: timeoutMs, rejectUnauthorized: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

function parseArgs(argv: string[]): { url?: string; waitSeconds: number; pid?: string } {
  const out: { url?: string; waitSeconds: number; pid?: string } = { waitSeconds: 0 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--wait' || a === '--pid') {
      const v = argv[++i];
      if (v === undefined || !/^\d+$/.test(v)) throw new Error(`${a} needs a whole number, got ${JSON.stringify(v)}`);
      if (a === '--wait') out.waitSeconds = Number(v);
      else out.pid = v;
    } else if (/^https?:\/\//.test(a) && out.url === undefined) out.url = a;
    else throw new Error(`unexpected argument ${JSON.stringify(a)} (usage: [--wait SECONDS] [--pid PID] [URL])`);
  }
  return out;
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  const url = args.url ?? findTarget(args.pid);
  const end = Date.now() + args.waitSeconds * 1000;
  for (;;) {
    let why: string;
    try {
      const status = await statusOf(url);
      if (status === 200) return 0;
      why = `${url} answered ${status}`;
    } catch (err) {
      why = `${url}: ${err instanceof Error ? err.message : String(err)}`;
    }
    if (Date.now() >= end) {
      process.stderr.write(`unhealthy: ${why}\n`);
      return 1;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`healthcheck: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  },
);
