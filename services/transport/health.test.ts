import { describe, expect, it } from 'vitest';
import { ReadinessPoller } from './health.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const until = async (cond: () => boolean) => {
  for (const end = Date.now() + 5000; !cond(); await sleep(5)) if (Date.now() > end) throw new Error('timed out');
};

describe('ReadinessPoller', () => {
  it('asks readiness once per interval for all listeners together, and only while someone listens', async () => {
    let calls = 0;
    const poller = new ReadinessPoller(async () => (++calls, true), 20);
    const seen: boolean[][] = [[], [], []];
    const stops = seen.map((list) => poller.subscribe((r) => list.push(r)));
    await until(() => calls >= 3);
    // One call per poll, whatever the number of listeners; each listener hears every result.
    for (const list of seen) expect(list.length).toBe(calls);
    stops.forEach((stop) => stop());
    const after = calls;
    await sleep(80);
    expect(calls).toBe(after);
  });

  it('reports a readiness check that throws as not ready, and keeps polling', async () => {
    let n = 0;
    const poller = new ReadinessPoller(async () => {
      if (++n === 1) throw new Error('database down');
      return true;
    }, 10);
    const seen: boolean[] = [];
    const stop = poller.subscribe((r) => seen.push(r));
    await until(() => seen.length >= 3);
    stop();
    expect(seen[0]).toBe(false);
    expect(seen.slice(1)).toContain(true);
  });
});
