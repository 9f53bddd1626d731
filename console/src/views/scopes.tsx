/**
 * The tenant's scope tree, opened a level at a time (each level paged by the API), the scope
 * types, and the selected scope's overrides.
 */
import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { ScopeService } from '../../../gen/authz/v1/scope_service_pb.js';
import { ScopeOverrideService } from '../../../gen/authz/v1/scope_override_service_pb.js';
import type { Scope } from '../../../gen/authz/v1/scope_pb.js';
import { client } from '../api/transport.js';
import { Page } from '../components/page.js';
import { PAGE_SIZE, Paged, usePaged } from '../components/paged.js';
import { ScopeTreeNode } from '../components/scope-picker.js';
import { QueryState } from '../components/states.js';
import { formatTime } from '../format.js';
import { useTenant } from '../tenant.js';

export default function Scopes() {
  const tenant = useTenant();
  const [selected, setSelected] = useState<Scope>();
  const root = useQuery({ queryKey: ['scope', tenant.scopeId], queryFn: async () => (await client(ScopeService).getScope({ id: tenant.scopeId })).scope! });
  const types = useScopeTypes();
  const typeName = (id: string) => types.data?.get(id) ?? id;
  return (
    <Page title="Scopes">
      <div className="split">
        <section aria-labelledby="tree-title">
          <h2 id="tree-title">Scope tree</h2>
          <QueryState query={root} what="the root scope">
            {(scope) => (
              <ul className="tree" aria-label="Scopes">
                <ScopeTreeNode scope={scope} note={(s) => typeName(s.typeId)} selected={selected?.id} onSelect={setSelected} open />
              </ul>
            )}
          </QueryState>
        </section>
        <section aria-labelledby="detail-title">
          <h2 id="detail-title">{selected ? `Scope ${selected.name}` : 'Selected scope'}</h2>
          {selected ? <ScopeDetail scope={selected} typeName={typeName} /> : <p className="empty">Select a scope in the tree.</p>}
        </section>
      </div>
      <section aria-labelledby="types-title">
        <h2 id="types-title">Scope types</h2>
        <QueryState query={types} what="scope types">
          {(map) => (
            <ul className="chips">
              {[...map].map(([id, name]) => <li key={id}><strong>{name}</strong> <code>{id}</code></li>)}
            </ul>
          )}
        </QueryState>
      </section>
    </Page>
  );
}

/** Scope type id → name (a tenant has a handful: every page is read). */
function useScopeTypes() {
  return useQuery({
    queryKey: ['scope-types'],
    queryFn: async () => {
      const out = new Map<string, string>();
      let cursor = '';
      do {
        const r = await client(ScopeService).listScopeTypes({ limit: 1000, cursor });
        for (const t of r.scopeTypes) out.set(t.id, t.name);
        cursor = r.nextCursor;
      } while (cursor !== '');
      return out;
    },
  });
}



function ScopeDetail({ scope, typeName }: { scope: Scope; typeName: (id: string) => string }) {
  const overrides = usePaged(['scope-overrides', scope.id], async (cursor) => {
    const r = await client(ScopeOverrideService).listScopeOverrides({ scopeId: scope.id, limit: PAGE_SIZE, cursor });
    return { items: r.scopeOverrides, nextCursor: r.nextCursor };
  });
  return (
    <>
      <dl className="facts">
        <dt>Id</dt><dd><code>{scope.id}</code></dd>
        <dt>Type</dt><dd>{typeName(scope.typeId)}</dd>
        <dt>Parent</dt><dd>{scope.parentId ? <code>{scope.parentId}</code> : 'none (the tenant root)'}</dd>
        <dt>Created</dt><dd>{formatTime(scope.createdAt)} by <code>{scope.createdBy}</code></dd>
      </dl>
      <h3>Overrides</h3>
      <Paged paged={overrides} what="overrides">
        {(items) => (
          <table>
            <thead><tr><th scope="col">Role</th><th scope="col">Mode</th><th scope="col">Permissions</th></tr></thead>
            <tbody>
              {items.map((o) => (
                <tr key={o.id}><td><code>{o.roleId}</code></td><td>{o.mode}</td><td>{o.permissionIds.map((p) => <code key={p}>{p}</code>)}</td></tr>
              ))}
            </tbody>
          </table>
        )}
      </Paged>
    </>
  );
}
