// @vitest-environment happy-dom
import { afterEach, describe, expect, it, vi } from 'vitest';
import { act, cleanup, render, screen, waitFor } from '@testing-library/react';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { SessionProvider, useSession } from './session.js';

const api = vi.hoisted(() => ({
  currentSession: vi.fn(),
  signIn: vi.fn(),
  signOut: vi.fn(),
  ended: undefined as ((message: string) => void) | undefined,
}));
vi.mock('./api/session.js', () => ({ currentSession: api.currentSession, signIn: api.signIn, signOut: api.signOut }));
vi.mock('./api/transport.js', () => ({ setSessionEndedListener: (l: (message: string) => void) => (api.ended = l) }));

const SESSION = { keyId: 'k', kind: 'platform', expiresAt: '2030-01-01T00:00:00.000Z', idleTimeoutSeconds: 900 };

afterEach(() => {
  cleanup();
  vi.resetAllMocks();
});

let session: ReturnType<typeof useSession> | undefined;
function Probe() {
  session = useSession();
  const s = session.state;
  return <p role="status">{s.kind === 'signed-out' ? (s.message ?? 'signed out') : s.kind}</p>;
}

async function signedIn() {
  api.currentSession.mockResolvedValue(SESSION);
  render(
    <QueryClientProvider client={new QueryClient()}>
      <SessionProvider>
        <Probe />
      </SessionProvider>
    </QueryClientProvider>,
  );
  // The status shows `loading` until the session is read.
  await waitFor(() => expect(screen.getByRole('status').textContent).toBe('signed-in'));
}

describe('SessionProvider', () => {
  it('a query refused while the user signs out does not turn the sign-out into an ended session', async () => {
    await signedIn();
    let finish!: () => void;
    api.signOut.mockReturnValue(new Promise<void>((r) => (finish = r)));
    let out!: Promise<void>;
    act(() => {
      out = session!.signOut();
    });
    // A query in flight comes back unauthenticated: the server already dropped the session.
    act(() => api.ended!('missing credentials'));
    await act(async () => {
      finish();
      await out;
    });
    expect(screen.getByRole('status').textContent).toBe('You have signed out.');
    // And after the sign-out, too.
    act(() => api.ended!('missing credentials'));
    expect(screen.getByRole('status').textContent).toBe('You have signed out.');
  });

  it('a session that ends on its own says so', async () => {
    await signedIn();
    act(() => api.ended!('the session expired'));
    expect(screen.getByRole('status').textContent).toBe('Your session has ended: the session expired');
  });

  it('a sign-out that fails leaves the session able to end on its own', async () => {
    await signedIn();
    api.signOut.mockRejectedValue(new Error('offline'));
    await act(async () => {
      await expect(session!.signOut()).rejects.toThrow('offline');
    });
    expect(screen.getByRole('status').textContent).toBe('signed-in');
    act(() => api.ended!('the session expired'));
    expect(screen.getByRole('status').textContent).toBe('Your session has ended: the session expired');
  });
});
