import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, startFakeServer } from '../fake-control-plane.js';
import type { RunningServer } from '../../services/transport/server.js';
import { callUnary, loadGrpcJsClient, type DynamicClient } from './grpc-js-client.js';

describe('plain grpc-js client built from the .proto files', () => {
  let server: RunningServer;
  let client: DynamicClient;

  beforeAll(async () => {
    ({ server } = await startFakeServer());
    client = loadGrpcJsClient('authz.v1.ResourceService', server.url);
  });
  afterAll(async () => {
    client?.close();
    await server?.close();
  });

  it('creates a resource and reads x-revision from the trailer', async () => {
    const { response, trailer } = await callUnary<{ resource: { id: string; ownerScopeId: string } }>(
      client,
      'createResource',
      { id: 'resource_grpc', resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_1', externalResourceId: 'doc-1' },
      { 'x-api-key': KEYS.platform },
    );
    expect(response.resource.id).toBe('resource_grpc');
    expect(response.resource.ownerScopeId).toBe('scope_1');
    expect(trailer.get('x-revision')).toEqual(['42']);

    const got = await callUnary<{ resource: { id: string } }>(client, 'getResource', { id: 'resource_grpc' }, {
      authorization: `Bearer ${KEYS.platform}`,
    });
    expect(got.response.resource.id).toBe('resource_grpc');
  });

  it('maps errors to gRPC status codes', async () => {
    await expect(callUnary(client, 'getResource', { id: 'resource_missing' }, { 'x-api-key': KEYS.platform })).rejects.toMatchObject({
      code: grpc.status.NOT_FOUND,
    });
    await expect(callUnary(client, 'getResource', { id: 'x' })).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
    await expect(callUnary(client, 'getResource', { id: 'x' }, { 'x-api-key': KEYS.user })).rejects.toMatchObject({
      code: grpc.status.PERMISSION_DENIED,
    });
  });

  it('reads an unknown method as UNIMPLEMENTED with the server\'s message and ErrorInfo', async () => {
    const err = await new Promise<grpc.ServiceError>((resolve) => {
      client.makeUnaryRequest('/authz.v1.ResourceService/NoSuchMethod', (b: Buffer) => b, (b: Buffer) => b, Buffer.alloc(0), (e) => resolve(e!));
    });
    expect(err.code).toBe(grpc.status.UNIMPLEMENTED);
    expect(err.details).toBe('unknown method NoSuchMethod for service authz.v1.ResourceService');
    const status = err.metadata.get('grpc-status-details-bin')[0] as Buffer;
    // google.rpc.Status: its one detail is an Any of authz.v1.ErrorInfo.
    expect(status.toString('latin1')).toContain('type.googleapis.com/authz.v1.ErrorInfo');
  });

  it('knows every service of the API', () => {
    for (const s of ['authz.v1.ScopeService', 'authz.v1.DecisionService', 'authz.v1.TenancyService']) {
      const c = loadGrpcJsClient(s, '127.0.0.1:1');
      c.close();
    }
    expect(() => loadGrpcJsClient('authz.v1.NoSuchService', '127.0.0.1:1')).toThrow(/not defined/);
  });
});
