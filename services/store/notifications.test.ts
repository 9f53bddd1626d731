import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as net from 'node:net';
import pg from 'pg';
import pino from 'pino';
import { Notifications } from './notifications.js';
import { openTestDatabase } from '../../test/harness.js';
import type { Database } from './db.js';

const logger = pino({ level: 'silent' });

async function until(cond: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe.runIf(process.env.DATABASE_URL)('notifications on postgres', () => {
  let db: Database;
  let url: string;
  beforeAll(async () => {
    db = await openTestDatabase('postgres');
    url = db.orm.config.get('clientUrl') as string;
  });
  afterAll(() => db?.close());

  it('delivers NOTIFY of other connections by channel, and local deliveries', async () => {
    const n = new Notifications({ url, channels: ['chan_a', 'chan_b'], logger });
    await n.start();
    const got: string[] = [];
    n.subscribe('chan_a', (p) => got.push(`a:${p}`));
    n.subscribe('chan_b', (p) => got.push(`b:${p}`));
    expect(n.live).toBe(true);
    await db.orm.em.fork().execute(`select pg_notify('chan_a', 'x'), pg_notify('chan_b', 'y'), pg_notify('chan_c', 'z')`);
    await until(() => got.length === 2);
    n.deliverLocal('chan_a', 'own');
    expect(got).toEqual(['a:x', 'b:y', 'a:own']);
    await n.close();
    expect(n.live).toBe(false);
  });

  it('is not live while its connection is down, reconnects, and asks subscribers to resync', async () => {
    const n = new Notifications({ url, channels: ['chan_r'], logger, retryMs: 50 });
    await n.start();
    let resyncs = 0;
    n.onResync(() => resyncs++);
    const got: string[] = [];
    n.subscribe('chan_r', (p) => got.push(p));
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await admin.query(`select pg_terminate_backend(pid) from pg_stat_activity where query ilike 'listen%chan_r%' and pid <> pg_backend_pid()`);
      await until(() => !n.live);
      await until(() => n.live);
      expect(resyncs).toBe(1);
      expect(n.epoch).toBe(2);
      await admin.query(`select pg_notify('chan_r', 'after')`);
      await until(() => got.includes('after'));
    } finally {
      await admin.end();
      await n.close();
    }
  });
});

describe.runIf(process.env.DATABASE_URL)('notifications on postgres over a connection that dies silently', () => {
  it('stops being live when heartbeats go unanswered, and listens again through a working path', async () => {
    const db = await openTestDatabase('postgres');
    const target = new URL(db.orm.config.get('clientUrl') as string);
    // A TCP proxy that can stop forwarding without closing anything (a half-open connection).
    let frozen = false;
    const proxy = net.createServer((inbound) => {
      const outbound = net.connect(Number(target.port || 5432), target.hostname);
      inbound.on('data', (d) => !frozen && outbound.write(d));
      outbound.on('data', (d) => !frozen && inbound.write(d));
      const end = () => (inbound.destroy(), outbound.destroy());
      inbound.on('error', end).on('close', end);
      outbound.on('error', end).on('close', end);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
    const via = new URL(target);
    via.host = `127.0.0.1:${(proxy.address() as net.AddressInfo).port}`;
    const n = new Notifications({ url: via.toString(), channels: ['chan_h'], logger, retryMs: 50, heartbeatMs: 100 });
    try {
      await n.start();
      expect(n.live).toBe(true);
      frozen = true;
      const t0 = Date.now();
      await until(() => !n.live, 2_000);
      expect(Date.now() - t0).toBeLessThan(500);
      frozen = false;
      await until(() => n.live && n.epoch === 2, 5_000);
    } finally {
      await n.close();
      proxy.close();
      await db.close();
    }
  });
});

describe('notifications on the embedded database', () => {
  it('is always live and delivers what this process commits', async () => {
    const n = new Notifications({ url: undefined, channels: ['c'], logger });
    await n.start();
    const got: string[] = [];
    n.subscribe('c', (p) => got.push(p));
    expect(n.live).toBe(true);
    n.deliverLocal('c', 't:1');
    expect(got).toEqual(['t:1']);
  });
});
