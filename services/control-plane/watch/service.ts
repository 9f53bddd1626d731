/**
 * `authz.v1.SnapshotService/Watch`: checks the key (the interceptor admitted only `service` and
 * `platform` keys; here, a service key's own tenant only, and no key restricted to an
 * environment: the stream carries the whole tenant), then relays the tenant's WatchStream until
 * the client cancels, the stream ends, or the key stops being valid (KeyGuard). A sidecar's
 * calls (gRPC, binary, uncompressed) are served by lean-watch.ts instead, with the same checks
 * (`openWatch`).
 */
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { SnapshotService, type WatchRequest, type WatchResponse } from '../../../gen/authz/v1/snapshot_service_pb.js';
import { invalid, permissionDenied } from '../../common/errors.js';
import { requireString } from '../../common/validate.js';
import { credentialsOf } from '../auth/interceptor.js';
import { assertTenantReach, assertWholeTenantReach, principalOf, type Principal } from '../auth/principal.js';
import type { WatchHub } from './hub.js';
import type { KeyGuard } from './key-guard.js';
import type { WatchStream } from './stream.js';

/**
 * The checks of a Watch call, then its stream, guarded by `keys` (when given) until the returned
 * `release` is called. `json`: the call's codec is JSON (see SnapshotOptions.entityMessages).
 */
export function openWatch(
  hub: WatchHub, keys: KeyGuard | undefined, principal: Principal, secret: string | undefined, req: WatchRequest, json: boolean,
): { stream: WatchStream; release: () => void } {
  // Without a key the caller came in with a console session, which KeyGuard cannot check again
  // for as long as a stream lives: refused rather than left unguarded.
  if (keys !== undefined && secret === undefined) throw permissionDenied('a Watch stream is opened with an API key (x-api-key or Authorization), not with a console session');
  const tenantId = requireString(req.tenantId, 'tenantId');
  assertTenantReach(principal, tenantId, 'tenantId');
  assertWholeTenantReach(principal, `the Watch stream of tenant ${tenantId}`, 'tenantId');
  const from = req.fromRevision;
  if (from < 0n || from > BigInt(Number.MAX_SAFE_INTEGER)) throw invalid('fromRevision', 'must be a non-negative revision');
  const stream = hub.open(tenantId, Number(from), req.acceptRowBlocks, json);
  const unguard = keys && secret !== undefined ? keys.guard(secret, principal, (err) => stream.close(err)) : undefined;
  return {
    stream,
    release: () => {
      unguard?.();
      hub.release(stream);
    },
  };
}

/** `keys` ends a stream whose key is revoked or expires while it is open (absent: checked at the start only). */
export function snapshotService(hub: WatchHub, keys?: KeyGuard): ServiceImpl<typeof SnapshotService> {
  return {
    async *watch(req: WatchRequest, ctx: HandlerContext): AsyncGenerator<WatchResponse> {
      // Connect, gRPC and gRPC-Web calls in JSON (`application/…+json`): protobuf's JSON writes no
      // unknown fields, which is how pre-encoded rows travel in binary.
      const json = /\+json\b|^application\/json\b/i.test(ctx.requestHeader.get('content-type') ?? '');
      const { stream, release } = openWatch(hub, keys, principalOf(ctx), credentialsOf(ctx.requestHeader), req, json);
      const onAbort = () => release();
      ctx.signal.addEventListener('abort', onAbort, { once: true });
      try {
        // next() is asked for only after the previous message was written through (connect-node
        // awaits the transport's drain): that is the stream's backpressure.
        for (;;) yield await stream.next();
      } finally {
        ctx.signal.removeEventListener('abort', onAbort);
        release();
      }
    },
  };
}
