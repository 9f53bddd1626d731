/**
 * Sign-in and sign-out: `/console/session` is a plain HTTP route beside the RPCs (it sets and
 * clears the session cookie, which an RPC cannot), so this is the one place the console calls
 * `fetch` itself. The key travels once, in `x-api-key`, and is not kept anywhere.
 */
export interface SessionInfo {
  readonly keyId: string;
  /** The key's kind, its tier: `platform` or `user`. */
  readonly kind: string;
  /** Set for a key of one tenant. */
  readonly tenantId?: string;
  readonly environmentId?: string;
  readonly subjectId?: string;
  readonly expiresAt: string;
  readonly idleTimeoutSeconds: number;
}

export const SESSION_URL = '/console/session';

async function answer(res: Response): Promise<SessionInfo> {
  const body = (await res.json().catch(() => ({}))) as { message?: string } & Partial<SessionInfo>;
  if (!res.ok) throw new Error(body.message ?? `${res.status} ${res.statusText}`);
  return body as SessionInfo;
}

/** The current session, or null when there is none (401). */
export async function currentSession(): Promise<SessionInfo | null> {
  const res = await fetch(SESSION_URL, { credentials: 'same-origin', headers: { accept: 'application/json' } });
  if (res.status === 401) return null;
  return answer(res);
}

export async function signIn(apiKey: string): Promise<SessionInfo> {
  return answer(await fetch(SESSION_URL, { method: 'POST', credentials: 'same-origin', headers: { 'x-api-key': apiKey, accept: 'application/json' } }));
}

export async function signOut(): Promise<void> {
  await fetch(SESSION_URL, { method: 'DELETE', credentials: 'same-origin' });
}
