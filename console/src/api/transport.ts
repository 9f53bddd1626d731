/**
 * One Connect transport for the whole console, over the generated `gen/` descriptors: the page
 * calls the control plane's RPCs by the Connect protocol (JSON) on its own origin, and the
 * browser adds the session cookie. No API key ever reaches the page's JavaScript after sign-in.
 */
import { Code, ConnectError, createClient, type Client, type Interceptor } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-web';
import type { DescService } from '@bufbuild/protobuf';

type Listener = (message: string) => void;
let onSessionEnded: Listener = () => {};

/** Called by the session provider: what to do when the server says the session is gone. */
export function setSessionEndedListener(listener: Listener): void {
  onSessionEnded = listener;
}

/** An `unauthenticated` answer means the session has ended: the console goes back to sign-in. */
const sessionGuard: Interceptor = (next) => async (req) => {
  try {
    return await next(req);
  } catch (err) {
    const ce = ConnectError.from(err);
    if (ce.code === Code.Unauthenticated) onSessionEnded(ce.rawMessage);
    throw err;
  }
};

export const transport = createConnectTransport({
  baseUrl: typeof window === 'undefined' ? 'http://127.0.0.1' : window.location.origin,
  interceptors: [sessionGuard],
});

const clients = new Map<DescService, Client<DescService>>();

/** The client of one service (cached: descriptors are constants). */
export function client<T extends DescService>(service: T): Client<T> {
  let c = clients.get(service);
  if (c === undefined) {
    c = createClient(service, transport);
    clients.set(service, c);
  }
  return c as Client<T>;
}

/** A sentence for an error, as a person reads it: what failed and, for a tier refusal, which keys may. */
export function describeError(err: unknown): { title: string; detail: string } {
  const ce = ConnectError.from(err);
  switch (ce.code) {
    case Code.PermissionDenied:
      return { title: 'Not allowed with this key', detail: ce.rawMessage };
    case Code.Unauthenticated:
      return { title: 'Signed out', detail: ce.rawMessage };
    case Code.NotFound:
      return { title: 'Not found', detail: ce.rawMessage };
    case Code.InvalidArgument:
    case Code.FailedPrecondition:
      return { title: 'Rejected', detail: ce.rawMessage };
    case Code.Unavailable:
      return { title: 'The control plane is unavailable', detail: ce.rawMessage };
    default:
      return { title: `Error (${Code[ce.code] ?? ce.code})`, detail: ce.rawMessage };
  }
}
