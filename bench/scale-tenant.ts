/**
 * The sidecar's scale tenant, shared by bench/snapshot-scale.ts (a real sidecar process) and
 * bench/snapshot-apply.ts (a Follower in process): a root scope, an `owner` role that may edit
 * docs, then `subjects` subjects, `resources` docs and `grants` ownership grants (subject
 * i % subjects owns resource i % resources), with ids as long as the control plane's, encoded
 * as snapshot `WatchResponse`s of at most ~4 MiB, the first with the tenant's resource count.
 */
import { create, toBinary, type JsonObject } from '@bufbuild/protobuf';
import { EntitySchema, SnapshotChunkSchema, WatchResponseSchema, type Entity } from '../gen/authz/v1/snapshot_service_pb.js';
import { ChunkRowBlocks } from '../services/control-plane/watch/row-blocks.js';
import { fieldsOfKind } from '../services/control-plane/watch/snapshot.js';

export const TENANT = 'tenant_scale';
export const ROOT_SCOPE = 'scope_0192f3a4-0000-7000-8000-000000000000';
const CHUNK_BYTES = 4 * 1024 * 1024 - 64 * 1024;
const b = { tenantId: TENANT, createdAt: '2026-01-01T00:00:00.000Z', createdBy: 'subject_0192f3a4-0000-7000-8000-00000000bench' };

export interface ScaleCounts {
  subjects: number;
  resources: number;
  grants: number;
}

/** A UUIDv7-shaped id of the given prefix, as long as the control plane's. */
export const id = (prefix: string, n: number) => `${prefix}_0192f3a4-${(n >>> 16).toString(16).padStart(4, '0')}-7${(n & 0xfff).toString(16).padStart(3, '0')}-8000-${n.toString(16).padStart(12, '0')}`;

/** The tenant's rows, made one at a time: the few fixed rows, then subjects, resources, grants. */
function* rows({ subjects, resources, grants }: ScaleCounts): Generator<[string, Record<string, unknown>]> {
  const role = id('role', 1);
  yield ['scope', { ...b, id: ROOT_SCOPE, name: 'root', typeId: 'scope_type_tenant', parentId: '' }];
  yield ['role', { ...b, id: role, scopeId: ROOT_SCOPE, key: 'owner', name: 'Owner', description: '' }];
  yield ['permission', { ...b, id: id('permission', 1), scopeId: ROOT_SCOPE, action: 'edit', resourceType: 'doc', resourcePattern: '*', key: 'doc:edit:*', name: '', description: '' }];
  yield ['role_permission', { ...b, id: id('role_permission', 1), roleId: role, permissionId: id('permission', 1) }];
  yield ['resource_type', { ...b, id: id('resource_type', 1), name: 'Doc', key: 'doc', scopeId: ROOT_SCOPE }];
  for (let i = 0; i < subjects; i++) yield ['subject', { ...b, id: id('subject', i), type: 'user', externalId: `user-${i}@example.com`, metadata: {} }];
  for (let i = 0; i < resources; i++) {
    yield ['resource', { ...b, id: id('resource', i), resourceTypeId: id('resource_type', 1), ownerScopeId: ROOT_SCOPE, scopeId: ROOT_SCOPE, externalResourceId: `doc-${i}`, displayName: '', attributes: {} }];
  }
  for (let i = 0; i < grants; i++) {
    yield ['ownership_grant', { ...b, id: id('ownership_grant', i), subjectId: id('subject', i % subjects), resourceId: id('resource', i % resources), roleId: role }];
  }
}

/**
 * The tenant's snapshot as encoded `WatchResponse` messages, in order, the last one marked: its
 * rows in row blocks, as the control plane sends them to a sidecar (`blocks`), or one JSON Entity
 * each, as to a client that does not ask for blocks (`entities`).
 */
export function snapshotMessages(counts: ScaleCounts, format: 'blocks' | 'entities' = 'blocks'): Uint8Array[] {
  const out: Uint8Array[] = [];
  let entities: Entity[] = [];
  let bytes = 0;
  const blocks = new ChunkRowBlocks(fieldsOfKind);
  const flush = (last: boolean) => {
    // Chunk 0 carries the resource count, as the control plane's does.
    const resourceCount = out.length === 0 ? BigInt(counts.resources) : 0n;
    const value = create(SnapshotChunkSchema, { tenantId: TENANT, revision: 1n, index: out.length, last, entities, resourceScopeGate: 'off', resourceCount });
    value.$unknown = blocks.take();
    out.push(toBinary(WatchResponseSchema, create(WatchResponseSchema, { event: { case: 'snapshot', value } })));
    entities = [];
    bytes = 0;
  };
  for (const [kind, row] of rows(counts)) {
    const bound = format === 'blocks' ? blocks.bound(kind, row as JsonObject) : undefined;
    if (bound !== undefined) {
      if (bytes + blocks.bytes + bound > CHUNK_BYTES) flush(false);
      blocks.add(kind);
      continue;
    }
    const json = JSON.stringify(row);
    if (bytes + blocks.bytes + json.length + 128 > CHUNK_BYTES) flush(false);
    entities.push(create(EntitySchema, { kind, id: row.id as string, json }));
    bytes += json.length + 128;
  }
  flush(true);
  return out;
}
