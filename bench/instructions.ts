/**
 * `npm run bench:instructions`: what one decision costs the serving process in instructions,
 * against the constant-answer node:http server of bench:sidecar, counted by valgrind's callgrind.
 *
 * Why: req/s and CPU time on a shared 2-core machine move with whatever else runs (bench:sidecar's
 * per-round ratios span 0.54–0.82 within one run), so a change of a few percent on the decision
 * path cannot be seen there. Instructions executed per request can: each server runs under
 * callgrind with V8 single-threaded (`--single-threaded`: compilation and garbage collection on
 * the main thread, so no helper thread's timing enters the count), is warmed up, then counts
 * `--rounds` rounds of `--requests` requests (`hey -c 10`) between a zero and a dump of the
 * counters. The minimum of the rounds is reported (a round may also hold a major collection);
 * a sidecar round during which its snapshot was reloaded would count the reload and is refused.
 * Work done on a clock is counted per request in proportion to how slowly requests go (V8's and
 * the metrics' timers), so the count rises when the machine is busy: run it on a quiet one and
 * compare builds in one run. The count is of user-space instructions: the kernel's share of a request (the socket write is
 * about half of the constant server's CPU) is the same for every server and not in it, and an
 * instruction is not a fixed time (cache misses), so the ratio is a companion to bench:sidecar's,
 * not a replacement. The servers run at once (each is one thread under valgrind).
 *
 * Needs valgrind and hey (`apt-get install -y valgrind hey`) and `npm run build`.
 * Usage: npm run bench:instructions [-- --rounds 4 --requests 2000 --warmup 24000]
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { EVALUATE, TENANT, scriptedControlPlane } from './decision-tenant.js';
import { freePort } from '../test/processes.js';
import { loadAverageNow, writeResults } from './results-file.js';

const run = promisify(execFile);
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i].replace(/^--/, ''), process.argv[i + 1]);
const ROUNDS = Number(args.get('rounds') ?? 4);
const REQUESTS = Number(args.get('requests') ?? 2000);
const WARMUP = Number(args.get('warmup') ?? 24000);

const dir = mkdtempSync(join(tmpdir(), 'bench-instructions-'));
const children: ChildProcess[] = [];

interface Target {
  name: string;
  /** node's arguments after its options, for the port it is to listen on. */
  argv: (port: number) => string[];
  env: Record<string, string>;
  /** The URL loaded. */
  path: string;
  contentType: string;
  /** A sidecar: its snapshot count must not move during a round. */
  sidecar: boolean;
}

/** Snapshots a sidecar has loaded, from its /metrics. */
async function snapshotsOf(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('authz_sidecar_snapshots_total'));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : NaN;
}

async function measure(t: Target): Promise<{ name: string; perRequest: number[]; refused: number }> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const out = join(dir, t.name.replace(/\W+/g, '-'));
  const child = spawn('valgrind', ['--tool=callgrind', '--smc-check=all-non-file', `--callgrind-out-file=${out}.%p`, process.execPath, '--single-threaded', ...t.argv(port)], {
    cwd: ROOT, env: { ...process.env, ...t.env, SIDECAR_PORT: String(port) }, stdio: ['ignore', 'ignore', 'ignore'],
  });
  children.push(child);
  const ready = t.sidecar ? `${base}/readyz` : base;
  for (let i = 0; ; i++) {
    if (i > 600) throw new Error(`${t.name} did not start under valgrind in 10 minutes`);
    if (child.exitCode !== null) throw new Error(`${t.name} exited (${child.exitCode}) under valgrind`);
    const ok = await fetch(ready).then((r) => r.status === 200, () => false);
    if (ok) break;
    await new Promise((r) => setTimeout(r, 1000));
  }
  const body = join(dir, 'body.json');
  // The warm-up may see a few connections reset: under valgrind an answer can take longer than
  // the server's keep-alive timeout, and hey reuses a connection just as it is closed.
  const hey = async (n: number, strict = true) => {
    const { stdout } = await run('hey', ['-n', String(n), '-c', '10', '-m', 'POST', '-T', t.contentType, '-D', body, `${base}${t.path}`], { maxBuffer: 1 << 24 });
    if (strict && !stdout.includes(`[200]\t${n} responses`)) throw new Error(`${t.name}: not every answer was 200:\n${stdout}`);
  };
  await hey(WARMUP, false);
  const perRequest: number[] = [];
  let refused = 0;
  for (let r = 0; r < ROUNDS; r++) {
    const before = t.sidecar ? await snapshotsOf(base) : 0;
    await run('callgrind_control', ['-z', String(child.pid)]);
    await hey(REQUESTS);
    await run('callgrind_control', ['-d', String(child.pid)]);
    const after = t.sidecar ? await snapshotsOf(base) : 0;
    // The dump is written asynchronously by the valgrind process: wait for its summary line.
    let summary: number | undefined;
    for (let i = 0; i < 120 && summary === undefined; i++) {
      await new Promise((res) => setTimeout(res, 500));
      const dumps = readdirSync(dir).filter((f) => f.startsWith(`${out.slice(dir.length + 1)}.${child.pid}.`));
      for (const f of dumps) {
        const m = /^summary: (\d+)/m.exec(readFileSync(join(dir, f), 'utf8'));
        if (m) {
          summary = Number(m[1]);
          rmSync(join(dir, f));
        }
      }
    }
    if (summary === undefined) throw new Error(`${t.name}: no callgrind dump`);
    if (after !== before) refused++;
    else perRequest.push(summary / REQUESTS);
  }
  child.kill('SIGKILL');
  return { name: t.name, perRequest, refused };
}

