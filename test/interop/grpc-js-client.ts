/**
 * Interop helper: a plain @grpc/grpc-js client built only from the .proto files (no generated
 * code), the way a third-party gRPC client in any language would see the API.
 */
import { readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Where imports resolve: our protos, vendored google/api, then google/protobuf from google-proto-files. */
export const PROTO_INCLUDE_DIRS = [
  join(ROOT, 'proto'),
  join(ROOT, 'third_party/proto'),
  join(ROOT, 'node_modules/google-proto-files'),
];

/** Every .proto file of the API, relative to `proto/`. */
export function apiProtoFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string, rel: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(dir, e.name), `${rel}${e.name}/`);
      else if (e.name.endsWith('.proto')) out.push(`${rel}${e.name}`);
    }
  };
  walk(join(ROOT, 'proto'), '');
  return out.sort();
}

let cached: grpc.GrpcObject | undefined;

/** The grpc-js package object of every API proto (loaded once). */
export function loadApiPackage(): grpc.GrpcObject {
  cached ??= grpc.loadPackageDefinition(
    protoLoader.loadSync(apiProtoFiles(), {
      includeDirs: PROTO_INCLUDE_DIRS,
      keepCase: false,
      longs: String,
      enums: String,
      defaults: true,
      oneofs: true,
    }),
  );
  return cached;
}

/** A unary method of a dynamically loaded client: `client.getScope(request, metadata, options, callback)`. */
export type DynamicClient = grpc.Client & Record<string, (...args: unknown[]) => grpc.ClientUnaryCall>;

/**
 * A grpc-js client for a fully qualified service (`authz.v1.ScopeService`) at `address`
 * (`127.0.0.1:8080` or `http://127.0.0.1:8080`): plaintext, or TLS with `credentials`
 * (`grpc.credentials.createSsl(ca)`). Method names are lowerCamelCase and also the proto names
 * (`GetScope`).
 */
export function loadGrpcJsClient(serviceName: string, address: string, credentials = grpc.credentials.createInsecure()): DynamicClient {
  let node: unknown = loadApiPackage();
  for (const part of serviceName.split('.')) {
    node = (node as Record<string, unknown> | undefined)?.[part];
  }
  if (typeof node !== 'function') throw new Error(`service ${serviceName} is not defined in the .proto files`);
  const Ctor = node as grpc.ServiceClientConstructor;
  const target = address.replace(/^[a-z]+:\/\//, '');
  return new Ctor(target, credentials) as unknown as DynamicClient;
}

/** Calls a unary method and resolves with the response, initial metadata and trailers. */
export function callUnary<Res = Record<string, unknown>>(
  client: DynamicClient,
  method: string,
  request: Record<string, unknown>,
  metadata: Record<string, string> = {},
): Promise<{ response: Res; header: grpc.Metadata; trailer: grpc.Metadata }> {
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(metadata)) md.set(k, v);
  return new Promise((resolvePromise, reject) => {
    let header = new grpc.Metadata();
    let trailer = new grpc.Metadata();
    let response: Res | undefined;
    let error: grpc.ServiceError | null = null;
    let pending = 2;
    const done = () => {
      if (--pending > 0) return;
      if (error) reject(Object.assign(error, { header, trailer }));
      else resolvePromise({ response: response as Res, header, trailer });
    };
    const fn = client[method];
    if (typeof fn !== 'function') {
      reject(new Error(`no method ${method}`));
      return;
    }
    const call = fn.call(client, request, md, (err: grpc.ServiceError | null, res: Res) => {
      error = err;
      response = res;
      done();
    });
    call.on('metadata', (m: grpc.Metadata) => (header = m));
    call.on('status', (s: grpc.StatusObject) => {
      trailer = s.metadata;
      done();
    });
  });
}

/**
 * A plaintext grpc-js client of a service defined in one .proto file of `third_party/proto`
 * (`grpc/health/v1/health.proto`), loaded from that file alone.
 */
export function loadThirdPartyClient(protoFile: string, serviceName: string, address: string): DynamicClient & Record<string, (...args: unknown[]) => unknown> {
  const pkg = grpc.loadPackageDefinition(
    protoLoader.loadSync(protoFile, { includeDirs: [join(ROOT, 'third_party/proto')], keepCase: false, longs: String, enums: String, defaults: true, oneofs: true }),
  );
  let node: unknown = pkg;
  for (const part of serviceName.split('.')) node = (node as Record<string, unknown> | undefined)?.[part];
  if (typeof node !== 'function') throw new Error(`service ${serviceName} is not defined in ${protoFile}`);
  const Ctor = node as grpc.ServiceClientConstructor;
  return new Ctor(address.replace(/^[a-z]+:\/\//, ''), grpc.credentials.createInsecure()) as unknown as DynamicClient & Record<string, (...args: unknown[]) => unknown>;
}
