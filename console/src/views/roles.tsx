/**
 * Roles and their permissions as a matrix (rows roles, columns permissions), one page of roles
 * at a time with only the permissions those roles use, so a large tenant is never read whole;
 * below it, every permission of the tenant, paged.
 */
import { useQuery } from '@tanstack/react-query';
import { PermissionService } from '../../../gen/authz/v1/permission_service_pb.js';
import { RoleService } from '../../../gen/authz/v1/role_service_pb.js';
import type { Permission, Role } from '../../../gen/authz/v1/access_pb.js';
import { client } from '../api/transport.js';
import { ScopeName } from '../components/names.js';
import { Page } from '../components/page.js';
import { PAGE_SIZE, Paged, usePaged } from '../components/paged.js';
import { ScopePicker, useScopeParam } from '../components/scope-picker.js';
import { QueryState } from '../components/states.js';
import { useTenant } from '../tenant.js';

/** The API's largest page: one call per role reads all its permissions unless it has more. */
const MAX_LIMIT = 1000;

export default function Roles() {
  const [scopeId, setScope] = useScopeParam();
  return (
    <Page title="Roles">
      <ScopePicker selected={scopeId} onSelect={setScope} />
      <RolesAtScope key={scopeId} scopeId={scopeId} />
      <Permissions />
    </Page>
  );
}

function RolesAtScope({ scopeId }: { scopeId: string }) {
  const roles = usePaged(['roles', scopeId], async (cursor) => {
    const r = await client(RoleService).listRoles({ scopeId, limit: PAGE_SIZE, cursor });
    return { items: r.roles, nextCursor: r.nextCursor };
  });
  return (
    <section aria-labelledby="matrix-title">
      <h2 id="matrix-title">Roles defined at <ScopeName id={scopeId} /></h2>
      <p className="help">
        Each page shows up to {PAGE_SIZE} roles against the permissions granted to them; permissions no role on the page
        holds are left out (all permissions are listed below). Roles defined at other scopes: choose the scope above.
      </p>
      <Paged paged={roles} what="roles at this scope">{(items) => <RoleMatrix roles={items} />}</Paged>
    </section>
  );
}

interface Matrix {
  readonly permissions: readonly Permission[];
  readonly granted: ReadonlyMap<string, ReadonlySet<string>>;
  /** Roles with more than {@link MAX_LIMIT} permissions: only their first page is marked. */
  readonly partial: readonly string[];
}

async function readMatrix(roles: readonly Role[]): Promise<Matrix> {
  const pages = await Promise.all(roles.map((r) => client(RoleService).listRolePermissions({ roleId: r.id, limit: MAX_LIMIT })));
  const granted = new Map<string, Set<string>>();
  const used = new Set<string>();
  roles.forEach((role, i) => {
    const ids = new Set(pages[i].rolePermissions.map((rp) => rp.permissionId));
    granted.set(role.id, ids);
    for (const id of ids) used.add(id);
  });
  const ids = [...used];
  const chunks: string[][] = [];
  for (let i = 0; i < ids.length; i += MAX_LIMIT) chunks.push(ids.slice(i, i + MAX_LIMIT));
  const found = await Promise.all(chunks.map((chunk) => client(PermissionService).listPermissions({ ids: chunk.join(','), limit: MAX_LIMIT })));
  const permissions = found.flatMap((r) => r.permissions).sort((a, b) => a.key.localeCompare(b.key));
  return { permissions, granted, partial: roles.filter((_, i) => pages[i].nextCursor !== '').map((r) => r.name) };
}

function RoleMatrix({ roles }: { roles: readonly Role[] }) {
  const matrix = useQuery({ queryKey: ['role-matrix', roles.map((r) => r.id)], queryFn: () => readMatrix(roles) });
  return (
    <QueryState query={matrix} what="the permissions of these roles">
      {({ permissions, granted, partial }) => (
        <>
          {partial.length > 0 && <p className="notice">Only the first {MAX_LIMIT} permissions are marked for: {partial.join(', ')}.</p>}
          {permissions.length === 0 && <p className="empty">No role on this page is granted a permission.</p>}
          <div className="scroll matrix-frame" role="region" aria-labelledby="matrix-caption" tabIndex={0}>
            <table className="matrix">
              <caption id="matrix-caption">Permissions granted to each role</caption>
              <thead>
                <tr>
                  <th scope="col">Role</th>
                  {permissions.map((p) => (
                    <th scope="col" key={p.id}><code><BreakableKey text={p.key} /></code> <span className="muted">{p.name}</span></th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {roles.map((role) => (
                  <tr key={role.id}>
                    <th scope="row">{role.name} <code>{role.key}</code></th>
                    {permissions.map((p) => <GrantCell key={p.id} granted={granted.get(role.id)?.has(p.id) ?? false} />)}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </QueryState>
  );
}

/** A permission key that may wrap after its colons (`document:` `write:` `*`), so narrow screens fit more columns. */
function BreakableKey({ text }: { text: string }) {
  const parts = text.split(':');
  return <>{parts.map((part, i) => <span key={i}>{part}{i < parts.length - 1 && <>:<wbr /></>}</span>)}</>;
}

/** A mark for the eye, and words for a screen reader. */
function GrantCell({ granted }: { granted: boolean }) {
  return granted
    ? <td className="granted"><span aria-hidden="true">✓</span><span className="visually-hidden">granted</span></td>
    : <td className="not-granted"><span aria-hidden="true">·</span><span className="visually-hidden">not granted</span></td>;
}

function Permissions() {
  const tenant = useTenant();
  const permissions = usePaged(['permissions', tenant.id], async (cursor) => {
    const r = await client(PermissionService).listPermissions({ tenantId: tenant.id, limit: PAGE_SIZE, cursor });
    return { items: r.permissions, nextCursor: r.nextCursor };
  });
  return (
    <section aria-labelledby="permissions-title">
      <h2 id="permissions-title">All permissions</h2>
      <Paged paged={permissions} what="permissions">
        {(items) => (
          <table>
            <thead><tr><th scope="col">Key</th><th scope="col">Name</th><th scope="col">Defined at</th></tr></thead>
            <tbody>
              {items.map((p) => (
                <tr key={p.id}><td><code>{p.key}</code></td><td>{p.name}</td><td><ScopeName id={p.scopeId} /></td></tr>
              ))}
            </tbody>
          </table>
        )}
      </Paged>
    </section>
  );
}
