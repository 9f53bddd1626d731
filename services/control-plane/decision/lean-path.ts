import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { DecisionService } from '../../../gen/authz/v1/decision_service_pb.js';
import { leanDecisions } from '../../decision/lean.js';
import { MAX_BODY_BYTES } from '../../transport/request-limits.js';
import type { NodeServerRequest, NodeServerResponse } from '../../transport/node-types.js';
import { rejectCounter, rpcMetrics } from '../../transport/observability.js';
import type { Tracing } from '../../transport/tracing.js';
import { leanCaller } from '../auth/interceptor.js';
import type { KeyVerifier } from '../auth/principal.js';
import type { Sessions } from '../auth/sessions.js';
import { storeErrors } from '../errors.js';
import type { ControlPlaneSource } from './source.js';

/**
 * The control plane's lean decision path (StartServerOptions `leanPath`): DecisionService's
 * unary calls over REST, Connect JSON and binary and gRPC served by services/decision/lean.ts,
 * with the caller checked as authInterceptor checks it (the API key, from the verifier's cache,
 * or the console session, and the decision tier) and the same source, error classification and RPC metrics as
 * connect-node's path. Everything else stays on connect-node.
 */
export function controlPlaneLeanPath(opts: {
  source: ControlPlaneSource;
  verifier: KeyVerifier;
  sessions?: Sessions;
  logger: Logger;
  registry: Registry;
  maxBodyBytes?: number;
  tracing?: Tracing;
}): (req: NodeServerRequest, res: NodeServerResponse) => boolean {
  return leanDecisions({
    source: opts.source,
    caller: leanCaller(opts.verifier, DecisionService, opts.sessions),
    maxBodyBytes: opts.maxBodyBytes ?? MAX_BODY_BYTES,
    classifyError: storeErrors,
    logger: opts.logger,
    metrics: rpcMetrics(opts.registry),
    rejected: rejectCounter(opts.registry),
    tracing: opts.tracing,
  });
}
