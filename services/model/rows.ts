/**
 * An entity of a model as the API's create request holds it: its fields, and its references as
 * the ids of what they name. Apply sends these through the entity APIs' create rules; an offline
 * index (snapshot.ts) is built from them.
 */
import type { JsonObject } from '../engine/model.js';
import { parentPath, qualified, splitResource, type Entity, type EntityKind } from './entities.js';

/** The id of the entity `key` of `kind` (throws when the caller has none: a bug, not an input). */
export type IdOf = (kind: EntityKind, key: string) => string;

const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
const object = (v: unknown) => (v === undefined || v === null ? undefined : (v as JsonObject));
const key = (...parts: string[]) => JSON.stringify(parts);

/** A map of ids as an IdOf. */
export function idsOf(ids: ReadonlyMap<string, string>): IdOf {
  return (kind, k) => {
    const found = ids.get(qualified(kind, k));
    if (found === undefined) throw new Error(`no id for ${kind} ${k}`);
    return found;
  };
}

/**
 * The create request fields of an entity whose id is `entityId`, in the API's field names;
 * times as ISO strings, a collection's match definition as `match`, a tag group unlocked (apply
 * locks it after its tags).
 */
export function apiFields(kind: EntityKind, e: Entity, entityId: string, tenantId: string, id: IdOf): Record<string, unknown> {
  const k = JSON.parse(e.key) as string[];
  const f = e.fields;
  const scope = (path: unknown) => id('scope', key(path as string));
  const type = (typeKey: string) => id('resourceType', key(typeKey));
  const resource = (ref: string) => {
    const r = splitResource(ref);
    return id('resource', key(r.type, r.externalId));
  };
  switch (kind) {
    case 'scopeType':
      return { id: entityId, name: k[0], description: text(f.description) ?? '' };
    case 'scope':
      return { id: entityId, name: k[0].slice(k[0].lastIndexOf('/') + 1), typeId: id('scopeType', key(f.type as string)), parentId: scope(parentPath(k[0])) };
    case 'resourceType':
      return { id: entityId, key: k[0], name: f.name, scopeId: scope(f.scope) };
    case 'resourceTypeEdge':
      return { id: entityId, parentTypeId: type(k[0]), childTypeId: type(k[1]) };
    case 'permission': {
      const [resourceType, action] = k[1].split(':');
      return {
        id: entityId, scopeId: scope(k[0]), resourceType, action, resourcePattern: k[1].slice(resourceType.length + action.length + 2),
        name: text(f.name) ?? '', description: text(f.description) ?? '',
      };
    }
    case 'role':
      return { id: entityId, scopeId: scope(k[0]), key: k[1], name: f.name, description: text(f.description) ?? '' };
    case 'rolePermission':
      return { id: entityId, roleId: id('role', key(k[0], k[1])), permissionId: id('permission', f.permission as string) };
    case 'scopeOverride':
      return { id: entityId, scopeId: scope(k[0]), roleId: id('role', k[1]), mode: k[2], permissionIds: (f.permissions as string[]).map((p) => id('permission', p)) };
    case 'tagGroup':
      return {
        id: entityId, key: k[0], scopeId: scope(f.scope), name: f.name, description: text(f.description) ?? '',
        maxAppliedPerTarget: f.maxAppliedPerTarget, isLocked: false,
      };
    case 'tag':
      return { id: entityId, tagGroupId: id('tagGroup', key(k[0])), identifier: k[1], label: text(f.label) ?? '', scopeId: scope(f.scope) };
    case 'tagBinding':
      return { id: entityId, tagId: id('tag', key(k[0], k[1])), roleId: id('role', k[2]), scopeId: scope(k[3]) };
    case 'subject':
      return { id: entityId, tenantId, externalId: k[0], type: f.type, metadata: object(f.metadata) };
    case 'membership':
      return { id: entityId, subjectId: id('subject', key(k[0])), scopeId: scope(k[1]) };
    case 'roleAssignment':
      return { id: entityId, membershipId: id('membership', key(k[0], k[1])), roleId: id('role', k[2]) };
    case 'resource':
      return {
        id: entityId, resourceTypeId: type(k[0]), externalResourceId: k[1], ownerScopeId: scope(f.scope),
        displayName: text(f.displayName), attributes: object(f.attributes),
      };
    case 'resourceEdge':
      return { id: entityId, parentResourceId: id('resource', f.parent as string), childResourceId: id('resource', e.key), cascade: f.cascade, relationshipType: text(f.relationshipType) };
    case 'scopeLink':
      return { id: entityId, resourceId: resource(k[0]), scopeId: scope(k[1]), linkType: k[2], metadata: object(f.metadata) };
    case 'ownershipGrant':
      return { id: entityId, subjectId: id('subject', key(k[0])), resourceId: resource(k[1]), roleId: id('role', k[2]) };
    case 'tagAssignment': {
      const [group, identifier, targetType, target] = k;
      const targetId = targetType === 'resource' ? resource(target) : targetType === 'subject' ? id('subject', key(target)) : scope(target);
      return { id: entityId, tagId: id('tag', key(group, identifier)), targetType, targetId };
    }
    case 'collection':
      return { id: entityId, name: k[0], scopeId: scope(f.scope), resourceTypeId: type(f.resourceType as string), description: text(f.description) ?? '', match: object(f.match) ?? {} };
    case 'policy': {
      const target = f.target as { resource?: string; collection?: string };
      return {
        id: entityId, scopeId: scope(f.scope),
        target: target.resource !== undefined ? { kind: 'resource', resourceId: resource(target.resource) } : { kind: 'collection', collectionId: id('collection', key(target.collection!)) },
        actions: f.actions, effect: f.effect, priority: f.priority,
        subjectCondition: object(f.subjectCondition), contextCondition: object(f.contextCondition),
        validFrom: text(f.validFrom), validUntil: text(f.validUntil),
      };
    }
  }
}
