import type { ConnectRouter } from '@connectrpc/connect';
import type { DescService } from '@bufbuild/protobuf';
import { ScopeService } from '../../gen/authz/v1/scope_service_pb.js';
import type { Deps } from './handlers/kit.js';
import { scopeService } from './handlers/scope.js';

/** Every service of the control plane, for the server and the REST gateway. */
export const SERVICES: DescService[] = [ScopeService];

/** Registers every service implementation on a Connect router. */
export function registerServices(router: ConnectRouter, deps: Deps): ConnectRouter {
  router.service(ScopeService, scopeService(deps));
  return router;
}
