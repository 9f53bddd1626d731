/**
 * `authz-service/client`: a typed client of the authz service for Node applications and the
 * `authz` command line. See docs/cli.md#the-typescript-client.
 */
export { createAuthzClient, type AuthzClient, type Health } from './client.js';
export type { Listing, ListingOptions, LookupResourcesQuery, LookupSubjectsQuery } from './listings.js';
export { AuthzError, codeName, type AuthzErrorInit } from './errors.js';
export type { KeyDescription, KeyKind } from './key.js';
export { scopePathSegments } from './resolve.js';
export { toRestJson } from './rest-json.js';
export { createServiceClient, SERVICES, type ServiceClients } from './services.js';
export { DEFAULT_TIMEOUT_MS, normalizeBaseUrl, type ConnectionOptions } from './transport.js';
export * as messages from './messages.js';
