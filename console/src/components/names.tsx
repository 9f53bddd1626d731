/**
 * The name of an entity the API gives only by id (a grant's subject, a link's scope, …), read
 * with one Get per id and cached, so a page of rows costs at most one call per distinct id.
 * Until it arrives, or when it cannot be read, the id itself is shown, with the reason.
 */
import type { ReactNode } from 'react';
import { Link } from 'wouter';
import { useQuery } from '@tanstack/react-query';
import { PolicyService } from '../../../gen/authz/v1/policy_service_pb.js';
import { ResourceService } from '../../../gen/authz/v1/resource_service_pb.js';
import { ResourceTypeService } from '../../../gen/authz/v1/resource_type_service_pb.js';
import { RoleService } from '../../../gen/authz/v1/role_service_pb.js';
import { ScopeService } from '../../../gen/authz/v1/scope_service_pb.js';
import { SubjectService } from '../../../gen/authz/v1/subject_service_pb.js';
import { TagService } from '../../../gen/authz/v1/tag_service_pb.js';
import type { Resource } from '../../../gen/authz/v1/resource_pb.js';
import { client, describeError } from '../api/transport.js';

/** Names change rarely: read once a minute at most. */
const NAME_STALE_MS = 60_000;

function useName(kind: string, id: string, read: () => Promise<string>) {
  return useQuery({ queryKey: ['name', kind, id], queryFn: read, staleTime: NAME_STALE_MS, enabled: id !== '' });
}

function Named({ id, query, render = (name) => name }: { id: string; query: ReturnType<typeof useName>; render?: (name: string) => ReactNode }) {
  if (query.isSuccess) return <>{render(query.data)}</>;
  if (query.isError) return <><code>{id}</code> <span className="muted">(name unavailable: {describeError(query.error).detail})</span></>;
  return <code>{id}</code>;
}

export function ScopeName({ id }: { id: string }) {
  const query = useName('scope', id, async () => (await client(ScopeService).getScope({ id })).scope?.name ?? id);
  return <Named id={id} query={query} />;
}

export function RoleName({ id }: { id: string }) {
  const query = useName('role', id, async () => (await client(RoleService).getRole({ id })).role?.name ?? id);
  return <Named id={id} query={query} />;
}

export function ResourceTypeName({ id }: { id: string }) {
  const query = useName('resource-type', id, async () => (await client(ResourceTypeService).getResourceType({ id })).resourceType?.name ?? id);
  return <Named id={id} query={query} />;
}

export function CollectionName({ id }: { id: string }) {
  const query = useName('collection', id, async () => (await client(PolicyService).getResourceCollection({ id })).resourceCollection?.name ?? id);
  return <Named id={id} query={query} />;
}

/** A tag as `group: identifier`, the way match definitions name it. */
export function TagName({ id }: { id: string }) {
  const query = useName('tag', id, async () => {
    const tag = (await client(TagService).getTag({ id })).tag;
    if (tag === undefined) return id;
    const group = (await client(TagService).getTagGroup({ id: tag.tagGroupId })).tagGroup;
    return `${group?.key ?? tag.tagGroupId}: ${tag.identifier}`;
  });
  return <Named id={id} query={query} />;
}

/** A subject by its external id, linked to its page in the subjects view. */
export function SubjectLink({ id }: { id: string }) {
  const query = useName('subject', id, async () => (await client(SubjectService).getSubject({ id })).subject?.externalId ?? id);
  return <Link href={subjectHref(id)}><Named id={id} query={query} /></Link>;
}

/** A resource by its display name (or external id), linked to its page in the resources view. */
export function ResourceLink({ id }: { id: string }) {
  const query = useName('resource', id, async () => {
    const r = (await client(ResourceService).getResource({ id })).resource;
    return r ? resourceLabel(r) : id;
  });
  return <Link href={resourceHref(id)}><Named id={id} query={query} /></Link>;
}

export function resourceLabel(r: Pick<Resource, 'displayName' | 'externalResourceId'>): string {
  return r.displayName || r.externalResourceId;
}

export function resourceHref(id: string, scopeId?: string): string {
  const params = new URLSearchParams(scopeId ? { scope: scopeId, resource: id } : { resource: id });
  return `/resources?${params}`;
}

export function subjectHref(id: string): string {
  return `/subjects?${new URLSearchParams({ subject: id })}`;
}
