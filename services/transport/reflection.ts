/**
 * gRPC server reflection (`grpc.reflection.v1.ServerReflection` and its `v1alpha` twin) for
 * connect-node, answered from the generated descriptors: what `buf curl`, `grpcurl`, Postman
 * and IDEs use to call the API without its .proto files. Protocol:
 * https://github.com/grpc/grpc/blob/master/doc/server-reflection.md. As grpc-go does, a file is
 * sent with those of its transitive dependencies not yet sent on the same stream; an unknown
 * file, symbol, extension or type is an `error_response` with NOT_FOUND, and the stream goes on.
 */
import { create, fromBinary, toBinary, type DescExtension, type DescFile, type DescMessage, type DescService } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';
import { Code, type ServiceImpl } from '@connectrpc/connect';
import {
  ErrorResponseSchema,
  ExtensionNumberResponseSchema,
  FileDescriptorResponseSchema,
  ListServiceResponseSchema,
  ServerReflection as ServerReflectionV1,
  ServerReflectionRequestSchema,
  ServerReflectionResponseSchema,
  type ServerReflectionRequest,
  type ServerReflectionResponse,
} from '../../gen/grpc/reflection/v1/reflection_pb.js';
import {
  ServerReflection as ServerReflectionV1alpha,
  ServerReflectionRequestSchema as V1alphaRequestSchema,
  ServerReflectionResponseSchema as V1alphaResponseSchema,
} from '../../gen/grpc/reflection/v1alpha/reflection_pb.js';

export { ServerReflectionV1, ServerReflectionV1alpha };

/** The descriptors reflection answers from: files by name, symbols and extensions to their file. */
export class DescriptorIndex {
  /** Full names of the services, sorted. */
  readonly serviceNames: readonly string[];
  private readonly files = new Map<string, DescFile>();
  private readonly symbols = new Map<string, DescFile>();
  private readonly messages = new Map<string, DescMessage>();
  /** extendee full name → field number → extension */
  private readonly extensions = new Map<string, Map<number, DescExtension>>();
  private readonly encoded = new Map<DescFile, Uint8Array>();

  /**
   * Indexes the files declaring `services`, the `extraFiles` (types no service names, such as
   * error details) and, transitively, every file they import.
   */
  constructor(services: readonly DescService[], extraFiles: readonly DescFile[] = []) {
    this.serviceNames = [...new Set(services.map((s) => s.typeName))].sort();
    for (const s of services) this.addFile(s.file);
    for (const f of extraFiles) this.addFile(f);
  }

  private addFile(file: DescFile): void {
    const name = fileName(file);
    if (this.files.has(name)) return;
    this.files.set(name, file);
    for (const s of file.services) {
      this.symbols.set(s.typeName, file);
      for (const m of s.methods) this.symbols.set(`${s.typeName}.${m.name}`, file);
    }
    const addMessage = (m: DescMessage) => {
      this.symbols.set(m.typeName, file);
      this.messages.set(m.typeName, m);
      for (const f of m.fields) this.symbols.set(`${m.typeName}.${f.name}`, file);
      for (const o of m.oneofs) this.symbols.set(`${m.typeName}.${o.name}`, file);
      m.nestedMessages.forEach(addMessage);
      m.nestedEnums.forEach(addEnum);
      m.nestedExtensions.forEach(addExtension);
    };
    const addEnum = (e: DescFile['enums'][number]) => {
      this.symbols.set(e.typeName, file);
      // Enum values are scoped beside their enum, as in C++ (`pkg.Enum` has `pkg.VALUE`).
      const scope = e.typeName.slice(0, e.typeName.length - e.name.length);
      for (const v of e.values) this.symbols.set(`${scope}${v.name}`, file);
    };
    const addExtension = (x: DescExtension) => {
      this.symbols.set(x.typeName, file);
      let byNumber = this.extensions.get(x.extendee.typeName);
      if (!byNumber) this.extensions.set(x.extendee.typeName, (byNumber = new Map()));
      byNumber.set(x.number, x);
    };
    file.messages.forEach(addMessage);
    file.enums.forEach(addEnum);
    file.extensions.forEach(addExtension);
    for (const d of file.dependencies) this.addFile(d);
  }

  /** The file of this name (`authz/v1/decision_service.proto`), or undefined. */
  fileByName(name: string): DescFile | undefined {
    return this.files.get(name);
  }

  /** The file declaring a service, method, message, field, enum, enum value or extension. */
  fileContainingSymbol(symbol: string): DescFile | undefined {
    return this.symbols.get(symbol.startsWith('.') ? symbol.slice(1) : symbol);
  }

  /** The file declaring extension `number` of message `extendee`. */
  fileContainingExtension(extendee: string, number: number): DescFile | undefined {
    return this.extensions.get(extendee)?.get(number)?.file;
  }

