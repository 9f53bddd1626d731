/**
 * Typed clients of the authz.v1 services whose calls fail with AuthzError (code, reason and
 * field read from the service's error), never a bare ConnectError.
 */
import type { DescService } from '@bufbuild/protobuf';
import { createClient, type Client, type Transport } from '@connectrpc/connect';
import { ApiKeyService } from '../gen/authz/v1/api_key_service_pb.js';
import { ChangeService } from '../gen/authz/v1/change_service_pb.js';
import { DecisionService } from '../gen/authz/v1/decision_service_pb.js';
import { ImportService } from '../gen/authz/v1/import_service_pb.js';
import { MembershipService } from '../gen/authz/v1/membership_service_pb.js';
import { OwnershipGrantService } from '../gen/authz/v1/ownership_grant_service_pb.js';
import { PermissionService } from '../gen/authz/v1/permission_service_pb.js';
import { PolicyService } from '../gen/authz/v1/policy_service_pb.js';
import { ResourceService } from '../gen/authz/v1/resource_service_pb.js';
import { ResourceTypeService } from '../gen/authz/v1/resource_type_service_pb.js';
import { RoleService } from '../gen/authz/v1/role_service_pb.js';
import { ScopeOverrideService } from '../gen/authz/v1/scope_override_service_pb.js';
import { ScopeService } from '../gen/authz/v1/scope_service_pb.js';
import { SnapshotService } from '../gen/authz/v1/snapshot_service_pb.js';
import { SubjectService } from '../gen/authz/v1/subject_service_pb.js';
import { TagService } from '../gen/authz/v1/tag_service_pb.js';
import { TenancyService } from '../gen/authz/v1/tenancy_service_pb.js';
import { TenantModelService } from '../gen/authz/v1/tenant_model_service_pb.js';
import { AuthzError } from './errors.js';

/** Every service of the contract, by the name the client exposes it under. */
export const SERVICES = {
  apiKeys: ApiKeyService,
  changes: ChangeService,
  decisions: DecisionService,
  imports: ImportService,
  memberships: MembershipService,
  ownershipGrants: OwnershipGrantService,
  permissions: PermissionService,
  policies: PolicyService,
  resources: ResourceService,
  resourceTypes: ResourceTypeService,
  roles: RoleService,
  scopeOverrides: ScopeOverrideService,
  scopes: ScopeService,
  snapshots: SnapshotService,
  subjects: SubjectService,
  tags: TagService,
  tenancy: TenancyService,
  tenantModels: TenantModelService,
} as const;

export type ServiceClients = { readonly [K in keyof typeof SERVICES]: Client<(typeof SERVICES)[K]> };

/** The stream `source`, its errors as AuthzError. */
async function* authzErrorsOf<T>(source: AsyncIterable<T>): AsyncGenerator<T> {
  try {
    yield* source;
  } catch (err) {
    throw AuthzError.from(err);
  }
}

/**
 * A client of `service` over `transport` whose calls reject (unary, client streaming) or end
 * their stream (server streaming) with AuthzError.
 */
export function createServiceClient<S extends DescService>(service: S, transport: Transport): Client<S> {
  const inner = createClient(service, transport) as Record<string, (...args: unknown[]) => unknown>;
  const wrapped: Record<string, (...args: unknown[]) => unknown> = {};
  for (const name of Object.keys(inner)) {
    wrapped[name] = (...args) => {
      let result: unknown;
      try {
        result = inner[name](...args);
      } catch (err) {
        throw AuthzError.from(err);
      }
      if (result instanceof Promise) return result.catch((err: unknown) => Promise.reject(AuthzError.from(err)));
      return authzErrorsOf(result as AsyncIterable<unknown>);
    };
  }
  return wrapped as Client<S>;
}

/** One client per service of SERVICES, over one transport. */
export function createServiceClients(transport: Transport): ServiceClients {
  const clients: Record<string, unknown> = {};
  for (const [name, service] of Object.entries(SERVICES)) clients[name] = createServiceClient(service, transport);
  return clients as ServiceClients;
}
