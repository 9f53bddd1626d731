/**
 * Console sign-in sessions as stored (migration 0007): plain SQL on the connection, outside any
 * transaction, since verification runs it on the request path. Rows are found by `id_hash`, the
 * SHA-256 (hex) of the session id; the id itself never reaches the database.
 */
import type { Database } from './db.js';

export interface StoredSession {
  keyId: string;
  keyPrefix: string;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
}

const exec = (db: Database, sql: string, params: unknown[], method: 'all' | 'run' = 'all') =>
  db.orm.em.getConnection().execute(sql, params, method);

export async function insertSession(db: Database, idHash: string, s: StoredSession): Promise<void> {
  await exec(db, 'insert into sessions (id_hash, key_id, key_prefix, created_at, last_seen_at, expires_at) values (?, ?, ?, ?, ?, ?)',
    [idHash, s.keyId, s.keyPrefix, s.createdAt, s.lastSeenAt, s.expiresAt], 'run');
}

export async function sessionByHash(db: Database, idHash: string): Promise<StoredSession | undefined> {
  const rows = (await exec(db,
    'select key_id as "keyId", key_prefix as "keyPrefix", created_at as "createdAt", last_seen_at as "lastSeenAt", expires_at as "expiresAt" from sessions where id_hash = ?',
    [idHash])) as Record<string, unknown>[];
  if (rows.length === 0) return undefined;
  const r = rows[0];
  return {
    keyId: r.keyId as string,
    keyPrefix: r.keyPrefix as string,
    createdAt: new Date(r.createdAt as string | Date),
    lastSeenAt: new Date(r.lastSeenAt as string | Date),
    expiresAt: new Date(r.expiresAt as string | Date),
  };
}

/** Deletes one session; returns whether it existed. */
export async function deleteSession(db: Database, idHash: string): Promise<boolean> {
  const res = (await exec(db, 'delete from sessions where id_hash = ?', [idHash], 'run')) as { affectedRows?: number };
  return (res.affectedRows ?? 0) > 0;
}

/** Moves `last_seen_at` to `at` unless another request already moved it past `staleBefore` (one write per throttle period). */
export async function touchSession(db: Database, idHash: string, at: Date, staleBefore: Date): Promise<void> {
  await exec(db, 'update sessions set last_seen_at = ? where id_hash = ? and last_seen_at < ?', [at, idHash, staleBefore], 'run');
}

/** Deletes every session past its absolute lifetime or idle since before `idleBefore`; returns how many. */
export async function deleteEndedSessions(db: Database, now: Date, idleBefore: Date): Promise<number> {
  const res = (await exec(db, 'delete from sessions where expires_at <= ? or last_seen_at < ?', [now, idleBefore], 'run')) as { affectedRows?: number };
  return res.affectedRows ?? 0;
}
