import type { ConnectRouter } from '@connectrpc/connect';
import type { DescService } from '@bufbuild/protobuf';
import { ScopeService } from '../../gen/authz/v1/scope_service_pb.js';
import type { Deps } from './handlers/deps.js';
import { DecisionService } from '../../gen/authz/v1/decision_service_pb.js';
import { decisionService } from '../decision/connect.js';
import { principalOf } from './auth/principal.js';
import { scopeService } from './handlers/scope.js';
import { TenancyService } from '../../gen/authz/v1/tenancy_service_pb.js';
import { SubjectService } from '../../gen/authz/v1/subject_service_pb.js';
import { ApiKeyService } from '../../gen/authz/v1/api_key_service_pb.js';
import { RoleService } from '../../gen/authz/v1/role_service_pb.js';
import { PermissionService } from '../../gen/authz/v1/permission_service_pb.js';
import { MembershipService } from '../../gen/authz/v1/membership_service_pb.js';
import { tenancyService } from './handlers/tenancy.js';
import { subjectService } from './handlers/subject.js';
import { apiKeyService } from './handlers/api-key.js';
import { roleService } from './handlers/role.js';
import { permissionService } from './handlers/permission.js';
import { membershipService } from './handlers/membership.js';
import { ResourceTypeService } from '../../gen/authz/v1/resource_type_service_pb.js';
import { ResourceService } from '../../gen/authz/v1/resource_service_pb.js';
import { PolicyService } from '../../gen/authz/v1/policy_service_pb.js';
import { TagService } from '../../gen/authz/v1/tag_service_pb.js';
import { ScopeOverrideService } from '../../gen/authz/v1/scope_override_service_pb.js';
import { OwnershipGrantService } from '../../gen/authz/v1/ownership_grant_service_pb.js';
import { resourceTypeService } from './handlers/resource-type.js';
import { resourceService } from './handlers/resource.js';
import { policyService } from './handlers/policy.js';
import { tagService } from './handlers/tag.js';
import { scopeOverrideService } from './handlers/scope-override.js';
import { ownershipGrantService } from './handlers/ownership-grant.js';
import { SnapshotService } from '../../gen/authz/v1/snapshot_service_pb.js';
import { snapshotService } from './watch/service.js';
import { TenantModelService } from '../../gen/authz/v1/tenant_model_service_pb.js';
import { tenantModelService } from './handlers/tenant-model.js';
import { ImportService } from '../../gen/authz/v1/import_service_pb.js';
import { importService } from './handlers/import.js';
import { ChangeService } from '../../gen/authz/v1/change_service_pb.js';
import { changeService } from './handlers/changes.js';

/** Every service of the control plane, for the server and the REST gateway. */
export const SERVICES: DescService[] = [DecisionService, ScopeService, TenancyService, SubjectService, ApiKeyService, RoleService, PermissionService, MembershipService, ResourceTypeService, ResourceService, PolicyService, TagService, ScopeOverrideService, OwnershipGrantService, TenantModelService, ImportService, ChangeService, SnapshotService];

/** Registers every service implementation on a Connect router. */
export function registerServices(router: ConnectRouter, deps: Deps): ConnectRouter {
  router.service(ScopeService, scopeService(deps));
  router.service(TenancyService, tenancyService(deps));
  router.service(SubjectService, subjectService(deps));
  router.service(ApiKeyService, apiKeyService(deps));
  router.service(RoleService, roleService(deps));
  router.service(PermissionService, permissionService(deps));
  router.service(MembershipService, membershipService(deps));
  router.service(DecisionService, decisionService(deps.decision, principalOf));
  router.service(ResourceTypeService, resourceTypeService(deps));
  router.service(ResourceService, resourceService(deps));
  router.service(PolicyService, policyService(deps));
  router.service(TagService, tagService(deps));
  router.service(ScopeOverrideService, scopeOverrideService(deps));
  router.service(OwnershipGrantService, ownershipGrantService(deps));
  router.service(TenantModelService, tenantModelService(deps));
  router.service(ImportService, importService(deps));
  router.service(ChangeService, changeService(deps));
  if (deps.watch) router.service(SnapshotService, snapshotService(deps.watch, deps.watchKeys));
  return router;
}
