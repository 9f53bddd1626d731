/**
 * gRPC server reflection and health checking as third-party clients see them: plain grpc-js
 * clients built only from the vendored .proto files, against real servers on free ports (a
 * bare startServer with a readiness switch, the control plane, the sidecar), and `buf curl`.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import { fromBinary } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema, type FileDescriptorProto } from '@bufbuild/protobuf/wkt';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DecisionService } from '../../gen/authz/v1/decision_service_pb.js';
import { SnapshotService } from '../../gen/authz/v1/snapshot_service_pb.js';
import { startControlPlane, type ControlPlane } from '../../services/control-plane/app.js';
import { loadConfig } from '../../services/control-plane/config.js';
import { SERVICES } from '../../services/control-plane/services.js';
import { createLogger, createRegistry } from '../../services/transport/observability.js';
import { startServer, type RunningServer } from '../../services/transport/server.js';
import { startSidecar } from '../../sidecar/app.js';
import { ROWS, TENANT, scriptedControlPlane, snapshot } from '../scripted-control-plane.js';
import { loadThirdPartyClient } from './grpc-js-client.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const INTROSPECTION = ['grpc.health.v1.Health', 'grpc.reflection.v1.ServerReflection', 'grpc.reflection.v1alpha.ServerReflection'];

type Client = ReturnType<typeof loadThirdPartyClient>;
interface ReflectionResponse {
  validHost: string;
  messageResponse: 'fileDescriptorResponse' | 'allExtensionNumbersResponse' | 'listServicesResponse' | 'errorResponse';
  fileDescriptorResponse?: { fileDescriptorProto: Buffer[] };
  allExtensionNumbersResponse?: { baseTypeName: string; extensionNumber: number[] };
  listServicesResponse?: { service: { name: string }[] };
  errorResponse?: { errorCode: number; errorMessage: string };
}

const clients: Client[] = [];
const reflectionClient = (url: string, version: 'v1' | 'v1alpha' = 'v1') => {
  const c = loadThirdPartyClient(`grpc/reflection/${version}/reflection.proto`, `grpc.reflection.${version}.ServerReflection`, url);
  clients.push(c);
  return c;
};
const healthClient = (url: string) => {
  const c = loadThirdPartyClient('grpc/health/v1/health.proto', 'grpc.health.v1.Health', url);
  clients.push(c);
  return c;
};
afterAll(() => clients.forEach((c) => c.close()));

/** One ServerReflectionInfo stream: `ask` writes a request and resolves with its response. */
function reflectionStream(client: Client) {
  const call = client.serverReflectionInfo() as grpc.ClientDuplexStream<object, ReflectionResponse>;
  const waiting: ((r: ReflectionResponse) => void)[] = [];
  const errors: Error[] = [];
  call.on('data', (r: ReflectionResponse) => waiting.shift()?.(r));
  call.on('error', (e: Error) => errors.push(e));
  return {
    ask: (req: object) =>
      new Promise<ReflectionResponse>((res, rej) => {
        waiting.push(res);
        call.write(req, (err: Error | null | undefined) => err && rej(err));
        setTimeout(() => rej(new Error(`no reflection response to ${JSON.stringify(req)}; ${errors.join('; ')}`)), 5000).unref();
      }),
    end: () => call.end(),
  };
}

const files = (r: ReflectionResponse): FileDescriptorProto[] => {
  expect(r.messageResponse, JSON.stringify(r.errorResponse)).toBe('fileDescriptorResponse');
  return r.fileDescriptorResponse!.fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b));
};

const check = (client: Client, service: string, metadata = new grpc.Metadata()) =>
  new Promise<string>((res, rej) =>
    client.check({ service }, metadata, { deadline: Date.now() + 5000 }, (err: grpc.ServiceError | null, r: { status: string }) => (err ? rej(err) : res(r.status))),
  );

/** A Watch stream: `next` resolves with the next status it sends. */
function watch(client: Client, service: string) {
  const call = client.watch({ service }) as grpc.ClientReadableStream<{ status: string }>;
  const seen: string[] = [];
  const waiting: ((s: string) => void)[] = [];
  call.on('data', (r: { status: string }) => {
    const w = waiting.shift();
    if (w) w(r.status);
    else seen.push(r.status);
  });
  call.on('error', () => undefined); // cancelled at the end
  return {
    next: (ms = 5000) =>
      new Promise<string>((res, rej) => {
        const s = seen.shift();
        if (s !== undefined) return res(s);
        waiting.push(res);
        setTimeout(() => rej(new Error(`no Watch message within ${ms} ms`)), ms).unref();
      }),
    cancel: () => call.cancel(),
  };
}

