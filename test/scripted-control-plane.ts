/**
 * Test support for the sidecar: a scripted control plane whose Watch streams send exactly the
 * messages a test pushes, and a small tenant (alice may read docs at the root scope; a deny
 * policy forbids deleting doc-1). Not for production.
 */
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { timestampNow } from '@bufbuild/protobuf/wkt';
import { ConnectError } from '@connectrpc/connect';
import { pino } from 'pino';
import { Change_Op, SnapshotService, WatchResponseSchema, type RowBlockSchema, type WatchRequest, type WatchResponse } from '../gen/authz/v1/snapshot_service_pb.js';
import { createRegistry } from '../services/transport/observability.js';
import { startServer } from '../services/transport/server.js';

export const TENANT = 'tenant_side';
export const ROOT = 'scope_side_root';
const now = '2026-01-01T00:00:00Z';
export const base = { tenantId: TENANT, createdAt: now, createdBy: 'test' };

/** The rows of a small tenant: alice may read docs at the root scope. */
export const ROWS: [string, Record<string, unknown>][] = [
  ['scope', { ...base, id: ROOT, name: 'root', typeId: 'scope_type_tenant', parentId: '' }],
  ['subject', { ...base, id: 'subject_alice', type: 'user', externalId: 'alice' }],
  ['subject', { ...base, id: 'subject_bob', type: 'user', externalId: 'bob' }],
  ['role', { ...base, id: 'role_reader', scopeId: ROOT, key: 'reader', name: 'reader', description: '' }],
  ['permission', { ...base, id: 'permission_read', scopeId: ROOT, action: 'read', resourceType: 'doc', resourcePattern: '*', key: 'doc:read:*', name: '', description: '' }],
  ['role_permission', { ...base, id: 'role_permission_1', roleId: 'role_reader', permissionId: 'permission_read' }],
  ['membership', { ...base, id: 'membership_alice', subjectId: 'subject_alice', scopeId: ROOT }],
  ['role_assignment', { ...base, id: 'role_assignment_alice', membershipId: 'membership_alice', roleId: 'role_reader' }],
  ['resource_type', { ...base, id: 'resource_type_doc', name: 'Doc', key: 'doc', scopeId: ROOT }],
  ['resource', { ...base, id: 'resource_doc1', resourceTypeId: 'resource_type_doc', ownerScopeId: ROOT, scopeId: ROOT, externalResourceId: 'doc-1' }],
  ['policy', { ...base, id: 'policy_no_delete', scopeId: ROOT, target: { kind: 'resource', resourceId: 'resource_doc1' }, actions: ['delete'], effect: 'deny', priority: 5 }],
];
export const entity = ([kind, row]: [string, Record<string, unknown>]) => ({ kind, id: row.id as string, json: JSON.stringify(row) });

export const snapshot = (revision: number, index: number, last: boolean, rows: typeof ROWS, gate = 'off'): MessageInitShape<typeof WatchResponseSchema> =>
  ({ event: { case: 'snapshot', value: { tenantId: TENANT, revision: BigInt(revision), index, last, entities: rows.map(entity), resourceScopeGate: gate } } });
/**
 * Rows as `RowBlock`s, encoded the plain way (fields from the rows' keys, a value for each cell
 * without sharing), independent of the control plane's encoder.
 */
export function rowBlocks(rows: typeof ROWS): MessageInitShape<typeof RowBlockSchema>[] {
  const byKind = new Map<string, Record<string, unknown>[]>();
  for (const [kind, row] of rows) (byKind.get(kind) ?? byKind.set(kind, []).get(kind)!).push(row);
  return [...byKind].map(([kind, list]) => {
    const fields = [...new Set(list.flatMap((r) => Object.keys(r)))];
    const strings: string[] = [];
    const jsonValues: string[] = [];
    const cells = list.flatMap((r) => fields.map((f) => {
      const v = r[f];
      if (v === undefined) return 0;
      if (typeof v === 'string') return 2 * strings.push(v) - 1;
      return 2 * jsonValues.push(JSON.stringify(v));
    }));
    return { kind, fields, strings, jsonValues, cells };
  });
}
/** A snapshot chunk whose rows are all in row blocks. */
export const blockSnapshot = (revision: number, index: number, last: boolean, rows: typeof ROWS): MessageInitShape<typeof WatchResponseSchema> =>
  ({ event: { case: 'snapshot', value: { tenantId: TENANT, revision: BigInt(revision), index, last, rowBlocks: rowBlocks(rows), resourceScopeGate: 'off' } } });
export const changes = (revision: number, list: { op: Change_Op; kind: string; row?: Record<string, unknown>; id?: string }[], tenantId = TENANT): MessageInitShape<typeof WatchResponseSchema> =>
  ({ event: { case: 'changes', value: { tenantId, revision: BigInt(revision), committedAt: timestampNow(), changes: list.map((c) => ({ op: c.op, kind: c.kind, id: c.id ?? (c.row!.id as string), json: c.row ? JSON.stringify(c.row) : '' })) } } });
export const heartbeat = (revision: number, tenantId = TENANT): MessageInitShape<typeof WatchResponseSchema> =>
  ({ event: { case: 'heartbeat', value: { tenantId, revision: BigInt(revision), sentAt: timestampNow(), resourceScopeGate: 'off' } } });

/** One Watch call the fake control plane is serving: the test pushes its messages. */
export interface ScriptedStream {
  request: WatchRequest;
  headers: Headers;
  push(m: MessageInitShape<typeof WatchResponseSchema>): void;
  fail(err: ConnectError): void;
  /** Resolves when the client went away (the sidecar dropped this stream). */
  closed: Promise<void>;
  /** Whether it has. */
  done: boolean;
}

/** A control plane that serves SnapshotService.Watch from scripts; `streams` yields each call. */
export async function scriptedControlPlane(refuse?: () => ConnectError | undefined) {
  const waiting: ((s: ScriptedStream) => void)[] = [];
  const queue: ScriptedStream[] = [];
  const server = await startServer({
    port: 0,
    name: 'scripted control plane',
    logger: pino({ level: 'silent' }),
    registry: createRegistry({ defaultMetrics: false }),
    routes: (router) =>
      router.service(SnapshotService, {
        async *watch(request, ctx) {
          const err = refuse?.();
          if (err) throw err;
          const pending: (WatchResponse | ConnectError)[] = [];
          let wake: (() => void) | undefined;
          let closedResolve!: () => void;
          const closed = new Promise<void>((r) => (closedResolve = r));
          const s: ScriptedStream = {
            request,
            headers: ctx.requestHeader,
            push: (m) => (pending.push(create(WatchResponseSchema, m)), wake?.()),
            fail: (e) => (pending.push(e), wake?.()),
            closed,
            done: false,
          };
          ctx.signal.addEventListener('abort', () => ((s.done = true), closedResolve()));
          const w = waiting.shift();
          if (w) w(s);
          else queue.push(s);
          try {
            for (;;) {
              while (pending.length === 0) await new Promise<void>((r) => (wake = r));
              const m = pending.shift()!;
              if (m instanceof ConnectError) throw m;
              yield m;
            }
          } finally {
            s.done = true;
            closedResolve();
          }
        },
      }),
  });
  return {
    server,
    /** The next Watch call still open (waits for the sidecar to make it). */
    next: async (): Promise<ScriptedStream> => {
      for (;;) {
        const s = queue.shift() ?? (await new Promise<ScriptedStream>((resolve) => waiting.push(resolve)));
        if (!s.done) return s;
      }
    },
  };
}

