/**
 * The decision client of bench/many-tenants.ts, a process of its own so the control plane's CPU
 * is its own: REST `/evaluate` calls over keep-alive connections, `concurrency` in flight, for one
 * phase at a time as the parent asks (IPC), answering each phase's latencies.
 *
 * Whether a call found its tenant's index cached cannot be seen from outside, so the client keeps
 * the cache's own rule beside it: an LRU of `capacity` tenants (SERVICE_INDEX_MAX_ROWS ÷ rows a
 * tenant), touched as each call is sent. A call to a tenant inside it is counted as a hit, any
 * other as a build (`cold` the first time the tenant is asked, `evicted` after), and a call to a
 * tenant whose build another call started and has not answered yet as `joined` (it waits for
 * that build, its own tenant's). The parent checks the prediction against the control plane's
 * own count of builds (indexes held + evictions).
 */
import { Agent, request } from 'node:http';
import { idOf, tenantOfRank, type TenantShape } from './many-tenants-seed.js';

export interface ClientConfig {
  url: string;
  key: string;
  tenants: number;
  shape: TenantShape;
  /** Tenants the index cache holds (SERVICE_INDEX_MAX_ROWS ÷ rows a tenant). */
  capacity: number;
}

export type Phase =
  /** Tenants drawn by a Zipf law of exponent `s` over every tenant (rank r → tenant perm(r)). */
  | { type: 'zipf'; s: number; seconds: number; concurrency: number; seed: number }
  /** Each of `list` once, in order, one call at a time (samples under `label`). */
  | { type: 'serial'; list: number[]; label: string }
  /**
   * `hotConcurrency` calls in flight on tenants drawn uniformly from `hot` (warmed first), and
   * `coldConcurrency` more on `cold` in turn (each one a build): the hot calls' latency with and
   * without builds around them.
   */
  | { type: 'mixed'; hot: number[]; cold: number[]; hotConcurrency: number; coldConcurrency: number; seconds: number; seed: number };

export type Samples = Record<string, number[]>;
export type PhaseReport = { type: 'done'; samples: Samples; calls: number; allowed: number; errors: string[]; seconds: number; coldUsed?: number };

const config = JSON.parse(process.argv[2]) as ClientConfig;
const agent = new Agent({ keepAlive: true, maxSockets: 128 });
const target = new URL('/evaluate', config.url);

/** A small deterministic generator (mulberry32), so two runs ask the same things. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ACTIONS = ['read', 'edit', 'delete'];

/** One decision's body in tenant `t`: a subject of the tenant, in its team's scope, on a doc. */
function body(t: number, rand: () => number): string {
  const s = 1 + Math.floor(rand() * config.shape.subjects);
  const r = 1 + Math.floor(rand() * config.shape.resources);
  return JSON.stringify({
    actor: { subjectId: idOf('subject', t, s) },
    scopeId: idOf('scope', t, (s % 3) + 1),
    action: ACTIONS[Math.floor(rand() * 3)],
    resource: { resourceId: idOf('resource', t, r) },
  });
}

let allowed = 0;
let calls = 0;
const errors: string[] = [];

function evaluate(payload: string): Promise<number> {
  const t0 = performance.now();
  return new Promise((done) => {
    const req = request(target, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'x-api-key': config.key, 'content-length': Buffer.byteLength(payload) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        calls++;
        if (res.statusCode !== 200) {
          if (errors.length < 10) errors.push(`${res.statusCode} ${text.slice(0, 200)}`);
        } else if (text.includes('"allowed":true')) allowed++;
        done(performance.now() - t0);
      });
    });
    req.on('error', (e) => {
      if (errors.length < 10) errors.push(String(e));
      done(performance.now() - t0);
    });
    req.end(payload);
  });
}

/** The cache's rule, kept beside it: least recently asked tenants leave first. */
class Lru {
  private readonly m = new Map<number, true>();
  constructor(private readonly capacity: number) {}
  /** Whether `t` was inside; it is the most recent after. */
  touch(t: number): boolean {
    const hit = this.m.delete(t);
    this.m.set(t, true);
    if (this.m.size > this.capacity) this.m.delete(this.m.keys().next().value as number);
    return hit;
  }
}

const lru = new Lru(config.capacity);
const asked = new Set<number>();
/** Tenants whose build a call started, until that call is answered. */
const building = new Set<number>();

function zipfSampler(n: number, s: number, rand: () => number): () => number {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let r = 0; r < n; r++) cdf[r] = sum += 1 / Math.pow(r + 1, s);
  for (let r = 0; r < n; r++) cdf[r] /= sum;
  return () => {
    const u = rand();
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    return tenantOfRank(lo, n);
  };
}

async function runPhase(p: Phase): Promise<PhaseReport> {
  allowed = 0;
  calls = 0;
  errors.length = 0;
  const samples: Samples = {};
  const add = (k: string, ms: number) => (samples[k] ??= []).push(ms);
  const t0 = performance.now();
  let coldUsed: number | undefined;
  if (p.type === 'zipf') {
    const rand = rng(p.seed);
    const next = zipfSampler(config.tenants, p.s, rand);
    const end = performance.now() + p.seconds * 1000;
    await Promise.all(Array.from({ length: p.concurrency }, async () => {
      while (performance.now() < end) {
        const t = next();
        const inside = lru.touch(t);
        const kind = building.has(t) ? 'joined' : inside ? 'hit' : asked.has(t) ? 'evicted' : 'cold';
        asked.add(t);
        const builds = kind === 'cold' || kind === 'evicted';
        if (builds) building.add(t);
        add(kind, await evaluate(body(t, rand)));
        if (builds) building.delete(t);
      }
    }));
  } else if (p.type === 'serial') {
    const rand = rng(1);
    for (const t of p.list) {
      lru.touch(t);
      asked.add(t);
      add(p.label, await evaluate(body(t, rand)));
    }
  } else {
    const rand = rng(p.seed);
    for (const t of p.hot) {
      lru.touch(t);
      await evaluate(body(t, rand));
    }
    const end = performance.now() + p.seconds * 1000;
    let c = 0;
    const hot = Array.from({ length: p.hotConcurrency }, async () => {
      while (performance.now() < end) {
        const t = p.hot[Math.floor(rand() * p.hot.length)];
        lru.touch(t);
        add('hot', await evaluate(body(t, rand)));
      }
    });
    const cold = Array.from({ length: p.coldConcurrency }, async () => {
      while (performance.now() < end && c < p.cold.length) {
        const t = p.cold[c++];
        lru.touch(t);
        asked.add(t);
        add('build', await evaluate(body(t, rand)));
      }
    });
    await Promise.all([...hot, ...cold]);
    coldUsed = c;
  }
  return { type: 'done', samples, calls, allowed, errors: [...errors], seconds: (performance.now() - t0) / 1000, coldUsed };
}

process.on('message', (p: Phase) => {
  runPhase(p).then((r) => process.send!(r), (e) => process.send!({ type: 'done', samples: {}, calls, allowed, errors: [String(e)], seconds: 0 }));
});
process.send!({ type: 'ready' });
