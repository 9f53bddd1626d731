import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { startEmbedded } from './embedded.js';

/** The longest the event loop went without running a 1 ms timer while `work` ran. */
async function longestStall(work: () => Promise<unknown>): Promise<number> {
  let last = performance.now();
  let longest = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 1);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  return longest;
}

describe('embedded database thread', () => {
  it('runs SQL off the calling thread: a 400 ms statement leaves its event loop free', async () => {
    const db = await startEmbedded(undefined, () => {});
    const client = new pg.Client({ connectionString: db.url });
    try {
      await client.connect();
      // pg_sleep holds PGlite's thread; on the calling thread it held this loop for all of it.
      const stall = await longestStall(() => client.query('select pg_sleep(0.4)'));
      expect(stall).toBeLessThan(200);
      expect((await client.query('select 1 + 1 as two')).rows).toEqual([{ two: 2 }]);
    } finally {
      await client.end();
      await db.stop();
    }
  });

  it('reports a thread that ends without being stopped, once, and a stop as nothing lost', async () => {
    const lost: string[] = [];
    const crashed = await startEmbedded(undefined, (why) => lost.push(why));
    await crashed.thread.terminate();
    await new Promise((resolve) => setImmediate(resolve));
    expect(lost).toEqual([expect.stringMatching(/^embedded database thread exited \(code \d+\)$/)]);

    const stopped = await startEmbedded(undefined, (why) => lost.push(why));
    await stopped.stop();
    await stopped.stop(); // a second stop is the first one's
    expect(lost).toHaveLength(1);
  });
});