  /** The field numbers of every known extension of message `typeName`, ascending; undefined for an unknown message. */
  extensionNumbersOf(typeName: string): number[] | undefined {
    if (!this.messages.has(typeName)) return undefined;
    return [...(this.extensions.get(typeName)?.keys() ?? [])].sort((a, b) => a - b);
  }

  /** The serialized FileDescriptorProto of a file (encoded once). */
  encode(file: DescFile): Uint8Array {
    let bytes = this.encoded.get(file);
    if (!bytes) {
      bytes = toBinary(FileDescriptorProtoSchema, file.proto);
      this.encoded.set(file, bytes);
    }
    return bytes;
  }

  /**
   * `file` and, breadth first, those of its transitive dependencies not in `sent` (which it
   * updates): the file asked for is always sent, its dependencies once per stream.
   */
  withDependencies(file: DescFile, sent: Set<string>): Uint8Array[] {
    const out: Uint8Array[] = [];
    const queue = [file];
    for (let f = queue.shift(); f !== undefined; f = queue.shift()) {
      const name = fileName(f);
      if (out.length === 0 || !sent.has(name)) {
        sent.add(name);
        out.push(this.encode(f));
        queue.push(...f.dependencies);
      }
    }
    return out;
  }
}

/** The name a file is asked for by: `authz/v1/decision_service.proto`. */
function fileName(file: DescFile): string {
  return file.proto.name || `${file.name}.proto`;
}

/** Answers one reflection request; `sent` holds the file names already sent on the stream. */
export function answerReflection(index: DescriptorIndex, req: ServerReflectionRequest, sent: Set<string>): ServerReflectionResponse {
  const res = create(ServerReflectionResponseSchema, { validHost: req.host, originalRequest: req });
  const files = (file: DescFile | undefined, what: string): ServerReflectionResponse['messageResponse'] =>
    file
      ? { case: 'fileDescriptorResponse', value: create(FileDescriptorResponseSchema, { fileDescriptorProto: index.withDependencies(file, sent) }) }
      : error(Code.NotFound, `${what} not found`);
  const r = req.messageRequest;
  switch (r.case) {
    case 'listServices':
      res.messageResponse = {
        case: 'listServicesResponse',
        value: create(ListServiceResponseSchema, { service: index.serviceNames.map((name) => ({ name })) }),
      };
      break;
    case 'fileByFilename':
      res.messageResponse = files(index.fileByName(r.value), `file ${JSON.stringify(r.value)}`);
      break;
    case 'fileContainingSymbol':
      res.messageResponse = files(index.fileContainingSymbol(r.value), `symbol ${JSON.stringify(r.value)}`);
      break;
    case 'fileContainingExtension':
      res.messageResponse = files(
        index.fileContainingExtension(r.value.containingType, r.value.extensionNumber),
        `extension ${r.value.extensionNumber} of ${JSON.stringify(r.value.containingType)}`,
      );
      break;
    case 'allExtensionNumbersOfType': {
      const numbers = index.extensionNumbersOf(r.value);
      res.messageResponse = numbers
        ? {
            case: 'allExtensionNumbersResponse',
            value: create(ExtensionNumberResponseSchema, { baseTypeName: r.value, extensionNumber: numbers }),
          }
        : error(Code.NotFound, `message type ${JSON.stringify(r.value)} not found`);
      break;
    }
    default:
      res.messageResponse = error(Code.InvalidArgument, 'the request asks nothing (message_request is not set)');
  }
  return res;
}

function error(code: Code, message: string): ServerReflectionResponse['messageResponse'] {
  return { case: 'errorResponse', value: create(ErrorResponseSchema, { errorCode: code, errorMessage: message }) };
}

/**
 * The two reflection services over one index. v1alpha's messages are v1's under another
 * package (same fields, same numbers), so its requests and answers cross over the wire format.
 */
export function reflectionServices(index: DescriptorIndex): {
  v1: ServiceImpl<typeof ServerReflectionV1>;
  v1alpha: ServiceImpl<typeof ServerReflectionV1alpha>;
} {
  return {
    v1: {
      async *serverReflectionInfo(requests) {
        const sent = new Set<string>();
        for await (const req of requests) yield answerReflection(index, req, sent);
      },
    },
    v1alpha: {
      async *serverReflectionInfo(requests) {
        const sent = new Set<string>();
        for await (const req of requests) {
          const v1 = fromBinary(ServerReflectionRequestSchema, toBinary(V1alphaRequestSchema, req));
          yield fromBinary(V1alphaResponseSchema, toBinary(ServerReflectionResponseSchema, answerReflection(index, v1, sent)));
        }
      },
    },
  };
}
