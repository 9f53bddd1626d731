import { createContextKey } from '@connectrpc/connect';

/** Set to "rest" in the handler context of calls that arrive through the gateway. */
export const surfaceKey = createContextKey<'rpc' | 'rest'>('rpc', { description: 'authz.surface' });
