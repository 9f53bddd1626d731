/**
 * Test support: a fake KeyVerifier and small in-memory implementations of real generated
 * services, to exercise the server, the gateway and auth without a database. Not for production.
 */
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { ConnectRouter, HandlerContext } from '@connectrpc/connect';
import { pino } from 'pino';
import { invalid, notFound } from '../services/common/errors.js';
import { DecisionService } from '../gen/authz/v1/decision_service_pb.js';
import { ResourceSchema, type Resource } from '../gen/authz/v1/resource_pb.js';
import { ResourceService } from '../gen/authz/v1/resource_service_pb.js';
import { ScopeSchema } from '../gen/authz/v1/scope_pb.js';
import { ScopeService } from '../gen/authz/v1/scope_service_pb.js';
import { TenantSchema } from '../gen/authz/v1/tenancy_pb.js';
import { TenancyService } from '../gen/authz/v1/tenancy_service_pb.js';
import { assertTenantReach, principalOf, type KeyVerifier, type Principal } from '../services/control-plane/auth/principal.js';
import { createRegistry } from '../services/transport/observability.js';
import { setRevision } from '../services/transport/revision.js';
import { startServer, type RunningServer, type StartServerOptions } from '../services/transport/server.js';
import { apiKeyCaller, authInterceptor } from '../services/control-plane/auth/interceptor.js';

export const KEYS = {
  platform: 'sk_platform_0123456789abcdef0123456789abcdef',
  user: 'sk_user_0123456789abcdef0123456789abcdef',
  service: 'sk_service_0123456789abcdef0123456789abcdef',
  otherUser: 'sk_user_b_0123456789abcdef0123456789abcdef',
} as const;

export const PRINCIPALS: Record<keyof typeof KEYS, Principal> = {
  platform: { keyId: 'apk_platform', kind: 'platform', subjectId: 'subject_platform' },
  user: { keyId: 'apk_user', kind: 'user', tenantId: 'tenant_a', subjectId: 'subject_user' },
  service: { keyId: 'apk_service', kind: 'service', tenantId: 'tenant_a', subjectId: 'subject_service' },
  otherUser: { keyId: 'apk_user_b', kind: 'user', tenantId: 'tenant_b', subjectId: 'subject_user_b' },
};

/** Verifies the secrets in KEYS; counts calls. */
export class FakeKeyVerifier implements KeyVerifier {
  calls = 0;
  async verify(secret: string): Promise<Principal | null> {
    this.calls++;
    for (const [name, s] of Object.entries(KEYS)) if (s === secret) return PRINCIPALS[name as keyof typeof KEYS];
    return null;
  }
}

type ResourceInit = Pick<MessageInitShape<typeof ResourceSchema>, 'resourceTypeId' | 'ownerScopeId' | 'externalResourceId' | 'displayName' | 'attributes'> & {
  id?: string;
};

/** A tiny in-memory world behind a few real services. */
export class FakeWorld {
  revision = 41;
  resources = new Map<string, Resource>();
  seq = 0;
  /** The last handler context seen, for assertions on context values. */
  lastContext?: HandlerContext;

  bump(ctx: HandlerContext): void {
    this.revision++;
    setRevision(ctx, this.revision);
  }

  makeResource(init: ResourceInit, ctx?: HandlerContext): Resource {
    const id = init.id || `resource_${String(++this.seq).padStart(4, '0')}`;
    if (this.resources.has(id)) throw invalid('id', `resource ${id} already exists`);
    const r = create(ResourceSchema, {
      resourceTypeId: init.resourceTypeId,
      ownerScopeId: init.ownerScopeId,
      externalResourceId: init.externalResourceId,
      displayName: init.displayName,
      attributes: init.attributes,
      id,
      tenantId: 'tenant_a',
      scopeId: init.ownerScopeId,
      createdAt: timestampFromDate(new Date('2025-01-02T03:04:05Z')),
      createdBy: ctx ? principalOf(ctx).subjectId : '',
    });
    this.resources.set(id, r);
    return r;
  }

