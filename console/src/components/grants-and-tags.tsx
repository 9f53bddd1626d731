/**
 * Listings the resource and subject pages share: ownership grants (owns(subject, resource, role))
 * and tag assignments, each paged by the API.
 */
import { OwnershipGrantService } from '../../../gen/authz/v1/ownership_grant_service_pb.js';
import { TagService } from '../../../gen/authz/v1/tag_service_pb.js';
import { client } from '../api/transport.js';
import { ResourceLink, RoleName, SubjectLink, TagName } from './names.js';
import { PAGE_SIZE, Paged, usePaged } from './paged.js';

/** The grants on a resource (by `resourceId`) or held by a subject (by `subjectId`). */
export function OwnershipGrants({ resourceId = '', subjectId = '' }: { resourceId?: string; subjectId?: string }) {
  const grants = usePaged(['ownership-grants', resourceId, subjectId], async (cursor) => {
    const r = await client(OwnershipGrantService).listOwnershipGrants({ resourceId, subjectId, limit: PAGE_SIZE, cursor });
    return { items: r.ownershipGrants, nextCursor: r.nextCursor };
  });
  return (
    <Paged paged={grants} what="ownership grants">
      {(items) => (
        <table>
          <thead>
            <tr>{subjectId === '' && <th scope="col">Subject</th>}{resourceId === '' && <th scope="col">Resource</th>}<th scope="col">Role</th></tr>
          </thead>
          <tbody>
            {items.map((g) => (
              <tr key={g.id}>
                {subjectId === '' && <td><SubjectLink id={g.subjectId} /></td>}
                {resourceId === '' && <td><ResourceLink id={g.resourceId} /></td>}
                <td><RoleName id={g.roleId} /></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Paged>
  );
}

/** The tags on a resource, a subject or a scope. */
export function Tags({ targetId }: { targetId: string }) {
  const tags = usePaged(['tag-assignments', targetId], async (cursor) => {
    const r = await client(TagService).listTagAssignments({ targetId, limit: PAGE_SIZE, cursor });
    return { items: r.tagAssignments, nextCursor: r.nextCursor };
  });
  return (
    <Paged paged={tags} what="tags">
      {(items) => <ul className="chips" aria-label="Tags">{items.map((t) => <li key={t.id}><TagName id={t.tagId} /></li>)}</ul>}
    </Paged>
  );
}
