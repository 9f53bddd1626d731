/**
 * One subject in full: its facts, its memberships with the roles assigned in each (one page of
 * assignments per membership), the resources it owns and its tags.
 */
import { useQuery } from '@tanstack/react-query';
import { MembershipService } from '../../../gen/authz/v1/membership_service_pb.js';
import { SubjectService } from '../../../gen/authz/v1/subject_service_pb.js';
import type { Subject } from '../../../gen/authz/v1/subject_pb.js';
import { client } from '../api/transport.js';
import { formatTime, prettyJson } from '../format.js';
import { OwnershipGrants, Tags } from './grants-and-tags.js';
import { RoleName, ScopeName } from './names.js';
import { PAGE_SIZE, Paged, usePaged } from './paged.js';
import { QueryState } from './states.js';

/** Assignments read per membership: a membership rarely holds more roles than this. */
const ASSIGNMENTS_LIMIT = 100;

export function SubjectDetail({ id }: { id: string }) {
  const subject = useQuery({ queryKey: ['subject', id], queryFn: async () => (await client(SubjectService).getSubject({ id })).subject! });
  return (
    <QueryState query={subject} what="the subject">
      {(s) => (
        <>
          <Facts subject={s} />
          <h3>Memberships and roles</h3>
          <Memberships subjectId={id} />
          <h3>Ownership grants</h3>
          <OwnershipGrants subjectId={id} />
          <h3>Tags</h3>
          <Tags targetId={id} />
        </>
      )}
    </QueryState>
  );
}

function Facts({ subject: s }: { subject: Subject }) {
  const metadata = s.metadata && Object.keys(s.metadata).length > 0 ? s.metadata : undefined;
  return (
    <dl className="facts">
      <dt>External id</dt><dd><code>{s.externalId}</code></dd>
      <dt>Type</dt><dd>{s.type}</dd>
      <dt>Id</dt><dd><code>{s.id}</code></dd>
      <dt>Metadata</dt><dd>{metadata ? <pre>{prettyJson(metadata)}</pre> : 'none'}</dd>
      <dt>Created</dt><dd>{formatTime(s.createdAt)} by <code>{s.createdBy}</code></dd>
    </dl>
  );
}

function Memberships({ subjectId }: { subjectId: string }) {
  const memberships = usePaged(['memberships', subjectId], async (cursor) => {
    const r = await client(MembershipService).listMemberships({ subjectId, limit: PAGE_SIZE, cursor });
    return { items: r.memberships, nextCursor: r.nextCursor };
  });
  return (
    <Paged paged={memberships} what="memberships">
      {(items) => (
        <table>
          <thead><tr><th scope="col">Scope</th><th scope="col">Roles</th></tr></thead>
          <tbody>
            {items.map((m) => (
              <tr key={m.id}><td><ScopeName id={m.scopeId} /></td><td><AssignedRoles membershipId={m.id} /></td></tr>
            ))}
          </tbody>
        </table>
      )}
    </Paged>
  );
}

function AssignedRoles({ membershipId }: { membershipId: string }) {
  const assignments = useQuery({
    queryKey: ['role-assignments', membershipId],
    queryFn: () => client(MembershipService).listRoleAssignments({ membershipId, limit: ASSIGNMENTS_LIMIT }),
  });
  return (
    <QueryState query={assignments} what="roles">
      {(r) => r.roleAssignments.length === 0
        ? <span className="muted">no role (membership only)</span>
        : (
          <>
            <ul className="inline-list">{r.roleAssignments.map((a) => <li key={a.id}><RoleName id={a.roleId} /></li>)}</ul>
            {r.nextCursor !== '' && <span className="muted"> (the first {ASSIGNMENTS_LIMIT} shown)</span>}
          </>
        )}
    </QueryState>
  );
}
