/**
 * Choosing the scope a view lists (roles, types, resources and policies are defined at one
 * scope each): the scope tree, opened a level at a time and paged like the scopes view, behind a
 * disclosure that names the scope chosen. The choice lives in the URL (`?scope=<id>`), so a link
 * reopens the same listing.
 */
import { useState, type ReactNode } from 'react';
import { useQuery } from '@tanstack/react-query';
import { ScopeService } from '../../../gen/authz/v1/scope_service_pb.js';
import type { Scope } from '../../../gen/authz/v1/scope_pb.js';
import { client } from '../api/transport.js';
import { useTenant } from '../tenant.js';
import { ScopeName } from './names.js';
import { PAGE_SIZE, Paged, usePaged } from './paged.js';
import { useSearchParam } from './search-param.js';
import { QueryState } from './states.js';

/** The scope chosen in the URL, the tenant's root scope by default. */
export function useScopeParam(): [string, (id: string, drop?: readonly string[]) => void] {
  const tenant = useTenant();
  const [scope, setScope] = useSearchParam('scope');
  return [scope ?? tenant.scopeId, (id, drop) => setScope(id === tenant.scopeId ? undefined : id, drop)];
}

export function ScopePicker({ selected, onSelect, open = false }: { selected: string; onSelect: (id: string) => void; open?: boolean }) {
  const tenant = useTenant();
  const root = useQuery({ queryKey: ['scope', tenant.scopeId], queryFn: async () => (await client(ScopeService).getScope({ id: tenant.scopeId })).scope! });
  return (
    <details className="scope-picker" open={open}>
      <summary>Scope: <strong><ScopeName id={selected} /></strong> <span className="muted">(choose another)</span></summary>
      <QueryState query={root} what="the root scope">
        {(scope) => (
          <ul className="tree" aria-label="Scopes to choose from">
            <ScopeTreeNode scope={scope} selected={selected} onSelect={(s) => onSelect(s.id)} open />
          </ul>
        )}
      </QueryState>
    </details>
  );
}

/**
 * A scope of the tree, opened on demand (its children paged below it) and selectable: the
 * scopes view's tree and the picker's. `note` adds a word after the name (the scope's type).
 */
export function ScopeTreeNode({ scope, selected, onSelect, note, open: initiallyOpen = false }: {
  scope: Scope; selected?: string; onSelect: (s: Scope) => void; note?: (s: Scope) => ReactNode; open?: boolean;
}) {
  const [open, setOpen] = useState(initiallyOpen);
  return (
    <li>
      <div className="node">
        <button type="button" className="toggle" aria-expanded={open} aria-label={`${open ? 'Collapse' : 'Expand'} ${scope.name}`} onClick={() => setOpen(!open)}>
          {open ? '▾' : '▸'}
        </button>
        <button type="button" className="select" aria-pressed={selected === scope.id} onClick={() => onSelect(scope)}>
          {scope.name}{note && <> <span className="muted">{note(scope)}</span></>}
        </button>
      </div>
      {open && <ScopeChildren parent={scope} node={(c) => <ScopeTreeNode key={c.id} scope={c} selected={selected} onSelect={onSelect} note={note} />} />}
    </li>
  );
}

/** One level of the scope tree under `parent`, paged; `node` draws each child. Shared with the scopes view. */
export function ScopeChildren({ parent, node }: { parent: Scope; node: (child: Scope) => ReactNode }) {
  const paged = usePaged(['scope-children', parent.id], async (cursor) => {
    const r = await client(ScopeService).listScopeChildren({ id: parent.id, limit: PAGE_SIZE, cursor });
    return { items: r.scopes, nextCursor: r.nextCursor };
  });
  return (
    <Paged paged={paged} what={`scopes under ${parent.name}`}>
      {(children) => <ul>{children.map(node)}</ul>}
    </Paged>
  );
}
