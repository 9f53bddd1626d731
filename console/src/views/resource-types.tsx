/**
 * The resource types defined at a scope, and which types may contain which, drawn as a tree: a
 * type with several parents appears under each, and a type that contains itself (directly, like
 * folder → folder, or through others) is marked instead of repeated for ever.
 */
import { useQuery } from '@tanstack/react-query';
import { ResourceTypeService } from '../../../gen/authz/v1/resource_type_service_pb.js';
import type { ResourceType } from '../../../gen/authz/v1/resource_pb.js';
import { client } from '../api/transport.js';
import { ResourceTypeName, ScopeName } from '../components/names.js';
import { Page } from '../components/page.js';
import { PAGE_SIZE, Paged, usePaged } from '../components/paged.js';
import { ScopePicker, useScopeParam } from '../components/scope-picker.js';
import { QueryState } from '../components/states.js';
import { buildTypeTree, type TypeEdge, type TypeTreeNode } from '../components/type-tree.js';
import { formatTime } from '../format.js';

/** One call per type reads all its edges unless it has more than the API's largest page. */
const MAX_LIMIT = 1000;

export default function ResourceTypes() {
  const [scopeId, setScope] = useScopeParam();
  return (
    <Page title="Resource types">
      <ScopePicker selected={scopeId} onSelect={setScope} />
      <TypesAtScope key={scopeId} scopeId={scopeId} />
    </Page>
  );
}

function TypesAtScope({ scopeId }: { scopeId: string }) {
  const types = usePaged(['resource-types', scopeId], async (cursor) => {
    const r = await client(ResourceTypeService).listResourceTypes({ scopeId, limit: PAGE_SIZE, cursor });
    return { items: r.resourceTypes, nextCursor: r.nextCursor };
  });
  return (
    <>
      <h2>Types defined at <ScopeName id={scopeId} /></h2>
      <Paged paged={types} what="resource types at this scope">
        {(items) => (
          <>
            <TypeTable types={items} />
            <section aria-labelledby="hierarchy-title">
              <h2 id="hierarchy-title">Which types contain which</h2>
              <Hierarchy types={items} />
            </section>
          </>
        )}
      </Paged>
    </>
  );
}

function TypeTable({ types }: { types: readonly ResourceType[] }) {
  return (
    <table>
      <thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Id</th><th scope="col">Created</th></tr></thead>
      <tbody>
        {types.map((t) => (
          <tr key={t.id}><td>{t.name}</td><td><code>{t.key}</code></td><td><code>{t.id}</code></td><td>{formatTime(t.createdAt)}</td></tr>
        ))}
      </tbody>
    </table>
  );
}

async function readEdges(types: readonly ResourceType[]): Promise<{ edges: TypeEdge[]; partial: string[] }> {
  const pages = await Promise.all(types.map((t) => client(ResourceTypeService).listResourceTypeEdges({ typeId: t.id, limit: MAX_LIMIT })));
  const seen = new Set<string>();
  const edges: TypeEdge[] = [];
  // An edge between two types of the page is listed for both: keep it once.
  for (const e of pages.flatMap((p) => p.resourceTypeEdges)) {
    if (!seen.has(e.id)) edges.push(e);
    seen.add(e.id);
  }
  return { edges, partial: types.filter((_, i) => pages[i].nextCursor !== '').map((t) => t.name) };
}

function Hierarchy({ types }: { types: readonly ResourceType[] }) {
  const edges = useQuery({ queryKey: ['resource-type-edges', types.map((t) => t.id)], queryFn: () => readEdges(types) });
  const byId = new Map(types.map((t) => [t.id, t]));
  const sorted = [...types].sort((a, b) => a.name.localeCompare(b.name)).map((t) => t.id);
  return (
    <QueryState query={edges} what="the type hierarchy">
      {({ edges: list, partial }) => {
        const tree = buildTypeTree(sorted, list);
        return (
          <>
            {partial.length > 0 && <p className="notice">Only the first {MAX_LIMIT} edges are drawn for: {partial.join(', ')}.</p>}
            {tree.truncated && <p className="notice">The tree is cut short: these types nest in too many ways to draw them all.</p>}
            {list.length === 0 && <p className="empty">No type contains another: each stands alone.</p>}
            <ul className="type-tree" aria-label="Resource type hierarchy">
              {tree.roots.map((n, i) => <TypeNode key={`${n.typeId}-${i}`} node={n} byId={byId} />)}
            </ul>
          </>
        );
      }}
    </QueryState>
  );
}

function TypeNode({ node, byId }: { node: TypeTreeNode; byId: ReadonlyMap<string, ResourceType> }) {
  const known = byId.get(node.typeId);
  return (
    <li>
      <span className="type-label">{known ? known.name : <ResourceTypeName id={node.typeId} />}</span>
      {known && <> <code>{known.key}</code></>}
      {node.repeat && (
        <> <span className="repeat">
          {node.repeat === 'self' || !node.via?.length ? '(contains itself)' : <>(contains itself via {node.via.map((id, i) => <span key={id}>{i > 0 && ', '}{byId.get(id)?.name ?? <ResourceTypeName id={id} />}</span>)})</>}
        </span></>
      )}
      {node.children.length > 0 && (
        <ul>{node.children.map((c, i) => <TypeNode key={`${c.typeId}-${i}`} node={c} byId={byId} />)}</ul>
      )}
    </li>
  );
}
