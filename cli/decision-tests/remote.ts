/**
 * The server targets: the model applied to a tenant of a control plane (a scratch tenant made
 * for the run, or `--tenant`), then every case asked of the control plane or of a sidecar with
 * the apply's revision as `minRevision`, so a sidecar answers only once it has the whole model.
 * Subjects are sent by external id; scope paths and resources become ids through the control
 * plane's listings, read once after the apply.
 */
import { randomBytes } from 'node:crypto';
import type { JsonObject } from '@bufbuild/protobuf';
import { Code } from '@connectrpc/connect';
import type { AuthzClient } from '../../client/client.js';
import { AuthzError } from '../../client/errors.js';
import { allPages } from '../../client/resolve.js';
import { toRestJson } from '../../client/rest-json.js';
import { createServiceClient } from '../../client/services.js';
import { EvaluateResponseSchema } from '../../gen/authz/v1/decision_service_pb.js';
import { TenantModelService } from '../../gen/authz/v1/tenant_model_service_pb.js';
import { conditionContext } from '../../services/engine/mod.js';
import { SECTIONS, policyIdFor, type CheckCase, type CheckedModel, type LookupCase, type PermissionsCase } from '../../services/model/mod.js';
import type { DecisionJson } from '../explain.js';
import { splitResourceRef } from './offline.js';
import type { DecisionTarget } from './run.js';

/** The tenant the cases run in, the revision the model was applied at, and the names' ids there. */
export interface PreparedTenant {
  tenantId: string;
  revision: bigint;
  /** Whether the tenant was made for this run (and is emptied after it). */
  scratch: boolean;
  scopeIds: Map<string, string>;
  policyNames: Map<string, string>;
  /** The owner scope path of each of the model's resources, `type/external id` → path. */
  resourceScopes: Map<string, string>;
}

export interface PrepareOptions {
  /** An existing tenant; a scratch tenant is made when absent. */
  tenantId?: string;
  /** Apply the model (false: test the tenant as it is). */
  apply: boolean;
  modelText: string;
  modelFile: string;
  model: CheckedModel;
}

/** Path of every scope of the tenant from its root (`/`, `/eng`, `/eng/platform`). */
async function scopePaths(client: AuthzClient, tenantId: string): Promise<Map<string, string>> {
  const { tenant } = await client.tenancy.getTenant({ id: tenantId });
  const scopes = await allPages(async (cursor) => {
    const r = await client.scopes.listScopes({ tenantId, limit: 1000, cursor });
    return { items: r.scopes, nextCursor: r.nextCursor };
  });
  const byId = new Map(scopes.map((s) => [s.id, s]));
  const paths = new Map<string, string>([[tenant!.scopeId, '/']]);
  const pathOf = (id: string, depth = 0): string | undefined => {
    const known = paths.get(id);
    if (known !== undefined || depth > 64) return known;
    const s = byId.get(id);
    const parent = s?.parentId ? pathOf(s.parentId, depth + 1) : undefined;
    if (parent === undefined) return undefined;
    const p = `${parent === '/' ? '' : parent}/${s!.name}`;
    paths.set(id, p);
    return p;
  };
  const out = new Map<string, string>();
  for (const s of scopes) {
    const p = pathOf(s.id);
    if (p !== undefined && !out.has(p)) out.set(p, s.id);
  }
  out.set('/', tenant!.scopeId);
  return out;
}

/** Makes (or takes) the tenant, applies the model, and reads the ids of the names the cases use. */
export async function prepareTenant(client: AuthzClient, o: PrepareOptions): Promise<PreparedTenant> {
  let tenantId = o.tenantId;
  const scratch = tenantId === undefined;
  if (tenantId === undefined) {
    const { tenant } = await client.tenancy.createTenant({ name: `authz-test-${randomBytes(4).toString('hex')}` });
    tenantId = tenant!.id;
  }
  const models = createServiceClient(TenantModelService, client.transport);
  let revision: bigint;
  if (o.apply) {
    revision = (await models.applyTenantModel({ tenantId, document: o.modelText, fileName: o.modelFile, prune: false })).revision;
  } else {
    revision = (await client.tenancy.getTenant({ id: tenantId })).tenant!.revision;
  }
  const policyNames = new Map<string, string>();
  for (const p of o.model.model?.policies ?? []) {
    const id = policyIdFor(tenantId, p.name);
    if (id) policyNames.set(id, p.name);
  }
  const resourceScopes = new Map((o.model.model?.resources ?? []).map((r) => [`${r.type}/${r.externalId}`, r.scope ?? '/']));
  return { tenantId, revision, scratch, scopeIds: await scopePaths(client, tenantId), policyNames, resourceScopes };
}

/**
 * Empties a scratch tenant: the model of every section but the global scope types, empty, with
 * prune. What the API cannot delete stays: the tenant itself, its scopes, tag groups and tags;
 * the tenant's name (`authz-test-…`) says what it was.
 */