describe('reflection and health on a server with a readiness switch', () => {
  let server: RunningServer;
  let ready = true;

  beforeAll(async () => {
    server = await startServer({
      port: 0,
      logger: pino({ level: 'silent' }),
      registry: createRegistry({ defaultMetrics: false }),
      routes: (router) => {
        router.service(DecisionService, {});
        router.service(SnapshotService, {});
      },
      services: [DecisionService],
      readiness: () => ready,
    });
  });
  afterAll(() => server?.close());
  afterEach(() => {
    ready = true;
  });

  it('lists every routed service, the ones outside `services` too, and its own', async () => {
    const s = reflectionStream(reflectionClient(server.url));
    const r = await s.ask({ host: 'example', listServices: '' });
    expect(r.validHost).toBe('example');
    expect(r.listServicesResponse!.service.map((x) => x.name)).toEqual(['authz.v1.DecisionService', 'authz.v1.SnapshotService', ...INTROSPECTION]);
    s.end();
  });

  it('finds the file of a service, then sends only the dependencies not yet sent on the stream', async () => {
    const s = reflectionStream(reflectionClient(server.url));
    const first = files(await s.ask({ fileContainingSymbol: 'authz.v1.DecisionService' }));
    expect(first[0].name).toBe('authz/v1/decision_service.proto');
    expect(first[0].service.map((x) => x.name)).toContain('DecisionService');
    // Every import, transitively, came with it, each once.
    const names = first.map((f) => f.name);
    expect(new Set(names).size).toBe(names.length);
    for (const f of first) for (const d of f.dependency) expect(names).toContain(d);
    expect(names).toEqual(expect.arrayContaining(['authz/v1/options.proto', 'google/api/annotations.proto', 'google/protobuf/descriptor.proto']));
    // Asked by name, a file already sent comes again, without its dependencies.
    const again = files(await s.ask({ fileByFilename: 'authz/v1/options.proto' }));
    expect(again.map((f) => f.name)).toEqual(['authz/v1/options.proto']);
    s.end();

    // A new stream starts over: a dependency asked by name brings its own imports.
    const t = reflectionStream(reflectionClient(server.url));
    const options = files(await t.ask({ fileByFilename: 'authz/v1/options.proto' }));
    expect(options.map((f) => f.name)).toEqual(['authz/v1/options.proto', 'google/protobuf/descriptor.proto']);
    expect(files(await t.ask({ fileByFilename: 'google/protobuf/timestamp.proto' }))[0].messageType[0].name).toBe('Timestamp');
    t.end();
  });

  it('finds methods, messages, nested types, fields and enums; an unknown symbol or file is NOT_FOUND and the stream goes on', async () => {
    const s = reflectionStream(reflectionClient(server.url));
    const fileOf = async (symbol: string) => files(await s.ask({ fileContainingSymbol: symbol }))[0].name;
    expect(await fileOf('authz.v1.DecisionService.Evaluate')).toBe('authz/v1/decision_service.proto');
    expect(await fileOf('authz.v1.EvaluateRequest')).toBe('authz/v1/decision_service.proto');
    expect(await fileOf('authz.v1.EvaluateRequest.scope_id')).toBe('authz/v1/decision_service.proto');
    expect(await fileOf('authz.v1.Change.Op')).toBe('authz/v1/snapshot_service.proto');
    expect(await fileOf('authz.v1.SnapshotService.Watch')).toBe('authz/v1/snapshot_service.proto');
    expect(await fileOf('authz.v1.AccessTier')).toBe('authz/v1/options.proto');
    expect(await fileOf('google.protobuf.Timestamp')).toBe('google/protobuf/timestamp.proto');
    // The error detail every error carries, though no service names it.
    expect(await fileOf('authz.v1.ErrorInfo')).toBe('authz/v1/error_reason.proto');
    expect(await fileOf('grpc.health.v1.Health')).toBe('grpc/health/v1/health.proto');

    for (const req of [{ fileContainingSymbol: 'authz.v1.NoSuchThing' }, { fileByFilename: 'authz/v1/nope.proto' }]) {
      const r = await s.ask(req);
      expect(r.messageResponse).toBe('errorResponse');
      expect(r.errorResponse!.errorCode).toBe(grpc.status.NOT_FOUND);
    }
    expect(files(await s.ask({ fileContainingSymbol: 'authz.v1.DecisionService' }))[0].name).toBe('authz/v1/decision_service.proto');
    s.end();
  });

  it('answers extensions: by number, all numbers of a type, NOT_FOUND for unknown ones', async () => {
    const s = reflectionStream(reflectionClient(server.url));
    const access = files(await s.ask({ fileContainingExtension: { containingType: 'google.protobuf.MethodOptions', extensionNumber: 50701 } }));
    expect(access[0].name).toBe('authz/v1/options.proto');
    const http = files(await s.ask({ fileContainingExtension: { containingType: 'google.protobuf.MethodOptions', extensionNumber: 72295728 } }));
    expect(http[0].name).toBe('google/api/annotations.proto');
    const all = await s.ask({ allExtensionNumbersOfType: 'google.protobuf.MethodOptions' });
    expect(all.allExtensionNumbersResponse).toEqual({ baseTypeName: 'google.protobuf.MethodOptions', extensionNumber: [50701, 72295728] });
    const none = await s.ask({ allExtensionNumbersOfType: 'authz.v1.EvaluateRequest' });
    expect(none.allExtensionNumbersResponse).toEqual({ baseTypeName: 'authz.v1.EvaluateRequest', extensionNumber: [] });
    for (const req of [
      { fileContainingExtension: { containingType: 'google.protobuf.MethodOptions', extensionNumber: 1 } },
      { allExtensionNumbersOfType: 'authz.v1.Nope' },
    ]) {
      expect((await s.ask(req)).errorResponse?.errorCode).toBe(grpc.status.NOT_FOUND);
    }
    s.end();
  });

  it('answers v1alpha alike', async () => {
    const s = reflectionStream(reflectionClient(server.url, 'v1alpha'));
    const list = await s.ask({ listServices: '*' });
    expect(list.listServicesResponse!.service.map((x) => x.name)).toContain('authz.v1.DecisionService');
    expect(files(await s.ask({ fileContainingSymbol: 'authz.v1.DecisionService' }))[0].name).toBe('authz/v1/decision_service.proto');
    expect((await s.ask({ fileContainingSymbol: 'authz.v1.Nope' })).errorResponse?.errorCode).toBe(grpc.status.NOT_FOUND);
    s.end();
  });

  it('Check: SERVING exactly when /readyz is 200, for "" and every served service; unknown names are NOT_FOUND', async () => {
    const h = healthClient(server.url);
    expect(await check(h, '')).toBe('SERVING');
    expect(await check(h, 'authz.v1.DecisionService')).toBe('SERVING');
    expect(await check(h, 'authz.v1.SnapshotService')).toBe('SERVING');
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    ready = false;
    expect((await fetch(`${server.url}/readyz`)).status).toBe(503);
    expect(await check(h, '')).toBe('NOT_SERVING');
    expect(await check(h, 'authz.v1.DecisionService')).toBe('NOT_SERVING');
    await expect(check(h, 'authz.v1.NoSuchService')).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
    // List: every known name with its status.
    const list = await new Promise<{ statuses: Record<string, { status: string }> }>((res, rej) =>
      h.list({}, (err: grpc.ServiceError | null, r: { statuses: Record<string, { status: string }> }) => (err ? rej(err) : res(r))),
    );
    expect(Object.keys(list.statuses).sort()).toEqual(['', 'authz.v1.DecisionService', 'authz.v1.SnapshotService', ...INTROSPECTION]);
    expect(new Set(Object.values(list.statuses).map((s) => s.status))).toEqual(new Set(['NOT_SERVING']));
  });

  it('Watch: sends the status at once, then each change; an unknown name gets SERVICE_UNKNOWN', async () => {
    const h = healthClient(server.url);
    const w = watch(h, '');
    expect(await w.next()).toBe('SERVING');
    ready = false;
    expect(await w.next()).toBe('NOT_SERVING');
    ready = true;
    expect(await w.next()).toBe('SERVING');
    w.cancel();
    const u = watch(h, 'authz.v1.NoSuchService');
    expect(await u.next()).toBe('SERVICE_UNKNOWN');
    u.cancel();
  });
});