async function main() {
  const loadAtStart = loadAverageNow();
  for (const tool of ['valgrind', 'callgrind_control', 'hey']) {
    await run('sh', ['-c', `command -v ${tool}`]).catch(() => {
      throw new Error(`${tool} is not installed: apt-get install -y valgrind hey`);
    });
  }
  writeFileSync(join(dir, 'body.json'), JSON.stringify(EVALUATE));
  // Work that runs on a clock (a heartbeat's handling) is counted per request in proportion to
  // how slowly the requests go, so heartbeats are rare here: every 8 s, just inside the 10 s a
  // sidecar waits on a silent stream before it reconnects (and reloads the snapshot, which
  // refuses the round; at 30 s every sidecar round but the warmest is refused).
  const cp = await scriptedControlPlane(10_000, 8_000);
  const sidecarEnv = {
    SIDECAR_CONTROL_PLANE_URL: cp.url, SIDECAR_API_KEY: 'azk_bench', SIDECAR_TENANT_ID: TENANT, SIDECAR_LOG_LEVEL: 'warn',
    // Under valgrind the process runs ~50× slower: heartbeats must not look late.
    SIDECAR_MAX_STALENESS_MS: '600000',
  };
  const sidecar = join(ROOT, 'dist/cmd/sidecar/main.js');
  const targets: Target[] = [
    { name: 'node:http constant', argv: (port) => ['--import', 'tsx', 'bench/constant-servers.ts', 'http', String(port)], env: {}, path: '/evaluate', contentType: 'application/json', sidecar: false },
    { name: 'sidecar REST', argv: () => [sidecar], env: sidecarEnv, path: '/evaluate', contentType: 'application/json', sidecar: true },
    { name: 'sidecar Connect JSON', argv: () => [sidecar], env: sidecarEnv, path: '/authz.v1.DecisionService/Evaluate', contentType: 'application/json', sidecar: true },
  ];
  const results = await Promise.all(targets.map(measure));
  await cp.close();
  const min = (xs: number[]) => Math.min(...xs);
  const baseline = min(results[0].perRequest);
  const summary: Record<string, unknown> = { rounds: ROUNDS, requests: REQUESTS, warmup: WARMUP };
  for (const r of results) {
    const m = min(r.perRequest);
    summary[r.name] = { instructionsPerRequest: Math.round(m), rounds: r.perRequest.map(Math.round), refusedRounds: r.refused, ratio: Number((baseline / m).toFixed(3)) };
    console.log(`${r.name}: ${Math.round(m)} instructions per request (rounds ${r.perRequest.map((x) => Math.round(x)).join(', ')}${r.refused ? `; ${r.refused} refused: snapshot reloaded` : ''}); constant ÷ this: ${(baseline / m).toFixed(2)}`);
  }
  const command = ['npm run bench:instructions --', ...process.argv.slice(2)].join(' ').replace(/ --$/, '');
  console.log(`wrote ${writeResults('instructions', { command, results: summary, baseline: { nodeHttpInstructionsPerRequest: Math.round(baseline) }, loadAtStart })}`);
}

main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => {
    for (const c of children) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
