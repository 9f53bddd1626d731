/**
 * The tenant's subjects, paged, and the one selected (`?subject=<id>` in the URL, so a link
 * opens it): where it is a member and with which roles, what it owns, and its tags.
 */
import { Link } from 'wouter';
import { SubjectService } from '../../../gen/authz/v1/subject_service_pb.js';
import { client } from '../api/transport.js';
import { subjectHref } from '../components/names.js';
import { Page } from '../components/page.js';
import { PAGE_SIZE, Paged, usePaged } from '../components/paged.js';
import { useSearchParam } from '../components/search-param.js';
import { SubjectDetail } from '../components/subject-detail.js';
import { useTenant } from '../tenant.js';

export default function Subjects() {
  const [subjectId] = useSearchParam('subject');
  return (
    <Page title="Subjects">
      <div className="split">
        <section aria-labelledby="list-title">
          <h2 id="list-title">Subjects of the tenant</h2>
          <SubjectList selected={subjectId} />
        </section>
        <section aria-labelledby="detail-title">
          <h2 id="detail-title">Selected subject</h2>
          {subjectId ? <SubjectDetail key={subjectId} id={subjectId} /> : <p className="empty">Choose a subject in the list.</p>}
        </section>
      </div>
    </Page>
  );
}

function SubjectList({ selected }: { selected?: string }) {
  const tenant = useTenant();
  const subjects = usePaged(['subjects', tenant.id], async (cursor) => {
    const r = await client(SubjectService).listSubjects({ tenantId: tenant.id, limit: PAGE_SIZE, cursor });
    return { items: r.subjects, nextCursor: r.nextCursor };
  });
  return (
    <Paged paged={subjects} what="subjects">
      {(items) => (
        <table>
          <thead><tr><th scope="col">External id</th><th scope="col">Type</th></tr></thead>
          <tbody>
            {items.map((s) => (
              <tr key={s.id} className={s.id === selected ? 'selected' : undefined}>
                <td><Link href={subjectHref(s.id)} aria-current={s.id === selected ? 'true' : undefined}>{s.externalId}</Link></td>
                <td>{s.type}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Paged>
  );
}
