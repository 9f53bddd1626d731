/**
 * Console sessions: a person signs in once with a `user` or `platform` API key and the browser
 * then carries a cookie instead of the key. The cookie holds a random id (`azs_` + 32 random
 * bytes); the database holds only its SHA-256 (migration 0007), the key's id and prefix, and
 * the times. Every request made with the cookie reads its row (no in-process copy: a sign-out
 * or a timeout on one replica holds on every other at once) and verifies the key it was opened
 * with through the key cache, which the `authz_keys` NOTIFY keeps exact: a revoked or expired
 * key ends its sessions on every replica as soon as it ends the key's own requests. The
 * principal of a session is its key's principal, so it reaches exactly what the key reaches.
 *
 * A session ends at `expiresAt` (the absolute lifetime from sign-in, no later than the key's own
 * expiry), after `idleMs` without a request, at sign-out, or when its key stops verifying; an
 * ended session met by a request is deleted there, the rest by the periodic sweep.
 * `last_seen_at` is written at most once per `touchMs` per session, not on every request.
 */
import { hash, randomBytes } from 'node:crypto';
import { Code } from '@connectrpc/connect';
import { ErrorReason } from '../../../gen/authz/v1/error_reason_pb.js';
import type { Database } from '../../store/db.js';
import { deleteEndedSessions, deleteSession, insertSession, sessionByHash, touchSession } from '../../store/sessions.js';
import { connectErrorWithInfo } from '../../transport/errors.js';
import { candidateById, candidatesWithPrefix, matchKey, plausibleSecret, prefixOf, secretDigest } from './key-store.js';
import type { Principal } from './principal.js';

/** The cookie's name: with the `__Host-` prefix behind TLS (the browser then refuses it from any other host or without Secure). */
export const SESSION_COOKIE = 'authz_session';
export const SECURE_SESSION_COOKIE = '__Host-authz_session';

const SESSION_PREFIX = 'azs_';
const SESSION_ID = /^azs_[A-Za-z0-9_-]{43}$/;

/** Longest interval between two `last_seen_at` writes of one session. */
const MAX_TOUCH_MS = 60_000;

export interface SessionSettings {
  /** A session unused for this long ends, ms. */
  idleMs: number;
  /** A session ends this long after sign-in whatever its use, ms. */
  maxMs: number;
  /** The listener speaks TLS: the cookie is `Secure` (and `__Host-`), and an `Origin` must be `https:`. */
  secure: boolean;
  /** The clock (epoch ms); tests move it. */
  now?: () => number;
}

/** What the sessions need of the key cache: a key verified again by its id (CachedKeyVerifier). */
export interface KeyIdVerifier {
  verifyKeyId(prefix: string, keyId: string): Principal | null | Promise<Principal | null>;
}

/** A session just opened: the id goes into the cookie and nowhere else. */
export interface OpenedSession {
  id: string;
  principal: Principal;
  expiresAt: Date;
}

/** The SHA-256 (hex) of a session id: what the database finds it by. */
export function sessionHash(id: string): string {
  return hash('sha256', id, 'hex');
}

const unauthenticated = (message: string) => connectErrorWithInfo(message, Code.Unauthenticated, ErrorReason.UNAUTHENTICATED);

export class Sessions {
  readonly cookieName: string;
  readonly secure: boolean;
  readonly idleMs: number;
  readonly maxMs: number;
  /** At most one `last_seen_at` write per session per this many ms. */
  readonly touchMs: number;
  /** The clock (epoch ms). */
  readonly now: () => number;

  constructor(private readonly db: Database, private readonly keys: KeyIdVerifier, settings: SessionSettings) {
    this.idleMs = settings.idleMs;
    this.maxMs = settings.maxMs;
    this.secure = settings.secure;
    this.cookieName = settings.secure ? SECURE_SESSION_COOKIE : SESSION_COOKIE;
    this.touchMs = Math.min(MAX_TOUCH_MS, Math.floor(settings.idleMs / 10));
    this.now = settings.now ?? Date.now;
  }

  /**
   * Opens a session for the API key `secret`: `unauthenticated` for an unknown, revoked or
   * expired key, `permission_denied` for a service key (sessions are for people).
   */
  async open(secret: string): Promise<OpenedSession> {
    const now = this.now();
    // Read from the database, not the cache: sign-in is rare and needs the key's expiry.
    const candidates = plausibleSecret(secret) ? await candidatesWithPrefix(this.db, prefixOf(secret)) : [];
    const principal = matchKey(candidates, secretDigest(secret), now);
    if (!principal) throw unauthenticated('unknown, revoked or expired API key');
    if (principal.kind === 'service') {
      throw connectErrorWithInfo('a service key cannot open a console session: sessions are for people (user or platform keys)', Code.PermissionDenied, ErrorReason.TIER);
    }
    const keyExpiresAt = candidateById(candidates, principal.keyId)?.expiresAt ?? Number.POSITIVE_INFINITY;
    const expiresAt = new Date(Math.min(now + this.maxMs, keyExpiresAt));
    const id = SESSION_PREFIX + randomBytes(32).toString('base64url');
    await insertSession(this.db, sessionHash(id), {
      keyId: principal.keyId, keyPrefix: prefixOf(secret), createdAt: new Date(now), lastSeenAt: new Date(now), expiresAt,
    });
    return { id, principal, expiresAt };
  }

