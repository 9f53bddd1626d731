/**
 * The process's one `LISTEN` connection: PostgreSQL `NOTIFY` wake-ups from every process that
 * writes the database, delivered to in-process subscribers by channel. A notification is only
 * a wake-up: the tables (the change log, the keys) stay the truth, and a subscriber that caches
 * anything must revalidate after `onResync` (the connection was lost, so notifications may have
 * been missed) and must not trust its cache while `live` is false (fail closed).
 *
 * On the embedded database this process is the only writer, so nothing is listened to and
 * the write path's `deliverLocal` is the whole feed (always live).
 */
import pg from 'pg';
import type { Logger } from 'pino';

/** The channel a write NOTIFYs after logging a revision; the payload is `<tenantId>:<revision>`. */
export const CHANGE_CHANNEL = 'authz_changes';

/**
 * The channel every write of an API key NOTIFYs, inside its transaction (a trigger on
 * `api_keys`, so no writer can skip it): the payload is the key's `prefix`, or `*` when keys
 * were truncated. Key caches drop what they hold for that prefix.
 */
export const KEY_CHANNEL = 'authz_keys';

export type NoticeHandler = (payload: string) => void;

export interface NotificationsOptions {
  /** `postgres://…` to LISTEN on; undefined for the embedded database (this process is the only writer). */
  url: string | undefined;
  channels: readonly string[];
  logger: Logger;
  /** Delay before reconnecting after the connection is lost, ms. */
  retryMs?: number;
  /**
   * How often the connection is proved alive with a query, ms (default 5,000); one that does not
   * answer within as long again counts as lost, so a connection that died without a TCP error
   * (a half-open socket) stops counting as live within two periods.
   */
  heartbeatMs?: number;
}

export class Notifications {
  private client: pg.Client | undefined;
  private readonly handlers = new Map<string, Set<NoticeHandler>>();
  private readonly resyncHandlers = new Set<() => void>();
  private connected = false;
  private closed = false;
  private retry: NodeJS.Timeout | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  /** Times the connection was (re)established; subscribers may compare to detect a gap. */
  epoch = 0;

  constructor(private readonly opts: NotificationsOptions) {}

  /** Whether every notification committed from now on reaches this process. */
  get live(): boolean {
    return this.opts.url === undefined || this.connected;
  }

  /** Connects and listens; resolves once listening (or rejects when the first attempt fails; retries go on). */
  async start(): Promise<void> {
    if (this.opts.url === undefined) return;
    await this.connect();
  }

  subscribe(channel: string, fn: NoticeHandler): () => void {
    let set = this.handlers.get(channel);
    if (!set) this.handlers.set(channel, (set = new Set()));
    set.add(fn);
    return () => set.delete(fn);
  }

  /** Called after every reconnect: notifications may have been missed while the connection was down. */
  onResync(fn: () => void): () => void {
    this.resyncHandlers.add(fn);
    return () => this.resyncHandlers.delete(fn);
  }

  /**
   * Delivers a notice of this process's own commit at once (the database's copy arrives later
   * and must be harmless to receive twice).
   */
  deliverLocal(channel: string, payload: string): void {
    this.dispatch(channel, payload);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    clearInterval(this.heartbeat);
    const c = this.client;
    this.client = undefined;
    this.connected = false;
    if (c) await c.end().catch(() => undefined);
  }

  private dispatch(channel: string, payload: string): void {
    const set = this.handlers.get(channel);
    if (!set) return;
    for (const fn of set) {
      try {
        fn(payload);
      } catch (err) {
        this.opts.logger.error({ err, channel }, 'notification handler failed');
      }
    }
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.opts.url, keepAlive: true });
    client.on('notification', (n) => this.dispatch(n.channel, n.payload ?? ''));
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, undefined));
    this.client = client;
    try {
      await client.connect();
      for (const ch of this.opts.channels) await client.query(`listen ${pg.escapeIdentifier(ch)}`);
    } catch (err) {
      this.lost(client, err);
      throw err;
    }
    if (this.closed || this.client !== client) return void client.end().catch(() => undefined);
    this.connected = true;
    this.epoch++;
    this.startHeartbeat(client);
    if (this.epoch > 1) this.opts.logger.info('notifications: listening again');
    for (const fn of this.resyncHandlers) {
      try {
        fn();
      } catch (err) {
        this.opts.logger.error({ err }, 'notification resync handler failed');
      }
    }
  }

  /** Queries the connection every heartbeatMs; no answer within as long again: lost. */
  private startHeartbeat(client: pg.Client): void {
    clearInterval(this.heartbeat);
    const period = this.opts.heartbeatMs ?? 5_000;
    let pending = false;
    this.heartbeat = setInterval(() => {
      if (pending || this.client !== client) return;
      pending = true;
      const timer = setTimeout(() => {
        // The socket may never error by itself: cut it.
        (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
        this.lost(client, new Error(`notifications: no answer to a heartbeat within ${period} ms`));
      }, period);
      timer.unref();
      client.query('select 1').then(
        () => {
          pending = false;
          clearTimeout(timer);
        },
        (err: unknown) => {
          clearTimeout(timer);
          this.lost(client, err);
        },
      );
    }, period);
    this.heartbeat.unref();
  }

  private lost(client: pg.Client, err: unknown): void {
    if (this.client !== client) return;
    clearInterval(this.heartbeat);
    this.client = undefined;
    const was = this.connected;
    this.connected = false;
    client.end().catch(() => undefined);
    if (this.closed) return;
    if (was) this.opts.logger.warn({ err }, 'notifications: connection lost; caches fall back to the database until it returns');
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.connect().catch(() => undefined);
    }, this.opts.retryMs ?? 500);
    this.retry.unref();
  }
}
