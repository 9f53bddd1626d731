/**
 * The tenants' committed revisions as this process knows them from CHANGE_CHANNEL wake-ups
 * (other processes' commits through PostgreSQL NOTIFY, this process's own delivered at once by
 * runWrite), so that the decision path and the Watch streams need not ask the database on every
 * call. A revision is only trusted while the LISTEN connection has stayed up since it was
 * learnt (same `epoch`, `live`): any later commit would then have been notified. Otherwise,
 * and for a tenant never heard of, callers ask the database (fail closed) and seed the map.
 */
import type { Database } from '../store/db.js';
import { CHANGE_CHANNEL, type Notifications } from '../store/notifications.js';
import { committedRevision } from '../store/tenants.js';

/** Tenants remembered at most; the oldest learnt are forgotten first (they are asked again). */
const MAX_TENANTS = 200_000;

interface Known {
  revision: number;
  /** The notifications epoch it was learnt in. */
  epoch: number;
}

export type RevisionListener = (tenantId: string, revision: number) => void;

export class KnownRevisions {
  private readonly known = new Map<string, Known>();
  private readonly listeners = new Set<RevisionListener>();

  private readonly notifications: Notifications;

  constructor(private readonly db: Database) {
    const notifications = (this.notifications = db.notifications);
    notifications.subscribe(CHANGE_CHANNEL, (payload) => {
      const at = payload.lastIndexOf(':');
      const revision = Number(payload.slice(at + 1));
      if (at <= 0 || !Number.isSafeInteger(revision)) return;
      this.learn(payload.slice(0, at), revision);
    });
    // Commits may have been missed while the connection was down: forget everything.
    notifications.onResync(() => this.known.clear());
  }

  /** The tenant's committed revision when this process knows it for sure; undefined: ask the database. */
  get(tenantId: string): number | undefined {
    const k = this.known.get(tenantId);
    if (!k || !this.notifications.live || k.epoch !== this.notifications.epoch) return undefined;
    return k.revision;
  }

  /**
   * The tenant's committed revision: the known one, else (or when `ask` is set: a fully
   * consistent read) the database's, which then seeds the map. `not_found` for an unknown tenant.
   */
  async committed(tenantId: string, ask = false): Promise<number> {
    if (!ask) {
      const k = this.get(tenantId);
      if (k !== undefined) return k;
    }
    // Only a read made while listening, and still listening after it, can seed: a commit after
    // the read is then notified.
    const live = this.notifications.live;
    const epoch = this.notifications.epoch;
    const revision = await committedRevision(this.db, tenantId);
    if (live && this.notifications.live && epoch === this.notifications.epoch) this.learn(tenantId, revision, false);
    return Math.max(revision, this.get(tenantId) ?? 0);
  }

  /** Called with every revision learnt from a notification (not from database reads). */
  onCommit(fn: RevisionListener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private learn(tenantId: string, revision: number, notified = true): void {
    const epoch = this.notifications.epoch;
    const k = this.known.get(tenantId);
    if (k && k.epoch === epoch) {
      if (revision > k.revision) k.revision = revision;
    } else {
      if (!k && this.known.size >= MAX_TENANTS) this.known.delete(this.known.keys().next().value as string);
      this.known.set(tenantId, { revision, epoch });
    }
    if (notified) for (const fn of this.listeners) fn(tenantId, revision);
  }
}

const perDatabase = new WeakMap<Database, KnownRevisions>();

/** The process's one KnownRevisions of a database (made on first use). */
export function knownRevisions(db: Database): KnownRevisions {
  let k = perDatabase.get(db);
  if (!k) perDatabase.set(db, (k = new KnownRevisions(db)));
  return k;
}
