import { Link } from 'wouter';
import { TenancyService } from '../../../gen/authz/v1/tenancy_service_pb.js';
import { client } from '../api/transport.js';
import { Page } from '../components/page.js';
import { PAGE_SIZE, Paged, usePaged } from '../components/paged.js';
import { formatTime } from '../format.js';

/** Every tenant a platform key reaches, a page at a time. */
export function Tenants() {
  const paged = usePaged(['tenants'], async (cursor) => {
    const r = await client(TenancyService).listTenants({ limit: PAGE_SIZE, cursor });
    return { items: r.tenants, nextCursor: r.nextCursor };
  });
  return (
    <Page title="Tenants">
      <Paged paged={paged} what="tenants">
        {(tenants) => (
          <table>
            <caption className="visually-hidden">Tenants</caption>
            <thead><tr><th scope="col">Name</th><th scope="col">Id</th><th scope="col">Revision</th><th scope="col">Created</th></tr></thead>
            <tbody>
              {tenants.map((t) => (
                <tr key={t.id}>
                  <td><Link href={`/t/${t.id}`}>{t.name}</Link></td>
                  <td><code>{t.id}</code></td>
                  <td>{String(t.revision)}</td>
                  <td>{formatTime(t.createdAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Paged>
    </Page>
  );
}
