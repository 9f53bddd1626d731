/**
 * A small tenant for the command line's and the client's tests, written through the client
 * module with a platform key: tenant `acme` (root scope `acme`) with a scope `eng`; subjects
 * alice, bob and carol (users); role `editor` at eng with `doc:edit:*`; alice a member of eng
 * with that role; documents `folder` and `readme` (its child, inheriting); bob owning `folder`
 * as editor; a deny on `readme` for `edit` at priority 10 when the context's `ip` is 10.0.0.1,
 * and an allow at priority 1 for carol's `read`. And a `user` and a `service` key of the tenant.
 */
import type { AuthzClient } from '../client/client.js';

export interface CliTenant {
  tenantId: string;
  rootScopeId: string;
  scopeId: string;
  alice: string;
  bob: string;
  carol: string;
  roleId: string;
  permissionId: string;
  folder: string;
  readme: string;
  denyPolicy: string;
  allowPolicy: string;
  userKey: string;
  serviceKey: string;
}

export async function seedCliTenant(c: AuthzClient, name = 'acme'): Promise<CliTenant> {
  const { tenant } = await c.tenancy.createTenant({ name });
  const tenantId = tenant!.id;
  const { scopeTypes } = await c.scopes.listScopeTypes({ limit: 1000 });
  const teamType = scopeTypes.find((t) => t.name === 'team') ?? (await c.scopes.createScopeType({ name: 'team' })).scopeType!;
  const { scope } = await c.scopes.createScope({ tenantId, name: 'eng', typeId: teamType.id });
  const scopeId = scope!.id;
  const subject = async (externalId: string) => (await c.subjects.createSubject({ tenantId, type: 'user', externalId })).subject!.id;
  const [alice, bob, carol] = [await subject('alice'), await subject('bob'), await subject('carol')];
  const roleId = (await c.roles.createRole({ scopeId, key: 'editor', name: 'Editor' })).role!.id;
  const permissionId = (await c.permissions.createPermission({ scopeId, action: 'edit', resourceType: 'doc', resourcePattern: '*' })).permission!.id;
  await c.roles.createRolePermission({ roleId, permissionId });
  const membershipId = (await c.memberships.createMembership({ subjectId: alice, scopeId })).membership!.id;
  await c.memberships.createRoleAssignment({ membershipId, roleId });
  const typeId = (await c.resourceTypes.createResourceType({ scopeId, key: 'doc', name: 'Document' })).resourceType!.id;
  await c.resourceTypes.createResourceTypeEdge({ parentTypeId: typeId, childTypeId: typeId });
  const resource = async (externalResourceId: string) => (await c.resources.createResource({ resourceTypeId: typeId, ownerScopeId: scopeId, externalResourceId })).resource!.id;
  const [folder, readme] = [await resource('folder'), await resource('readme')];
  await c.resources.createResourceEdge({ parentResourceId: folder, childResourceId: readme, cascade: 'inherit' });
  await c.ownershipGrants.createOwnershipGrant({ subjectId: bob, resourceId: folder, roleId });
  const denyPolicy = (
    await c.policies.createResourcePolicy({
      scopeId,
      target: { kind: 'resource', resourceId: readme },
      actions: ['edit'],
      effect: 'deny',
      priority: 10,
      contextCondition: { '==': [{ var: 'ip' }, '10.0.0.1'] },
    })
  ).resourcePolicy!.id;
  const allowPolicy = (
    await c.policies.createResourcePolicy({
      scopeId,
      target: { kind: 'resource', resourceId: readme },
      actions: ['read'],
      effect: 'allow',
      priority: 1,
      subjectCondition: { '==': [{ var: 'subject.externalId' }, 'carol'] },
    })
  ).resourcePolicy!.id;
  const key = async (kind: string) => (await c.apiKeys.createApiKey({ name: `cli-${kind}`, kind, tenantId })).apiKey!.secretKey!;
  return {
    tenantId,
    rootScopeId: tenant!.scopeId,
    scopeId,
    alice,
    bob,
    carol,
    roleId,
    permissionId,
    folder,
    readme,
    denyPolicy,
    allowPolicy,
    userKey: await key('user'),
    serviceKey: await key('service'),
  };
}