export async function emptyScratchTenant(client: AuthzClient, t: PreparedTenant): Promise<void> {
  if (!t.scratch) return;
  const empty = Object.fromEntries(SECTIONS.filter((s) => s !== 'scopeTypes').map((s) => [s, []]));
  const models = createServiceClient(TenantModelService, client.transport);
  await models.applyTenantModel({ tenantId: t.tenantId, document: JSON.stringify({ apiVersion: 'authz/v1', kind: 'TenantModel', ...empty }), prune: true });
}

const notFound = (what: string) => new AuthzError(`${what} is not in the tenant`, Code.NotFound);

/**
 * A target asking `decisions` (the control plane's client, or a sidecar's) in the prepared
 * tenant, each request with `minRevision` = the apply's revision. `now` goes in the context's
 * `time` (policies' windows are judged by the server's clock).
 */
export function serverTarget(kind: 'control-plane' | 'sidecar', decisions: AuthzClient, controlPlane: AuthzClient, t: PreparedTenant, now: Date | undefined): DecisionTarget {
  const consistency = { minRevision: t.revision };
  const scopeId = (path: string) => {
    const id = t.scopeIds.get(path);
    if (id === undefined) throw notFound(`scope ${path}`);
    return id;
  };
  const names = new Map<string, string>([...t.policyNames]);
  for (const [path, id] of t.scopeIds) names.set(id, path);
  const resourceIds = new Map<string, string>();
  const typeKeys = new Map<string, Promise<string | undefined>>();
  const typeKeyOf = (id: string) => {
    if (!typeKeys.has(id)) typeKeys.set(id, controlPlane.resourceTypes.getResourceType({ id }).then((r) => r.resourceType?.key));
    return typeKeys.get(id)!;
  };
  const resourceId = async (ref: string): Promise<string> => {
    const known = resourceIds.get(ref);
    if (known) return known;
    const { resourceType, externalResourceId } = splitResourceRef(ref);
    const scope = t.resourceScopes.get(ref);
    if (scope === undefined) throw notFound(`resource ${ref} (the model does not list it)`);
    const owned = await allPages(async (cursor) => {
      const r = await controlPlane.resources.listResources({ scopeId: scopeId(scope), limit: 1000, cursor });
      return { items: r.resources, nextCursor: r.nextCursor };
    });
    for (const r of owned.filter((x) => x.externalResourceId === externalResourceId)) {
      if ((await typeKeyOf(r.resourceTypeId)) === resourceType) {
        resourceIds.set(ref, r.id);
        names.set(r.id, ref);
        return r.id;
      }
    }
    throw notFound(`resource ${ref}`);
  };
  /** `now` as the context's `time`, unless the case gives one. */
  const withTime = (context: CheckCase['context']) => (now && context?.time === undefined ? { ...context, time: conditionContext(context, now).time } : context);
  return {
    kind,
    where: decisions.baseUrl,
    async decide(c: CheckCase) {
      const context = withTime(c.context);
      const response = await decisions.decisions.evaluate({
        actor: { externalId: c.subject, ...(c.subjectType ? { subjectType: c.subjectType } : {}) },
        scopeId: scopeId(c.scope),
        action: c.action,
        ...(c.resource ? { resource: splitResourceRef(c.resource) } : {}),
        ...(context ? { context: context as JsonObject } : {}),
        explain: true,
        consistency,
      });
      return toRestJson(EvaluateResponseSchema, response) as unknown as DecisionJson;
    },
    policyName: (id) => t.policyNames.get(id),
    nameOf: (id) => names.get(id),
    async permissions(c: PermissionsCase) {
      const rid = c.resource ? await resourceId(c.resource) : undefined;
      const r = await decisions.decisions.getEffectivePermissions({ subjectExternalId: c.subject, scopeId: scopeId(c.scope), ...(rid ? { resourceId: rid } : {}), consistency });
      return r.permissions.map((p) => `${p.resourceType}:${p.action}:${p.resourcePattern === rid ? c.resource : p.resourcePattern}`);
    },
    async lookup(c: LookupCase) {
      // Every page (the client pages to the end), the first at the apply's revision.
      if ('resources' in c) {
        const q = c.resources;
        const context = withTime(q.context);
        const listing = await decisions.lookupAllResources({
          actor: { externalId: q.subject, ...(q.subjectType ? { subjectType: q.subjectType } : {}) },
          scopeId: scopeId(q.scope), action: q.action, ...(q.resourceType ? { resourceType: q.resourceType } : {}),
          ...(context ? { context: context as JsonObject } : {}), consistency,
        }, { pageSize: 1000 });
        return listing.items.map((r) => `${r.resourceType}/${r.externalResourceId}`);
      }
      const q = c.subjects;
      const context = withTime(q.context);
      const listing = await decisions.lookupAllSubjects({
        scopeId: scopeId(q.scope), action: q.action, ...(q.resource ? { resource: splitResourceRef(q.resource) } : {}),
        ...(q.subjectType ? { subjectType: q.subjectType } : {}), ...(context ? { context: context as JsonObject } : {}), consistency,
      }, { pageSize: 1000 });
      return listing.items.map((s) => s.externalId);
    },
  };
}
