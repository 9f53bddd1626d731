/**
 * The `/healthz` poller: a worker thread (its own event loop, so the fuzzer's work on the main
 * thread does not delay it) that asks `GET /healthz` about every 25 ms over a kept-alive
 * connection, one probe at a time, and reports each probe's start and latency.
 */
import { Worker } from 'node:worker_threads';

export interface Probe {
  /** When the probe was sent (ms since epoch). */
  start: number;
  /** Until the whole answer arrived, ms; Infinity when it failed (error text in `error`). */
  latency: number;
  status?: number;
  error?: string;
}

const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const url = new URL('/healthz', workerData.url);
let stopped = false;
let batch = [];
parentPort.on('message', (m) => { if (m === 'stop') { stopped = true; flush(); agent.destroy(); parentPort.close(); } });
function flush() { if (batch.length) { parentPort.postMessage(batch); batch = []; } }
setInterval(flush, 100).unref();
function probe() {
  if (stopped) return;
  const start = Date.now();
  const t0 = process.hrtime.bigint();
  let done = false;
  const finish = (p) => {
    if (done) return;
    done = true;
    batch.push({ start, latency: Number(process.hrtime.bigint() - t0) / 1e6, ...p });
    setTimeout(probe, workerData.intervalMs);
  };
  const req = http.get(url, { agent, timeout: workerData.timeoutMs }, (res) => {
    res.resume();
    res.on('end', () => finish({ status: res.statusCode }));
    res.on('error', (e) => finish({ latency: Infinity, error: String(e) }));
  });
  req.on('timeout', () => { req.destroy(new Error('no answer within ' + workerData.timeoutMs + ' ms')); });
  req.on('error', (e) => finish({ error: String(e && e.message || e), failed: true }));
}
probe();
`;

export interface HealthPoller {
  /** Probes received so far (the worker reports in batches every 100 ms). */
  readonly probes: Probe[];
  /** Waits until the worker has reported every probe started before now. */
  settle(): Promise<void>;
  stop(): Promise<void>;
}

export function startHealthPoller(baseUrl: string, intervalMs = 25, timeoutMs = 5_000): HealthPoller {
  const worker = new Worker(WORKER, { eval: true, workerData: { url: baseUrl, intervalMs, timeoutMs } });
  const probes: Probe[] = [];
  worker.on('message', (batch: (Probe & { failed?: boolean })[]) => {
    for (const p of batch) probes.push(p.failed ? { start: p.start, latency: Infinity, error: p.error } : p);
  });
  worker.on('error', (err) => probes.push({ start: Date.now(), latency: Infinity, error: `poller failed: ${String(err)}` }));
  return {
    probes,
    async settle() {
      const since = Date.now();
      const deadline = since + timeoutMs + 500;
      // The probe in flight at `since` is reported when it ends (at most timeoutMs later).
      while (Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 120));
        const last = probes[probes.length - 1];
        if (last && last.start + (Number.isFinite(last.latency) ? last.latency : 0) >= since) return;
      }
    },
    async stop() {
      worker.postMessage('stop');
      await new Promise<void>((resolve) => {
        worker.once('exit', () => resolve());
        setTimeout(() => void worker.terminate().then(() => resolve()), 2_000);
      });
    },
  };
}
