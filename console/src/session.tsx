/**
 * Who is signed in. The session itself is the server's (an HttpOnly cookie the page cannot read);
 * this holds what `/console/session` said of it, and the message to show when it ends.
 */
import { createContext, useCallback, useContext, useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { currentSession, signIn as openSession, signOut as endSession, type SessionInfo } from './api/session.js';
import { setSessionEndedListener } from './api/transport.js';

type State =
  | { readonly kind: 'loading' }
  | { readonly kind: 'signed-out'; readonly message?: string }
  | { readonly kind: 'signed-in'; readonly session: SessionInfo };

interface SessionContext {
  readonly state: State;
  signIn(apiKey: string): Promise<void>;
  signOut(): Promise<void>;
}

const Context = createContext<SessionContext | null>(null);

export function SessionProvider({ children }: { children: ReactNode }) {
  const [state, setState] = useState<State>({ kind: 'loading' });
  const queries = useQueryClient();
  // Set while the user signs out and after: a query still in flight then comes back
  // `unauthenticated`, which is the sign-out itself, not a session that ended on its own.
  const signingOut = useRef(false);

  useEffect(() => {
    let live = true;
    currentSession().then(
      (session) => live && setState(session === null ? { kind: 'signed-out' } : { kind: 'signed-in', session }),
      (err: unknown) => live && setState({ kind: 'signed-out', message: `Could not reach the control plane: ${(err as Error).message}` }),
    );
    setSessionEndedListener((message) => {
      if (signingOut.current) return;
      queries.clear();
      setState({ kind: 'signed-out', message: `Your session has ended: ${message}` });
    });
    return () => {
      live = false;
    };
  }, [queries]);

  const signIn = useCallback(async (apiKey: string) => {
    const session = await openSession(apiKey);
    signingOut.current = false;
    queries.clear();
    setState({ kind: 'signed-in', session });
  }, [queries]);

  const signOut = useCallback(async () => {
    signingOut.current = true;
    try {
      await queries.cancelQueries();
      await endSession();
    } catch (err) {
      signingOut.current = false;
      throw err;
    }
    queries.clear();
    setState({ kind: 'signed-out', message: 'You have signed out.' });
  }, [queries]);

  const value = useMemo(() => ({ state, signIn, signOut }), [state, signIn, signOut]);
  return <Context.Provider value={value}>{children}</Context.Provider>;
}

export function useSession(): SessionContext {
  const c = useContext(Context);
  if (c === null) throw new Error('useSession outside SessionProvider');
  return c;
}

/** The signed-in session (inside the signed-in part of the app only). */
export function useSignedIn(): SessionInfo {
  const { state } = useSession();
  if (state.kind !== 'signed-in') throw new Error('useSignedIn while not signed in');
  return state.session;
}
