/**
 * The authz client: one typed client per service over one Connect transport, and the lookups a
 * person's names need before a decision (scope paths, subjects by external id).
 */
import type { Transport } from '@connectrpc/connect';
import type { Scope } from '../gen/authz/v1/scope_pb.js';
import type { Subject } from '../gen/authz/v1/subject_pb.js';
import { describeKey, type KeyDescription } from './key.js';
import { lookupAllResources, lookupAllSubjects, type Listing, type ListingOptions, type LookupResourcesQuery, type LookupSubjectsQuery } from './listings.js';
import type { LookupResource, LookupSubject } from '../gen/authz/v1/decision_service_pb.js';
import { resolveScopePath, resolveSubject } from './resolve.js';
import { createServiceClients, type ServiceClients } from './services.js';
import { createTransport, normalizeBaseUrl, probeStatus, type ConnectionOptions } from './transport.js';

export interface Health {
  /** `GET /healthz` answered 200: the process is up. */
  live: boolean;
  /** `GET /readyz` answered 200: it can answer correctly (database reachable; a sidecar's snapshot fresh). */
  ready: boolean;
}

export interface AuthzClient extends ServiceClients {
  /** The base URL calls go to, normalised (no trailing slash). */
  readonly baseUrl: string;
  readonly transport: Transport;
  /** The tenant's scope at `path`, as a model file writes it: `/eng/platform`, `/` for the root. Needs a `platform` key. */
  resolveScopePath(tenantId: string, path: string): Promise<Scope>;
  /** The tenant's subject with `externalId` (and `type`, when several share it). Needs a `platform` key. */
  resolveSubject(tenantId: string, externalId: string, type?: string): Promise<Subject>;
  /** Every resource `query.actor` may act on, paged to the end (or to `options.limit`). */
  lookupAllResources(query: LookupResourcesQuery, options?: ListingOptions): Promise<Listing<LookupResource>>;
  /** Every subject that may act on `query.resource`, paged to the end (or to `options.limit`). */
  lookupAllSubjects(query: LookupSubjectsQuery, options?: ListingOptions): Promise<Listing<LookupSubject>>;
  /** The kind of the client's API key (`platform`, `user`, `service`), from the tiers it reaches. */
  describeKey(): Promise<KeyDescription>;
  /** The process's probes; rejects when it cannot be reached. */
  health(): Promise<Health>;
}

/**
 * A client of a control plane (or a sidecar, which serves DecisionService only). Calls fail with
 * AuthzError; `options.apiKey` goes in `x-api-key`. Throws TypeError for a malformed base URL.
 */
export function createAuthzClient(options: ConnectionOptions): AuthzClient {
  const baseUrl = normalizeBaseUrl(options.baseUrl);
  const transport = createTransport({ ...options, baseUrl });
  const clients = createServiceClients(transport);
  return {
    ...clients,
    baseUrl,
    transport,
    resolveScopePath: (tenantId, path) => resolveScopePath(clients, tenantId, path),
    resolveSubject: (tenantId, externalId, type) => resolveSubject(clients, tenantId, externalId, type),
    lookupAllResources: (query, options) => lookupAllResources(clients, query, options),
    lookupAllSubjects: (query, options) => lookupAllSubjects(clients, query, options),
    describeKey: () => describeKey(clients),
    async health() {
      const [live, ready] = await Promise.all([probeStatus(options, '/healthz'), probeStatus(options, '/readyz')]);
      return { live: live === 200, ready: ready === 200 };
    },
  };
}
