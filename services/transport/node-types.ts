/** The request and response types of node:http and node:http2 (compatibility API) that both servers hand to handlers. */
import type { universalRequestFromNodeRequest, universalResponseToNodeResponse } from '@connectrpc/connect-node';

/** A request of node:http or node:http2 (compatibility API). */
export type NodeServerRequest = Parameters<typeof universalRequestFromNodeRequest>[0];
/** A response of node:http or node:http2 (compatibility API). */
export type NodeServerResponse = Parameters<typeof universalResponseToNodeResponse>[1];
