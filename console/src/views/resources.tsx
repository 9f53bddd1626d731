/**
 * The resources a scope owns, paged, and the one selected (`?resource=<id>` in the URL, so a
 * link opens it): its place in the hierarchy, the scopes it is shared with, who owns it and its tags.
 */
import { Link } from 'wouter';
import { useQuery } from '@tanstack/react-query';
import { ResourceService } from '../../../gen/authz/v1/resource_service_pb.js';
import { client } from '../api/transport.js';
import { ResourceTypeName, ScopeName, resourceHref, resourceLabel } from '../components/names.js';
import { Page } from '../components/page.js';
import { PAGE_SIZE, Paged, usePaged } from '../components/paged.js';
import { ResourceDetail } from '../components/resource-detail.js';
import { ScopePicker, useScopeParam } from '../components/scope-picker.js';
import { useSearchParam } from '../components/search-param.js';
import { Loading } from '../components/states.js';

export default function Resources() {
  const [scopeParam] = useSearchParam('scope');
  const [resourceId] = useSearchParam('resource');
  const [rootOrChosen, setScope] = useScopeParam();
  // A link to a resource may name no scope: list the scope that owns it.
  const owner = useQuery({
    queryKey: ['resource', resourceId],
    queryFn: async () => (await client(ResourceService).getResource({ id: resourceId! })).resource!,
    enabled: resourceId !== undefined && scopeParam === undefined,
  });
  const scopeId = scopeParam ?? owner.data?.ownerScopeId ?? rootOrChosen;
  const waitingForOwner = resourceId !== undefined && scopeParam === undefined && owner.isPending;
  return (
    <Page title="Resources">
      <div className="split">
        <section aria-labelledby="list-title">
          <h2 id="list-title">Resources of <ScopeName id={scopeId} /></h2>
          <ScopePicker selected={scopeId} onSelect={(id) => setScope(id, ['resource'])} />
          {waitingForOwner ? <Loading what="the resource's scope" /> : <ResourceList key={scopeId} scopeId={scopeId} selected={resourceId} />}
        </section>
        <section aria-labelledby="detail-title">
          <h2 id="detail-title">Selected resource</h2>
          {resourceId ? <ResourceDetail key={resourceId} id={resourceId} /> : <p className="empty">Choose a resource in the list.</p>}
        </section>
      </div>
    </Page>
  );
}

function ResourceList({ scopeId, selected }: { scopeId: string; selected?: string }) {
  const resources = usePaged(['resources', scopeId], async (cursor) => {
    const r = await client(ResourceService).listResources({ scopeId, limit: PAGE_SIZE, cursor });
    return { items: r.resources, nextCursor: r.nextCursor };
  });
  return (
    <Paged paged={resources} what="resources owned by this scope">
      {(items) => (
        <table>
          <thead><tr><th scope="col">Resource</th><th scope="col">Type</th><th scope="col">External id</th></tr></thead>
          <tbody>
            {items.map((r) => (
              <tr key={r.id} className={r.id === selected ? 'selected' : undefined}>
                <td><Link href={resourceHref(r.id, scopeId)} aria-current={r.id === selected ? 'true' : undefined}>{resourceLabel(r)}</Link></td>
                <td><ResourceTypeName id={r.resourceTypeId} /></td>
                <td><code>{r.externalResourceId}</code></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Paged>
  );
}
