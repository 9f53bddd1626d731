import { useEffect, useRef, useState, type FormEvent } from 'react';
import { useSession } from './session.js';

/**
 * The sign-in form: the API key is sent once to `/console/session`, which answers with an
 * HttpOnly session cookie; the field is cleared and the key kept nowhere.
 */
export function SignIn({ message }: { message?: string }) {
  const { signIn } = useSession();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const field = useRef<HTMLInputElement>(null);
  useEffect(() => {
    document.title = 'Sign in · authz console';
    field.current?.focus();
  }, []);

  const submit = async (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    const key = String(new FormData(form).get('api-key') ?? '').trim();
    if (key === '') return setError('Enter an API key.');
    setBusy(true);
    setError(undefined);
    try {
      await signIn(key);
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    } finally {
      form.reset();
    }
  };

  return (
    <main id="main" className="sign-in">
      <h1>authz console</h1>
      {message && <p className="notice" role="status">{message}</p>}
      <form onSubmit={submit} aria-describedby="sign-in-help">
        <label htmlFor="api-key">API key</label>
        <input ref={field} id="api-key" name="api-key" type="password" autoComplete="off" spellCheck={false} required aria-invalid={error !== undefined} aria-errormessage={error ? 'sign-in-error' : undefined} />
        <p id="sign-in-help" className="help">
          A <code>platform</code> or <code>user</code> key. <code>npm start</code> prints one and keeps it in <code>data/bootstrap-api-key</code>.
          The console opens a session with it and does not keep the key.
        </p>
        {error && <p id="sign-in-error" className="error" role="alert">{error}</p>}
        <button type="submit" disabled={busy}>{busy ? 'Signing in…' : 'Sign in'}</button>
      </form>
    </main>
  );
}