  routes = (router: ConnectRouter): void => {
    router.service(ResourceService, {
      createResource: (req, ctx) => {
        this.lastContext = ctx;
        const resource = this.makeResource(req, ctx);
        this.bump(ctx);
        return { resource };
      },
      batchCreateResources: (req, ctx) => {
        const seen = new Set<string>();
        req.items.forEach((it, i) => {
          if (it.id && seen.has(it.id)) throw invalid(`items[${i}].id`, 'duplicate id');
          if (it.id) seen.add(it.id);
        });
        const resources = req.items.map((it) => this.makeResource(it, ctx));
        this.bump(ctx);
        return { resources };
      },
      getResource: (req, ctx) => {
        this.lastContext = ctx;
        if (req.id === 'resource_boom') throw new Error('database password=hunter2 exploded');
        const resource = this.resources.get(req.id);
        if (!resource) throw notFound('resource', req.id, 'id');
        return { resource };
      },
      listResources: (req) => {
        const all = [...this.resources.values()].filter((r) => !req.scopeId || r.ownerScopeId === req.scopeId).sort((a, b) => a.id.localeCompare(b.id));
        const limit = req.limit || 100;
        const start = req.cursor ? all.findIndex((r) => r.id > req.cursor) : 0;
        const page = start === -1 ? [] : all.slice(start, start + limit);
        const more = start !== -1 && start + limit < all.length;
        return { resources: page, nextCursor: more ? page[page.length - 1].id : '' };
      },
      updateResource: (req, ctx) => {
        const r = this.resources.get(req.id);
        if (!r) throw notFound('resource', req.id, 'id');
        if (req.displayName !== undefined) r.displayName = req.displayName;
        if (req.attributes) r.attributes = req.attributes;
        this.bump(ctx);
        return { resource: r };
      },
      deleteResource: (req, ctx) => {
        if (!this.resources.delete(req.id)) throw notFound('resource', req.id, 'id');
        this.bump(ctx);
        return {};
      },
      deleteResourceEdge: (req, ctx) => {
        this.lastContext = ctx;
        this.bump(ctx);
        ctx.responseHeader.set('x-test-edge', `${req.parentResourceId}>${req.childResourceId}`);
        return {};
      },
      listResourceAncestors: (req) => ({
        resourceAncestors: [{ id: `${req.resourceId}_parent`, cascade: 'inherit', depth: 1 }],
        nextCursor: '',
      }),
    });
    router.service(ScopeService, {
      listScopeChildren: (req) => ({
        scopes: [create(ScopeSchema, { id: `${req.id}_child`, name: 'child', typeId: 'scope_type_x' })],
        nextCursor: '',
      }),
      getScope: (req) => ({ scope: create(ScopeSchema, { id: req.id, name: 'a scope' }) }),
    });
    router.service(TenancyService, {
      getTenant: (req, ctx) => {
        assertTenantReach(principalOf(ctx), req.id);
        return {
          tenant: create(TenantSchema, { id: req.id, name: 'Tenant', scopeId: `scope_${req.id}`, revision: 9_007_199_254n }),
        };
      },
      createProject: (req, ctx) => {
        assertTenantReach(principalOf(ctx), req.tenantId);
        this.bump(ctx);
        return { project: { id: req.id ?? 'project_1', tenantId: req.tenantId, name: req.name, scopeId: 'scope_p' } };
      },
    });
    router.service(DecisionService, {
      evaluate: (req, ctx) => {
        this.lastContext = ctx;
        return { allowed: false, reason: 'no_match', revision: BigInt(this.revision), decidedByPolicy: false };
      },
    });
  };
}

/**
 * Starts a server on a free port with the fake world and verifier; a silent logger unless
 * given. `overrides.routes`, when given, registers services in addition to the fake world's, and
 * `overrides.interceptors` run after authentication.
 */
export async function startFakeServer(
  overrides: Partial<StartServerOptions> = {},
): Promise<{ server: RunningServer; world: FakeWorld; verifier: FakeKeyVerifier }> {
  const world = new FakeWorld();
  const verifier = new FakeKeyVerifier();
  const { routes: extraRoutes, interceptors, ...rest } = overrides;
  const server = await startServer({
    host: '127.0.0.1',
    port: 0,
    logger: pino({ level: 'silent' }),
    registry: createRegistry({ defaultMetrics: false }),
    // The caller checked before the body is read, as the control plane does.
    authenticate: apiKeyCaller(verifier),
    ...rest,
    // Authentication first, as the control plane does; `overrides.interceptors` run after it.
    interceptors: [authInterceptor(verifier), ...(interceptors ?? [])],
    routes: (router) => {
      world.routes(router);
      extraRoutes?.(router);
    },
  });
  return { server, world, verifier };
}
