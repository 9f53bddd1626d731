import type { JsonObject } from '@bufbuild/protobuf';
import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import type { ServiceImpl } from '@connectrpc/connect';
import { PolicyService } from '../../../gen/authz/v1/policy_service_pb.js';
import type { CreateResourceCollectionRequest, CreateResourcePolicyRequest } from '../../../gen/authz/v1/policy_service_pb.js';
import { DomainError, invalid } from '../../common/errors.js';
import { validateJsonLogic } from '../../engine/jsonlogic.js';
import { validateMatchDefinition } from '../../engine/match.js';
import { deleteCollectionWithPolicies } from '../../store/resource-types.js';
import { EFFECTS, POLICY_TARGET_KINDS as TARGET_KINDS } from '../../common/vocabulary.js';
import { jsonObject, oneOf, optionalString, requireString } from '../../common/validate.js';
import { createMany, enterScope, refIn, type CreateSpec } from './batch-create.js';
import type { Deps } from './deps.js';
import { getOne, listMany, tenantOfRef } from './reads.js';
import { deleteOne } from './writes.js';


/** `invalid_argument` from a validator message `<field path>: <why>`, naming that path. */
function invalidAt(message: string, fallbackField: string): DomainError {
  const at = message.indexOf(': ');
  return new DomainError('invalid', message, at > 0 ? message.slice(0, at) : fallbackField);
}

/** A match definition: at most 16 KiB of JSON and valid for the engine. */
function matchDefinition(def: JsonObject, field: string): JsonObject {
  jsonObject(def, field);
  const err = validateMatchDefinition(def, field);
  if (err) throw invalidAt(err, field);
  return def;
}

/** An optional JSON Logic condition: at most 16 KiB, depth ≤ 32, no prototype access. */
function condition(rule: JsonObject | undefined, field: string): JsonObject | null {
  if (rule === undefined) return null;
  jsonObject(rule, field);
  const err = validateJsonLogic(rule);
  if (err) throw invalidAt(err.startsWith('rule') ? field + err.slice('rule'.length) : `${field}: ${err}`, field);
  return rule;
}

const date = (t: Timestamp | undefined) => (t === undefined ? null : timestampDate(t));

export const collections: CreateSpec<CreateResourceCollectionRequest, 'collection'> = {
  kind: 'collection',
  tenantRef: (item) => ['scope', item.scopeId, 'scopeId'],
  async preload(b, items) {
    await b.preload('scope', items.map((i) => i.scopeId));
    await b.preload('resourceType', items.map((i) => i.resourceTypeId));
  },
  async build(b, item, p) {
    const id = b.id('collection', item.id, `${p}id`);
    const scopeId = requireString(item.scopeId, `${p}scopeId`);
    const resourceTypeId = requireString(item.resourceTypeId, `${p}resourceTypeId`);
    const name = requireString(item.name, `${p}name`);
    const description = optionalString(item.description, `${p}description`) ?? '';
    if (item.match !== undefined && item.matchDefinition !== undefined) {
      throw invalid(`${p}matchDefinition`, 'send the match definition as either match or matchDefinition, not both');
    }
    const def = item.match !== undefined
      ? matchDefinition(item.match, `${p}match`)
      : item.matchDefinition !== undefined
        ? matchDefinition(item.matchDefinition, `${p}matchDefinition`)
        : undefined;
    if (def === undefined) throw invalid(`${p}match`, 'is required (a match definition; also accepted as matchDefinition)');
    const tenantId = (await enterScope(b, scopeId, `${p}scopeId`)).tenantId as string;
    await refIn(b, 'resourceType', resourceTypeId, `${p}resourceTypeId`, tenantId);
    return { ...b.base(id, tenantId), scopeId, resourceTypeId, name, description, matchDefinition: def };
  },
};

