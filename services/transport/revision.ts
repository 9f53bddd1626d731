/**
 * The tenant revision of a write, sent to callers as `x-revision` (contract §5): a response
 * header on REST and Connect, a response trailer (and header) on gRPC.
 */
import type { HandlerContext } from '@connectrpc/connect';

export const REVISION_HEADER = 'x-revision';

/**
 * Sets the tenant's new revision on a write response. Call it in the handler after the write
 * committed: it sets both the response header and the trailer `x-revision`, so gRPC clients
 * read it from trailers (or initial metadata), Connect clients from headers, and the REST
 * gateway turns it into the `x-revision` response header.
 */
export function setRevision(ctx: Pick<HandlerContext, 'responseHeader' | 'responseTrailer'>, revision: number | bigint): void {
  const value = revision.toString();
  ctx.responseHeader.set(REVISION_HEADER, value);
  ctx.responseTrailer.set(REVISION_HEADER, value);
}
