import { Suspense } from 'react';
import { Link, Redirect, Route, Router, Switch, useParams, useRoute } from 'wouter';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { Code, ConnectError } from '@connectrpc/connect';
import { SessionProvider, useSession, useSignedIn } from './session.js';
import { SignIn } from './sign-in.js';
import { TenantProvider, useTenant } from './tenant.js';
import { Loading } from './components/states.js';
import { TENANT_VIEWS } from './views/registry.js';
import { Tenants } from './views/tenants.js';

/** Errors a retry cannot mend are not retried. */
const FINAL = new Set([Code.Unauthenticated, Code.PermissionDenied, Code.NotFound, Code.InvalidArgument, Code.FailedPrecondition]);

export function newQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      queries: {
        staleTime: 10_000,
        refetchOnWindowFocus: false,
        retry: (count, err) => count < 2 && !(err instanceof ConnectError && FINAL.has(err.code)),
      },
    },
  });
}

export function App({ queryClient = newQueryClient() }: { queryClient?: QueryClient }) {
  return (
    <QueryClientProvider client={queryClient}>
      <SessionProvider>
        <Router base="/console">
          <Gate />
        </Router>
      </SessionProvider>
    </QueryClientProvider>
  );
}

function Gate() {
  const { state } = useSession();
  if (state.kind === 'loading') return <main id="main"><Loading what="the session" /></main>;
  if (state.kind === 'signed-out') return <SignIn message={state.message} />;
  return <Shell />;
}

function Shell() {
  const session = useSignedIn();
  const { signOut } = useSession();
  return (
    <>
      <a className="skip" href="#main">Skip to content</a>
      <header className="top">
        <Link href="/" className="brand">authz console</Link>
        <p className="who">
          Signed in with a <strong>{session.kind}</strong> key <code>{session.keyId}</code>
        </p>
        <button type="button" onClick={() => void signOut()}>Sign out</button>
      </header>
      <Switch>
        <Route path="/">{session.tenantId ? <Redirect to={`/t/${session.tenantId}`} replace /> : <main id="main" tabIndex={-1}><Tenants /></main>}</Route>
        <Route path="/t/:tenant" nest><TenantArea /></Route>
        <Route><main id="main" tabIndex={-1}><p>No such page. <Link href="/">Back to the tenants</Link>.</p></main></Route>
      </Switch>
    </>
  );
}

function TenantArea() {
  const { tenant } = useParams<{ tenant: string }>();
  return (
    <TenantProvider id={tenant}>
      <div className="tenant-area">
        <TenantNav />
        <main id="main" tabIndex={-1}>
          <Suspense fallback={<Loading what="the view" />}>
            <Switch>
              {TENANT_VIEWS.map((v) => <Route key={v.path} path={`/${v.path}`} component={v.component} />)}
              <Route path="/"><Redirect to={`/${TENANT_VIEWS[0].path}`} replace /></Route>
              <Route><p>No such view.</p></Route>
            </Switch>
          </Suspense>
        </main>
      </div>
    </TenantProvider>
  );
}

function TenantNav() {
  const tenant = useTenant();
  return (
    <nav className="side" aria-label="Tenant">
      <p className="tenant-name">
        <span className="label">Tenant</span> <strong>{tenant.name}</strong> <span className="revision">revision {String(tenant.revision)}</span>
      </p>
      <ul>
        {TENANT_VIEWS.map((v) => (
          <li key={v.path}><NavItem path={v.path} title={v.title} /></li>
        ))}
      </ul>
    </nav>
  );
}

function NavItem({ path, title }: { path: string; title: string }) {
  const [active] = useRoute(`/${path}/*?`);
  return <Link href={`/${path}`} className={active ? 'active' : undefined} aria-current={active ? 'page' : undefined}>{title}</Link>;
}