export const policies: CreateSpec<CreateResourcePolicyRequest, 'policy'> = {
  kind: 'policy',
  tenantRef: (item) => ['scope', item.scopeId, 'scopeId'],
  async preload(b, items) {
    await b.preload('scope', items.map((i) => i.scopeId));
    await b.preload('resource', items.map((i) => (i.target?.kind === 'resource' ? i.target.resourceId : undefined)));
    await b.preload('collection', items.map((i) => (i.target?.kind === 'collection' ? i.target.collectionId : undefined)));
  },
  async build(b, item, p) {
    // `name` and `description` are accepted and dropped: policies have neither (spec).
    const id = b.id('policy', item.id, `${p}id`);
    const scopeId = requireString(item.scopeId, `${p}scopeId`);
    if (!item.target) throw invalid(`${p}target`, 'is required ({kind: "resource", resourceId} or {kind: "collection", collectionId})');
    const kind = oneOf(item.target.kind, TARGET_KINDS, `${p}target.kind`);
    const [idField, otherField] = kind === 'resource' ? ['resourceId', 'collectionId'] as const : ['collectionId', 'resourceId'] as const;
    const targetId = requireString(item.target[idField], `${p}target.${idField}`);
    if (item.target[otherField]) throw invalid(`${p}target.${otherField}`, `must be absent for a ${kind} target`);
    if (item.actions.length === 0) throw invalid(`${p}actions`, 'must hold at least one action ("*" for all)');
    const actions = item.actions.map((a, i) => requireString(a, `${p}actions[${i}]`));
    const effect = oneOf(item.effect, EFFECTS, `${p}effect`);
    const subjectCondition = condition(item.subjectCondition, `${p}subjectCondition`);
    const contextCondition = condition(item.contextCondition, `${p}contextCondition`);
    const validFrom = date(item.validFrom);
    const validUntil = date(item.validUntil);
    if (validFrom && validUntil && validFrom.getTime() >= validUntil.getTime()) {
      throw invalid(`${p}validUntil`, 'must be later than validFrom');
    }
    const tenantId = (await enterScope(b, scopeId, `${p}scopeId`)).tenantId as string;
    await refIn(b, kind === 'resource' ? 'resource' : 'collection', targetId, `${p}target.${idField}`, tenantId);
    return {
      ...b.base(id, tenantId), scopeId, target: { kind, [idField]: targetId }, targetId, actions, effect,
      priority: item.priority, subjectCondition, contextCondition, validFrom, validUntil,
    };
  },
};

export function policyService(deps: Deps): ServiceImpl<typeof PolicyService> {
  return {
    async createResourceCollection(req, ctx) {
      return { resourceCollection: (await createMany(deps, ctx, collections, [req], false))[0] };
    },
    async batchCreateResourceCollections(req, ctx) {
      return { resourceCollections: await createMany(deps, ctx, collections, req.items, true) };
    },
    async getResourceCollection(req, ctx) {
      return { resourceCollection: await getOne(deps, ctx, 'collection', requireString(req.id, 'id')) };
    },
    async listResourceCollections(req, ctx) {
      const scopeId = requireString(req.scopeId, 'scopeId');
      await tenantOfRef(deps, ctx, 'scope', scopeId, 'scopeId');
      const { items, nextCursor } = await listMany(deps, 'collection', { scopeId }, req);
      return { resourceCollections: items, nextCursor };
    },
    async deleteResourceCollection(req, ctx) {
      return deleteOne(deps, ctx, 'collection', req.id, deleteCollectionWithPolicies);
    },
    async createResourcePolicy(req, ctx) {
      return { resourcePolicy: (await createMany(deps, ctx, policies, [req], false))[0] };
    },
    async batchCreateResourcePolicies(req, ctx) {
      return { resourcePolicies: await createMany(deps, ctx, policies, req.items, true) };
    },
    async getResourcePolicy(req, ctx) {
      return { resourcePolicy: await getOne(deps, ctx, 'policy', requireString(req.id, 'id')) };
    },
    async listResourcePolicies(req, ctx) {
      const scopeId = requireString(req.scopeId, 'scopeId');
      await tenantOfRef(deps, ctx, 'scope', scopeId, 'scopeId');
      const { items, nextCursor } = await listMany(deps, 'policy', { scopeId }, req);
      return { resourcePolicies: items, nextCursor };
    },
    async deleteResourcePolicy(req, ctx) {
      return deleteOne(deps, ctx, 'policy', req.id);
    },
  };
}
