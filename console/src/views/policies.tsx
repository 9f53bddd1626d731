/**
 * The resource policies and collections defined at a scope, with their conditions and match
 * definitions written out as expressions, not JSON (the JSON stays one click away).
 */
import { PolicyService } from '../../../gen/authz/v1/policy_service_pb.js';
import { client } from '../api/transport.js';
import { ScopeName } from '../components/names.js';
import { Page } from '../components/page.js';
import { PAGE_SIZE, Paged, usePaged } from '../components/paged.js';
import { CollectionCard, PolicyCard } from '../components/policy-cards.js';
import { ScopePicker, useScopeParam } from '../components/scope-picker.js';

export default function Policies() {
  const [scopeId, setScope] = useScopeParam();
  return (
    <Page title="Policies">
      <ScopePicker selected={scopeId} onSelect={setScope} />
      <PoliciesAtScope key={scopeId} scopeId={scopeId} />
    </Page>
  );
}

function PoliciesAtScope({ scopeId }: { scopeId: string }) {
  const policies = usePaged(['resource-policies', scopeId], async (cursor) => {
    const r = await client(PolicyService).listResourcePolicies({ scopeId, limit: PAGE_SIZE, cursor });
    return { items: r.resourcePolicies, nextCursor: r.nextCursor };
  });
  const collections = usePaged(['resource-collections', scopeId], async (cursor) => {
    const r = await client(PolicyService).listResourceCollections({ scopeId, limit: PAGE_SIZE, cursor });
    return { items: r.resourceCollections, nextCursor: r.nextCursor };
  });
  return (
    <>
      <section aria-labelledby="policies-title">
        <h2 id="policies-title">Resource policies at <ScopeName id={scopeId} /></h2>
        <p className="help">Policies are evaluated before roles: of the policies that match, those of the highest priority decide, and a deny among them wins.</p>
        <Paged paged={policies} what="resource policies at this scope">
          {(items) => <ul className="cards">{items.map((p) => <li key={p.id}><PolicyCard policy={p} /></li>)}</ul>}
        </Paged>
      </section>
      <section aria-labelledby="collections-title">
        <h2 id="collections-title">Collections at <ScopeName id={scopeId} /></h2>
        <Paged paged={collections} what="collections at this scope">
          {(items) => <ul className="cards">{items.map((c) => <li key={c.id}><CollectionCard collection={c} /></li>)}</ul>}
        </Paged>
      </section>
    </>
  );
}
