/**
 * The entities of an import batch, validated one by one before anything is read or written:
 * each line's required fields, lengths, enumerations and JSON sizes, as the single-entity APIs
 * check them. A refusal is `invalid_argument` naming the line and the field's JSON path
 * (`line 1204: entities[3].resource.externalId: is required`).
 */
import type { JsonObject } from '@bufbuild/protobuf';
import type { ImportEntity, ImportResourceRef, ImportSubjectRef } from '../../../gen/authz/v1/import_service_pb.js';
import { DomainError, invalid } from '../../common/errors.js';
import { jsonObject, oneOf, optionalString, requireString } from '../../common/validate.js';
import { SUBJECT_TYPES } from '../../common/vocabulary.js';

const CASCADES = ['inherit', 'none'] as const;
const LINK_TYPES = ['share', 'alias', 'mirror'] as const;

/** A resource named by its type key and external id. */
export interface ResourceKey {
  type: string;
  externalId: string;
}

/** A subject named by its external id (and its type, when given). */
export interface SubjectKey {
  externalId: string;
  type?: string;
}

/** Where an entity came from: its line and the JSON path of its fields (`entities[3].resource.`). */
export interface Origin {
  line: number;
  path: string;
}

export type ParsedEntity = Origin & (
  | { kind: 'resource'; type: string; externalId: string; scopeId?: string; displayName: string | null; attributes: JsonObject | null }
  | { kind: 'subject'; type: string; externalId: string; metadata: JsonObject | null }
  | { kind: 'resourceEdge'; parent: ResourceKey; child: ResourceKey; cascade: string; relationshipType: string | null }
  | { kind: 'scopeLink'; resource: ResourceKey; scopeId: string; linkType: string; metadata: JsonObject | null }
  | { kind: 'ownershipGrant'; subject: SubjectKey; resource: ResourceKey; role: string }
  | { kind: 'membership'; subject: SubjectKey; scopeId?: string; roles: string[] }
);

/** The message of an error about line `line`, starting with the line (the field path stays the error's field). */
export function atLine(err: unknown, line: number): unknown {
  if (!(err instanceof DomainError) || err.message.startsWith('line ')) return err;
  return new DomainError(err.kind, `line ${line}: ${err.message}`, err.field);
}

function resourceKey(ref: ImportResourceRef | undefined, p: string): ResourceKey {
  if (!ref) throw invalid(p, 'is required ({"type": "<resource type key>", "externalId": "<external id>"})');
  return { type: requireString(ref.type, `${p}.type`), externalId: requireString(ref.externalId, `${p}.externalId`) };
}

function subjectKey(ref: ImportSubjectRef | undefined, p: string): SubjectKey {
  if (!ref) throw invalid(p, 'is required ({"externalId": "<external id>"})');
  const externalId = requireString(ref.externalId, `${p}.externalId`);
  const type = ref.type ? oneOf(ref.type, SUBJECT_TYPES, `${p}.type`) : undefined;
  return type === undefined ? { externalId } : { externalId, type };
}

/** One entity of the batch, validated; `index` is its place in the batch, `line` its line in the file. */
export function parseEntity(entity: ImportEntity, index: number, line: number): ParsedEntity {
  const at = `entities[${index}]`;
  try {
    const e = entity.entity;
    switch (e.case) {
      case 'resource': {
        const p = `${at}.resource`;
        const v = e.value;
        return {
          line, path: p, kind: 'resource',
          type: requireString(v.type, `${p}.type`),
          externalId: requireString(v.externalId, `${p}.externalId`),
          scopeId: optionalString(v.scopeId, `${p}.scopeId`),
          displayName: optionalString(v.displayName, `${p}.displayName`) ?? null,
          attributes: jsonObject(v.attributes, `${p}.attributes`) ?? null,
        };
      }
      case 'subject': {
        const p = `${at}.subject`;
        const v = e.value;
        return {
          line, path: p, kind: 'subject',
          type: oneOf(v.type, SUBJECT_TYPES, `${p}.type`),
          externalId: requireString(v.externalId, `${p}.externalId`),
          metadata: jsonObject(v.metadata, `${p}.metadata`) ?? null,
        };
      }
      case 'resourceEdge': {
        const p = `${at}.resourceEdge`;
        const v = e.value;
        return {
          line, path: p, kind: 'resourceEdge',
          parent: resourceKey(v.parent, `${p}.parent`),
          child: resourceKey(v.child, `${p}.child`),
          cascade: oneOf(v.cascade, CASCADES, `${p}.cascade`, 'none'),
          relationshipType: optionalString(v.relationshipType, `${p}.relationshipType`) ?? null,
        };
      }
      case 'scopeLink': {
        const p = `${at}.scopeLink`;
        const v = e.value;
        return {
          line, path: p, kind: 'scopeLink',
          resource: resourceKey(v.resource, `${p}.resource`),
          scopeId: requireString(v.scopeId, `${p}.scopeId`),
          linkType: oneOf(v.linkType, LINK_TYPES, `${p}.linkType`),
          metadata: jsonObject(v.metadata, `${p}.metadata`) ?? null,
        };
      }
      case 'ownershipGrant': {
        const p = `${at}.ownershipGrant`;
        const v = e.value;
        return {
          line, path: p, kind: 'ownershipGrant',
          subject: subjectKey(v.subject, `${p}.subject`),
          resource: resourceKey(v.resource, `${p}.resource`),
          role: requireString(v.role, `${p}.role`),
        };
      }
      case 'membership': {
        const p = `${at}.membership`;
        const v = e.value;
        const roles = v.roles.map((r, i) => requireString(r, `${p}.roles[${i}]`));
        const seen = new Set<string>();
        roles.forEach((r, i) => {
          if (seen.has(r)) throw invalid(`${p}.roles[${i}]`, `role "${r}" appears more than once`);
          seen.add(r);
        });
        return { line, path: p, kind: 'membership', subject: subjectKey(v.subject, `${p}.subject`), scopeId: optionalString(v.scopeId, `${p}.scopeId`), roles };
      }
      default:
        throw invalid(at, 'must hold one of resource, subject, resourceEdge, scopeLink, ownershipGrant, membership');
    }
  } catch (err) {
    throw atLine(err, line);
  }
}
