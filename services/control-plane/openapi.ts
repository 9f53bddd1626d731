/**
 * The control plane's OpenAPI document (`openapi.json` beside this file, served at
 * `GET /openapi.json`): built by `openApiDocument` from the services the gateway serves, with
 * the doc comments of the proto sources (read from a `buf build` image, which keeps them; the
 * descriptors embedded in gen/ do not). `npm run openapi` rewrites the file; CI fails when
 * the committed one differs. A development tool: the running service only reads the file.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createFileRegistry, fromBinary, type AnyDesc, type DescEnum, type DescField, type DescMessage, type DescMethod, type DescService } from '@bufbuild/protobuf';
import { FileDescriptorSetSchema } from '@bufbuild/protobuf/wkt';
import { getComments } from '@bufbuild/protoplugin';
import { openApiDocument, type Describe } from '../transport/gateway/openapi.js';
import { SERVICES } from './services.js';
import { accessTierOf, TIER_KINDS } from './auth/interceptor.js';
import { AccessTier } from '../../gen/authz/v1/options_pb.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Where the committed document lives. */
export const OPENAPI_FILE = fileURLToPath(new URL('./openapi.json', import.meta.url));

const DESCRIPTION = `The REST surface of the authz control plane. Every operation is also a gRPC, gRPC-Web and Connect call of the same name on the same port (see each operation's description); this document is generated from the \`google.api.http\` options of the protos that the server's REST gateway routes by.

Conventions:
- Bodies are the proto JSON form of the messages: lowerCamelCase field names (the proto names, such as \`scope_id\`, are accepted too, in bodies and query parameters). Unknown fields and unknown query parameters are \`invalid_argument\` naming them.
- 64-bit integers (\`revision\`) are JSON numbers in responses; requests may send numbers or decimal strings. Timestamps are RFC 3339 strings.
- Every success is HTTP 200; a delete answers \`{}\`.
- A write answers the tenant's new revision in the \`x-revision\` header. A list answers a bare JSON array; \`limit\` (default 100, at most 1000) and \`cursor\` page it, and the next page's cursor comes back in \`x-next-cursor\` (absent on the last page).
- Errors are \`{code, message, details}\`: \`code\` is the Connect code (the HTTP status is Connect's mapping of it) and \`details\` holds one \`authz.v1.ErrorInfo\` with a \`reason\` to branch on and the \`field\` at fault.
- Credentials: \`x-api-key: <key>\` or \`Authorization: Bearer <key>\`. Each operation says which kinds of key it takes (\`x-access-tier\`). \`/healthz\`, \`/readyz\`, \`/metrics\` and this document need none.`;

/** Looks descriptors up in a `buf build` image of proto/ (which keeps source comments). */
export function protoComments(): Describe {
  // The launcher of the buf npm package is a node script; run it with this node.
  const buf = join(ROOT, 'node_modules/@bufbuild/buf/bin/buf');
  const image = execFileSync(process.execPath, [buf, 'build', '-o', '-'], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
  const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, image));
  const find = (desc: DescService | DescMethod | DescMessage | DescField | DescEnum): AnyDesc | undefined => {
    switch (desc.kind) {
      case 'service':
        return registry.getService(desc.typeName);
      case 'rpc':
        return registry.getService(desc.parent.typeName)?.methods.find((m) => m.name === desc.name);
      case 'message':
        return registry.getMessage(desc.typeName);
      case 'enum':
        return registry.getEnum(desc.typeName);
      case 'field':
        return desc.parent.kind === 'message' ? registry.getMessage(desc.parent.typeName)?.fields.find((f) => f.name === desc.name) : undefined;
    }
  };
  return (desc) => {
    const found = find(desc);
    if (!found || found.kind === 'file') return undefined;
    const c = getComments(found);
    const text = (c.leading ?? c.trailing ?? '').split('\n').map((l) => l.trim()).join('\n').trim();
    return text === '' ? undefined : text.replace(/(\S)\n(?=\S)/g, '$1 ');
  };
}

/** The document's text, as committed. */
export function renderOpenApi(describe: Describe = protoComments()): string {
  const pkg = JSON.parse(readFileSync(new URL('package.json', pathToFileURL(ROOT)), 'utf8')) as { version: string };
  const info = { title: 'authz control plane', version: pkg.version, description: DESCRIPTION };
  const doc = openApiDocument(SERVICES, info, describe, (m) => {
    const tier = accessTierOf(m);
    return tier === AccessTier.UNSPECIFIED ? undefined : { tier: AccessTier[tier].toLowerCase(), kinds: TIER_KINDS[tier] };
  });
  return `${JSON.stringify(doc, null, 2)}\n`;
}

// `npm run openapi`
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  writeFileSync(OPENAPI_FILE, renderOpenApi());
  process.stdout.write(`wrote ${OPENAPI_FILE}\n`);
}