describe('the control plane serves reflection and health without credentials', () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    const env = { SERVICE_PORT: '0', SERVICE_BOOTSTRAP_API_KEY: 'azk_introspection_test_key_0123456789abcdef', SERVICE_DATA_DIR: 'memory://' };
    cp = await startControlPlane(loadConfig(env, []), createLogger({ logLevel: 'silent' }));
  }, 60_000);
  afterAll(() => cp?.close());

  it('lists every service of the process, and Health answers, with no API key', async () => {
    const s = reflectionStream(reflectionClient(cp.server.url));
    const names = (await s.ask({ listServices: '' })).listServicesResponse!.service.map((x) => x.name);
    expect(names).toEqual(expect.arrayContaining([...SERVICES.map((x) => x.typeName), ...INTROSPECTION]));
    s.end();
    expect(await check(healthClient(cp.server.url), '')).toBe('SERVING');
    expect(await check(healthClient(cp.server.url), 'authz.v1.ScopeService')).toBe('SERVING');
  });

  it('still refuses the API without a key, and ignores a bad key on health', async () => {
    const md = new grpc.Metadata();
    md.set('x-api-key', 'azk_not_a_key');
    expect(await check(healthClient(cp.server.url), '', md)).toBe('SERVING');
    const res = await fetch(`${cp.server.url}/evaluate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(res.status).toBe(401);
  });
});

describe('the sidecar serves reflection and health', () => {
  it('lists DecisionService; NOT_SERVING before its snapshot, SERVING after, and Watch sees the change', async () => {
    const cp = await scriptedControlPlane();
    const sidecar = await startSidecar(
      { controlPlaneUrl: cp.server.url, apiKey: 'azk_sidecar_test_key', tenantId: TENANT, host: '127.0.0.1', port: 0, maxStalenessMs: 30_000, minRevisionWaitMs: 300, watchCompression: 'none', logLevel: 'silent' },
      pino({ level: 'silent' }),
    );
    try {
      const s = reflectionStream(reflectionClient(sidecar.server.url));
      expect((await s.ask({ listServices: '' })).listServicesResponse!.service.map((x) => x.name)).toEqual(['authz.v1.DecisionService', ...INTROSPECTION]);
      expect(files(await s.ask({ fileContainingSymbol: 'authz.v1.DecisionService' }))[0].name).toBe('authz/v1/decision_service.proto');
      s.end();
      const h = healthClient(sidecar.server.url);
      const stream = await cp.next();
      expect(await check(h, '')).toBe('NOT_SERVING');
      expect(await check(h, 'authz.v1.DecisionService')).toBe('NOT_SERVING');
      const w = watch(h, 'authz.v1.DecisionService');
      expect(await w.next()).toBe('NOT_SERVING');
      stream.push(snapshot(7, 0, true, ROWS));
      expect(await w.next()).toBe('SERVING');
      expect(await check(h, '')).toBe('SERVING');
      w.cancel();
    } finally {
      await sidecar.close();
      await cp.server.close();
    }
  });
});

const BUF = join(ROOT, 'node_modules/.bin/buf');

describe.runIf(existsSync(BUF))('buf curl through reflection (no --schema)', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({
      port: 0,
      logger: pino({ level: 'silent' }),
      registry: createRegistry({ defaultMetrics: false }),
      routes: (router) =>
        router.service(DecisionService, {
          evaluate: (req) => ({ allowed: req.action === 'read', reason: 'role', revision: 3n }),
        }),
    });
  });
  afterAll(() => server?.close());
  const buf = async (...args: string[]) =>
    (await promisify(execFile)(BUF, ['curl', '--protocol', 'grpc', '--http2-prior-knowledge', ...args], { cwd: '/tmp', timeout: 30_000 })).stdout;

  it('--list-services names every service', async () => {
    const out = await buf('--list-services', server.url);
    expect(out.trim().split('\n')).toEqual(['authz.v1.DecisionService', ...INTROSPECTION]);
  });

  it('calls Health/Check and DecisionService/Evaluate with JSON it encodes from the reflected schema', async () => {
    expect(JSON.parse(await buf('-d', '{"service":"authz.v1.DecisionService"}', `${server.url}/grpc.health.v1.Health/Check`))).toEqual({ status: 'SERVING' });
    const out = JSON.parse(await buf('-d', '{"actor":{"subjectId":"s"},"scopeId":"x","action":"read"}', `${server.url}/authz.v1.DecisionService/Evaluate`));
    expect(out).toMatchObject({ allowed: true, reason: 'role', revision: '3' });
  });
});
