/**
 * The known defects of known-defects.ts, each reproduced alone against a real control plane.
 * Written with `it.fails`: each passes while the defect is there and fails once it is fixed;
 * then its entry in known-defects.ts and the `.fails` here go, and the fuzz suite fails on it
 * again should it come back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { SubjectService } from '../../gen/authz/v1/subject_service_pb.js';
import { fromJson, toBinary } from '@bufbuild/protobuf';
import { EvaluateRequestSchema } from '../../gen/authz/v1/decision_service_pb.js';
import { MAX_JSON_BYTES } from '../../services/common/validate.js';
import { binaryRequestProblem } from '../../services/transport/binary-scan.js';
import { parseJsonBody } from '../../services/transport/json-scan.js';
import { MAX_BODY_BYTES, MAX_JSON_ENTRIES } from '../../services/transport/request-limits.js';
import { startTestControlPlane, TEST_BOOTSTRAP_KEY } from '../harness.js';
import type { ControlPlane } from '../../services/control-plane/app.js';
import { closeSessions, envelope, http1 } from './http.js';
import { KNOWN_DEFECTS } from './known-defects.js';

describe('known defects, until fixed', () => {
  let cp: ControlPlane & { url: string };
  beforeAll(async () => {
    cp = await startTestControlPlane('embedded');
  });
  afterAll(async () => {
    closeSessions();
    await cp?.close();
  });

  it('every known defect has its test here', () => {
    expect(KNOWN_DEFECTS.map((d) => d.id)).toEqual([
      'rest-batch-nesting-unnamed', 'grpc-oversize-body-left-unread', 'grpc-refused-body-breaks-connection', 'struct-decoded-before-refusal',
    ]);
  });

  it.fails('rest-batch-nesting-unnamed: a REST batch body nested too deep names its field', async () => {
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    const x = await http1(cp.url, 'POST', '/resources/batch', { 'content-type': 'application/json', 'x-api-key': TEST_BOOTSTRAP_KEY }, `[{"attributes":{"a":${deep}}}]`);
    const body = JSON.parse(x.bytes.toString()) as { message: string; details: { field?: string }[] };
    expect([x.status, body.message]).toEqual([400, expect.stringContaining('nests deeper than')]);
    expect(body.details[0]?.field ?? '').toMatch(/^items/);
  });

  it.fails('grpc-oversize-body-left-unread: after a gRPC-Web body over 4 MiB, the connection still answers', async () => {
    const message = Buffer.alloc(MAX_BODY_BYTES + 1024 * 1024);
    message.fill(Buffer.from([0xf8, 0x7c, 0x00])); // unknown field 1999 = 0, over and over
    const headers = { 'content-type': 'application/grpc-web+proto', 'x-grpc-web': '1', 'x-api-key': TEST_BOOTSTRAP_KEY };
    const refused = await http1(cp.url, 'POST', '/authz.v1.SubjectService/CreateSubject', headers, envelope(message));
    expect([refused.status, refused.error]).toEqual([200, undefined]);
    expect(refused.bytes.toString('latin1')).toMatch(/grpc-status: ?8\r\n/);
    // The next request on the same kept-alive connection.
    const next = await http1(cp.url, 'GET', '/healthz', {}, undefined);
    expect([next.status, next.error]).toEqual([200, undefined]);
  });

  it.fails('grpc-refused-body-breaks-connection: after unauthenticated gRPC calls with large bodies, the connection still serves calls', async () => {
    const subjects = createClient(SubjectService, createGrpcTransport({ baseUrl: cp.url }));
    const big = 'x'.repeat(MAX_BODY_BYTES + 400_000);
    for (let i = 0; i < 3; i++) {
      const refused = await subjects.createSubject({ tenantId: 'tenant_x', type: 'user', externalId: big }).then(() => undefined, (e: unknown) => ConnectError.from(e));
      expect(refused?.code, `refused call ${i}: ${refused?.rawMessage}`).toBe(Code.Unauthenticated);
    }
    const after = await subjects.getSubject({ id: 'subject_nosuch' }, { headers: { 'x-api-key': TEST_BOOTSTRAP_KEY } }).then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(after?.code, after?.rawMessage).toBe(Code.NotFound);
  });

  // What a refusal costs is measured by the fuzz suite (FUZZ_CPU_BOUND_MS=20); here, why: the
  // scans let through a Struct that validation must refuse after decoding it.
  it.fails('struct-decoded-before-refusal: the scans refuse a Struct no 16 KiB of JSON can hold, before decoding', () => {
    const context = { xs: Array.from({ length: MAX_JSON_ENTRIES }, () => ({ a: 'b' })) };
    const json = { actor: { subjectId: 'subject_x' }, scopeId: 'scope_x', action: 'read', context };
    expect(Buffer.byteLength(JSON.stringify(context))).toBeGreaterThan(MAX_JSON_BYTES);
    const binary = toBinary(EvaluateRequestSchema, fromJson(EvaluateRequestSchema, json));
    expect(binaryRequestProblem(EvaluateRequestSchema, binary)?.field ?? '(accepted)').toMatch(/^context/);
    expect(() => parseJsonBody(Buffer.from(JSON.stringify(json)))).toThrow(/context/);
  });
});
