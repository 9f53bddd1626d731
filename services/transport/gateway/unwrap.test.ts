import { describe, expect, it } from 'vitest';
import { ResourceService } from '../../../gen/authz/v1/resource_service_pb.js';
import { TenancyService } from '../../../gen/authz/v1/tenancy_service_pb.js';
import { unwrapDirect } from './gateway.js';

const route = (method: (typeof ResourceService.methods)[number] | (typeof TenancyService.methods)[number], body: string) => ({
  method, responseBody: method.output.fields.find((f) => f.name === body),
});

describe('REST response unwrapping without a re-parse', () => {
  it('slices the value out of a one-field response with no 64-bit integers', () => {
    const r = route(ResourceService.method.batchCreateResources, 'resources');
    const value = [{ id: 'resource_a', attributes: { note: '{"resources":' } }];
    expect(unwrapDirect(r, JSON.stringify({ resources: value }))).toBe(JSON.stringify(value));
    expect(JSON.parse(unwrapDirect(r, '{"resources":[]}')!)).toEqual([]);
  });

  it('declines when the output has 64-bit integers, several fields, or another shape', () => {
    expect(unwrapDirect(route(TenancyService.method.getTenant, 'tenant'), '{"tenant":{"revision":"3"}}')).toBeUndefined();
    expect(unwrapDirect(route(ResourceService.method.listResources, 'resources'), '{"resources":[],"nextCursor":""}')).toBeUndefined();
    expect(unwrapDirect(route(ResourceService.method.getResource, 'resource'), '{}')).toBeUndefined();
  });
});