  /**
   * The principal of a live session: its key's, verified again now. Null when the id is not a
   * session's, or the session has ended (it is then deleted).
   */
  async principal(id: string): Promise<Principal | null> {
    return (await this.live(id))?.principal ?? null;
  }

  /** principal(), with when the session ends at the latest. */
  async live(id: string): Promise<{ principal: Principal; expiresAt: Date } | null> {
    if (!SESSION_ID.test(id)) return null;
    const idHash = sessionHash(id);
    const s = await sessionByHash(this.db, idHash);
    if (s === undefined) return null;
    const now = this.now();
    const ended = now >= s.expiresAt.getTime() || now - s.lastSeenAt.getTime() >= this.idleMs;
    const principal = ended ? null : await this.keys.verifyKeyId(s.keyPrefix, s.keyId);
    if (principal === null) {
      await deleteSession(this.db, idHash);
      return null;
    }
    if (now - s.lastSeenAt.getTime() >= this.touchMs) await touchSession(this.db, idHash, new Date(now), new Date(now - this.touchMs));
    return { principal, expiresAt: s.expiresAt };
  }

  /** Ends a session (sign-out); nothing happens for an id that is not a live session's. */
  async end(id: string): Promise<void> {
    if (SESSION_ID.test(id)) await deleteSession(this.db, sessionHash(id));
  }

  /** Deletes every session that has timed out; returns how many. */
  sweep(): Promise<number> {
    const now = this.now();
    return deleteEndedSessions(this.db, new Date(now), new Date(now - this.idleMs));
  }
}

/**
 * The session id in a `Cookie` header (as Node or `Headers` joins repeated ones); undefined
 * without one. Two cookies of the name (one planted by a sibling site under the parent domain)
 * are refused rather than guessed between.
 */
export function sessionCookie(header: string | null | undefined, name: string): string | undefined {
  if (!header) return undefined;
  let found: string | undefined;
  for (const part of header.split(/[;,]/)) {
    const eq = part.indexOf('=');
    if (eq === -1 || part.slice(0, eq).trim() !== name) continue;
    if (found !== undefined) throw unauthenticated(`more than one ${name} cookie: sign out and sign in again`);
    found = part.slice(eq + 1).trim();
  }
  return found;
}

/**
 * The refusal of a cookie-authenticated request that a page of another origin may have made:
 * `Sec-Fetch-Site` other than `same-origin` or `none` (a navigation typed by the user), or an
 * `Origin` other than the request's own `Host` (`https:` behind TLS). Undefined when the request
 * is the server's own origin's. Browsers send `Origin` with every POST, PUT, PATCH and DELETE, and
 * SameSite=Strict keeps the cookie off requests from other sites; this refuses the rest (a
 * sibling origin of the same site, a browser without SameSite).
 */
export function crossOriginRefusal(get: (name: string) => string | null | undefined, secure: boolean): ReturnType<typeof connectErrorWithInfo> | undefined {
  const refuse = (why: string) =>
    connectErrorWithInfo(`a request with the session cookie must come from the console's own origin (${why}); other clients send an API key`, Code.PermissionDenied, ErrorReason.UNSPECIFIED);
  const site = get('sec-fetch-site');
  if (site != null && site !== 'same-origin' && site !== 'none') return refuse(`Sec-Fetch-Site is ${site.slice(0, 40)}`);
  const origin = get('origin');
  if (origin == null) return undefined;
  const host = get('host') ?? get(':authority');
  let from: URL;
  try {
    from = new URL(origin);
  } catch {
    return refuse('Origin is not an origin');
  }
  if (from.protocol !== 'https:' && (secure || from.protocol !== 'http:')) return refuse(`Origin ${origin.slice(0, 200)} is not this server`);
  let own: string | undefined;
  try {
    own = host ? new URL(`${from.protocol}//${host}`).host : undefined;
  } catch {
    own = undefined;
  }
  if (own === undefined || from.host !== own || origin !== from.origin) return refuse(`Origin ${origin.slice(0, 200)} is not this server`);
  return undefined;
}

/** The `Set-Cookie` value that gives the browser a session until `expiresAt` (`id` undefined: that clears it). */
export function sessionSetCookie(sessions: Pick<Sessions, 'cookieName' | 'secure'>, id: string | undefined, maxAgeSeconds = 0): string {
  const attrs = [`${sessions.cookieName}=${id ?? ''}`, 'Path=/', `Max-Age=${id === undefined ? 0 : Math.max(0, maxAgeSeconds)}`, 'HttpOnly', 'SameSite=Strict'];
  if (sessions.secure) attrs.push('Secure');
  return attrs.join('; ');
}
