/**
 * One resource in full: its facts, parent, children, ancestors, the scopes it is linked into,
 * its ownership grants and its tags, each listing paged by the API.
 */
import { useQuery } from '@tanstack/react-query';
import { Code, ConnectError } from '@connectrpc/connect';
import { ResourceService } from '../../../gen/authz/v1/resource_service_pb.js';
import type { Resource } from '../../../gen/authz/v1/resource_pb.js';
import { client } from '../api/transport.js';
import { formatTime, prettyJson } from '../format.js';
import { ResourceLink, ResourceTypeName, ScopeName, resourceLabel } from './names.js';
import { OwnershipGrants, Tags } from './grants-and-tags.js';
import { PAGE_SIZE, Paged, usePaged } from './paged.js';
import { QueryState } from './states.js';

export function ResourceDetail({ id }: { id: string }) {
  const resource = useQuery({ queryKey: ['resource', id], queryFn: async () => (await client(ResourceService).getResource({ id })).resource! });
  return (
    <QueryState query={resource} what="the resource">
      {(r) => (
        <>
          <Facts resource={r} />
          <h3>Parent</h3>
          <Parent id={id} />
          <h3>Children</h3>
          <Children id={id} />
          <h3>Ancestors</h3>
          <Ancestors id={id} />
          <h3>Scope links</h3>
          <ScopeLinks id={id} />
          <h3>Ownership grants</h3>
          <OwnershipGrants resourceId={id} />
          <h3>Tags</h3>
          <Tags targetId={id} />
        </>
      )}
    </QueryState>
  );
}

function Facts({ resource: r }: { resource: Resource }) {
  const attributes = r.attributes && Object.keys(r.attributes).length > 0 ? r.attributes : undefined;
  return (
    <dl className="facts">
      <dt>Name</dt><dd>{resourceLabel(r)}</dd>
      <dt>External id</dt><dd><code>{r.externalResourceId}</code></dd>
      <dt>Type</dt><dd><ResourceTypeName id={r.resourceTypeId} /></dd>
      <dt>Owner scope</dt><dd><ScopeName id={r.ownerScopeId} /></dd>
      <dt>Id</dt><dd><code>{r.id}</code></dd>
      <dt>Attributes</dt><dd>{attributes ? <pre>{prettyJson(attributes)}</pre> : 'none'}</dd>
      <dt>Created</dt><dd>{formatTime(r.createdAt)} by <code>{r.createdBy}</code></dd>
    </dl>
  );
}

/** A resource without a parent is `not_found` to the API: here that is an answer, not an error. */
function Parent({ id }: { id: string }) {
  const parent = useQuery({
    queryKey: ['resource-parent', id],
    queryFn: async () => {
      try {
        return (await client(ResourceService).getResourceParent({ id })).resource ?? null;
      } catch (err) {
        if (err instanceof ConnectError && err.code === Code.NotFound) return null;
        throw err;
      }
    },
  });
  return (
    <QueryState query={parent} what="the parent">
      {(p) => (p ? <p><ResourceLink id={p.id} /> <span className="muted">(<code>{p.externalResourceId}</code>)</span></p> : <p className="empty">None: a top-level resource.</p>)}
    </QueryState>
  );
}

function Children({ id }: { id: string }) {
  const children = usePaged(['resource-children', id], async (cursor) => {
    const r = await client(ResourceService).listResourceChildren({ id, limit: PAGE_SIZE, cursor });
    return { items: r.resources, nextCursor: r.nextCursor };
  });
  return (
    <Paged paged={children} what="children">
      {(items) => <ul className="plain">{items.map((c) => <li key={c.id}><ResourceLink id={c.id} /> <ResourceTypeName id={c.resourceTypeId} /></li>)}</ul>}
    </Paged>
  );
}

function Ancestors({ id }: { id: string }) {
  const ancestors = usePaged(['resource-ancestors', id], async (cursor) => {
    const r = await client(ResourceService).listResourceAncestors({ resourceId: id, limit: PAGE_SIZE, cursor });
    return { items: r.resourceAncestors, nextCursor: r.nextCursor };
  });
  return (
    <Paged paged={ancestors} what="ancestors">
      {(items) => (
        <table>
          <thead><tr><th scope="col">Depth</th><th scope="col">Ancestor</th><th scope="col">Cascade</th></tr></thead>
          <tbody>
            {items.map((a) => (
              <tr key={a.id}><td>{a.depth}</td><td><ResourceLink id={a.id} /></td><td>{a.cascade}</td></tr>
            ))}
          </tbody>
        </table>
      )}
    </Paged>
  );
}

function ScopeLinks({ id }: { id: string }) {
  const links = usePaged(['resource-scope-links', id], async (cursor) => {
    const r = await client(ResourceService).listResourceScopeLinks({ resourceId: id, limit: PAGE_SIZE, cursor });
    return { items: r.resourceScopeLinks, nextCursor: r.nextCursor };
  });
  return (
    <Paged paged={links} what="scope links">
      {(items) => (
        <table>
          <thead><tr><th scope="col">Scope</th><th scope="col">Link type</th></tr></thead>
          <tbody>
            {items.map((l) => <tr key={l.id}><td><ScopeName id={l.scopeId} /></td><td>{l.linkType}</td></tr>)}
          </tbody>
        </table>
      )}
    </Paged>
  );
}
