import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import { ApiKeyService } from '../../../gen/authz/v1/api_key_service_pb.js';
import type { CreateApiKeyRequest } from '../../../gen/authz/v1/api_key_service_pb.js';
import type { ApiKey } from '../../../gen/authz/v1/api_key_pb.js';
import { invalid, permissionDenied } from '../../common/errors.js';
import { newId } from '../../common/ids.js';
import { rowToMessage, type Row } from '../../store/kinds.js';
import { listRows } from '../../store/rows.js';
import { assertTenantReach, principalOf } from '../auth/principal.js';
import { generateSecret, secretColumns, statusOf } from '../auth/key-store.js';
import { jsonObject, oneOf, optionalString, requireString } from '../../common/validate.js';
import { createMany, refIn, type CreateSpec } from './batch-create.js';
import type { Deps } from './deps.js';
import { requireTenant } from './reads.js';
import { loadForWrite, writeOne } from './writes.js';

const KEY_KINDS = ['user', 'service', 'platform'] as const;

/**
 * The create spec. Each key gets a fresh secret (kept in `secrets` for the response only)
 * and its own subject of type `service` in the key's tenant (no tenant for platform keys).
 */
function apiKeys(secrets: Map<string, string>): CreateSpec<CreateApiKeyRequest, 'apiKey'> {
  return {
    kind: 'apiKey',
    tenantRef: (item, principal) => ['tenant', item.kind === 'platform' ? undefined : item.tenantId || principal.tenantId, 'tenantId'],
    async preload(b, items) {
      await b.preload('tenant', items.map((i) => i.tenantId ?? b.principal.tenantId));
      await b.preload('environment', items.map((i) => i.environmentId));
    },
    async build(b, item, p) {
      const id = b.id('apiKey', item.id, `${p}id`);
      const name = requireString(item.name, `${p}name`);
      const kind = oneOf(item.kind, KEY_KINDS, `${p}kind`, 'user');
      if (kind === 'platform' && b.principal.kind !== 'platform') {
        throw permissionDenied(`${p}kind: a ${b.principal.kind} key cannot create platform keys`);
      }
      let tenantId: string | null = null;
      let environmentId: string | null = null;
      if (kind === 'platform') {
        if (item.tenantId) throw invalid(`${p}tenantId`, 'must be absent for platform keys, which span tenants');
        if (item.environmentId) throw invalid(`${p}environmentId`, 'must be absent for platform keys, which span tenants');
      } else {
        tenantId = optionalString(item.tenantId, `${p}tenantId`) ?? b.principal.tenantId ?? null;
        if (!tenantId) throw invalid(`${p}tenantId`, `is required for ${kind} keys when the calling key names no tenant`);
        assertTenantReach(b.principal, tenantId, `${p}tenantId`);
        await b.ref('tenant', tenantId, `${p}tenantId`);
        await b.tenant(tenantId, `${p}tenantId`);
        environmentId = optionalString(item.environmentId, `${p}environmentId`) ?? null;
        // A key restricted to an environment mints keys of that environment only: never wider.
        const own = b.principal.environment;
        if (own) {
          if (environmentId !== null && environmentId !== own.id) {
            throw permissionDenied(`${p}environmentId: a key restricted to environment ${own.id} cannot create keys for another environment`, `${p}environmentId`);
          }
          environmentId = own.id;
        }
        if (environmentId) await refIn(b, 'environment', environmentId, `${p}environmentId`, tenantId);
      }
      let expiresAt: Date | null = null;
      if (item.expiresAt) {
        expiresAt = timestampDate(item.expiresAt);
        if (expiresAt.getTime() <= b.now.getTime()) throw invalid(`${p}expiresAt`, 'is in the past');
      }
      const secret = generateSecret();
      secrets.set(id, secret);
      const subjectId = newId('subject');
      b.before.push({
        kind: 'subject',
        row: { ...b.base(subjectId), tenantId, type: 'service', externalId: id, metadata: null },
      });
      return {
        id, subjectId, tenantId, environmentId, name,
        description: optionalString(item.description, `${p}description`) ?? '',
        ...secretColumns(secret),
        createdBySubjectId: b.principal.subjectId, createdAt: b.now, expiresAt, status: 'active',
        intendedUse: optionalString(item.intendedUse, `${p}intendedUse`) ?? '',
        kind, metadata: jsonObject(item.metadata, `${p}metadata`) ?? null,
      };
    },
  };
}

/** A key as callers see it: never the secret, and `expired` once past `expiresAt`. */
export function apiKeyMessage(row: Row, now = new Date()): ApiKey {
  return rowToMessage('apiKey', { ...row, status: statusOf(row, now) });
}

async function create(deps: Deps, ctx: HandlerContext, items: CreateApiKeyRequest[], batch: boolean): Promise<ApiKey[]> {
  const secrets = new Map<string, string>();
  const keys = await createMany(deps, ctx, apiKeys(secrets), items, batch);
  return keys.map((k) => ({ ...k, secretKey: secrets.get(k.id) }));
}

export function apiKeyService(deps: Deps): ServiceImpl<typeof ApiKeyService> {
  return {
    async createApiKey(req, ctx) {
      return { apiKey: (await create(deps, ctx, [req], false))[0] };
    },
    async batchCreateApiKeys(req, ctx) {
      return { apiKeys: await create(deps, ctx, req.items, true) };
    },
    /**
     * `?tenantId=` defaults to the caller's tenant; a platform key without it lists every
     * key (the operator's view, platform keys included).
     */
    async listApiKeys(req, ctx) {
      const principal = principalOf(ctx);
      const tenantId = optionalString(req.tenantId, 'tenantId') ?? principal.tenantId;
      const where: Record<string, string> = {};
      if (tenantId) {
        await requireTenant(deps, ctx, tenantId, 'tenantId');
        where.tenantId = tenantId;
      } else {
        assertPlatform(principal.kind);
      }
      if (principal.environment) where.environmentId = principal.environment.id;
      const { rows, nextCursor } = await listRows(deps.db, 'apiKey', where, req);
      const now = new Date();
      return { apiKeys: rows.map((r) => apiKeyMessage(r, now)), nextCursor };
    },
    /** Revokes the key (it stays listed as `revoked`); revoking a revoked key is a no-op. */
    async deleteApiKey(req, ctx) {
      const id = requireString(req.id, 'id');
      await writeOne(deps, ctx, async (tx, principal) => {
        const row = await loadForWrite(tx, principal, 'apiKey', id);
        if (!row.tenantId) assertPlatform(principal.kind);
        if (principal.environment && row.environmentId !== principal.environment.id) {
          throw permissionDenied(`a key restricted to environment ${principal.environment.id} revokes keys of that environment only`, 'id');
        }
        if (row.status !== 'revoked') await tx.update('apiKey', row, { status: 'revoked' });
      });
      return {};
    },
  };
}

function assertPlatform(kind: string) {
  if (kind !== 'platform') throw permissionDenied('only a platform key reaches keys outside a tenant');
}

