/**
 * Every message, enum and service descriptor of the contract (`gen/authz/v1`), for applications
 * that import the client: request and response types, and schemas for `create()` and `toJson()`.
 */
export * from '../gen/authz/v1/access_pb.js';
export * from '../gen/authz/v1/api_key_pb.js';
export * from '../gen/authz/v1/api_key_service_pb.js';
export * from '../gen/authz/v1/decision_service_pb.js';
export * from '../gen/authz/v1/error_reason_pb.js';
export * from '../gen/authz/v1/membership_service_pb.js';
export * from '../gen/authz/v1/options_pb.js';
export * from '../gen/authz/v1/ownership_grant_service_pb.js';
export * from '../gen/authz/v1/permission_service_pb.js';
export * from '../gen/authz/v1/policy_pb.js';
export * from '../gen/authz/v1/policy_service_pb.js';
export * from '../gen/authz/v1/resource_pb.js';
export * from '../gen/authz/v1/resource_service_pb.js';
export * from '../gen/authz/v1/resource_type_service_pb.js';
export * from '../gen/authz/v1/role_service_pb.js';
export * from '../gen/authz/v1/scope_override_service_pb.js';
export * from '../gen/authz/v1/scope_pb.js';
export * from '../gen/authz/v1/scope_service_pb.js';
export * from '../gen/authz/v1/snapshot_service_pb.js';
export * from '../gen/authz/v1/subject_pb.js';
export * from '../gen/authz/v1/subject_service_pb.js';
export * from '../gen/authz/v1/tag_pb.js';
export * from '../gen/authz/v1/tag_service_pb.js';
export * from '../gen/authz/v1/tenancy_pb.js';
export * from '../gen/authz/v1/tenancy_service_pb.js';
