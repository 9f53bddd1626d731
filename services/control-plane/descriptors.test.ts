import { readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { hasOption, type DescFile, type DescService } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { http } from '../../gen/google/api/annotations_pb.js';
import { AccessTier } from '../../gen/authz/v1/options_pb.js';
import { accessTierOf } from './auth/interceptor.js';
import { RouteTable, routesOf } from '../transport/gateway/routes.js';

const GEN = resolve(dirname(fileURLToPath(import.meta.url)), '../../gen/authz/v1');

/** Every DescService exported by a `*_service_pb.ts` file of gen/authz/v1. */
async function allServices(): Promise<DescService[]> {
  const files = readdirSync(GEN).filter((f) => f.endsWith('_service_pb.ts'));
  const out: DescService[] = [];
  for (const f of files) {
    const mod = (await import(pathToFileURL(join(GEN, f)).href)) as Record<string, unknown>;
    for (const v of Object.values(mod)) {
      if (typeof v === 'object' && v !== null && (v as { kind?: unknown }).kind === 'service') out.push(v as DescService);
    }
  }
  return out;
}

/** Every DescFile exported by a `*_pb.ts` file of gen/authz/v1. */
async function allFiles(): Promise<DescFile[]> {
  const out: DescFile[] = [];
  for (const f of readdirSync(GEN).filter((x) => x.endsWith('_pb.ts'))) {
    const mod = (await import(pathToFileURL(join(GEN, f)).href)) as Record<string, unknown>;
    for (const v of Object.values(mod)) {
      if (typeof v === 'object' && v !== null && (v as { kind?: unknown }).kind === 'file') out.push(v as DescFile);
    }
  }
  return out;
}

describe('file options', () => {
  it('every authz.v1 file names its Go and Java packages (for teams generating their own clients)', async () => {
    const files = await allFiles();
    expect(files.length).toBe(readdirSync(GEN).filter((x) => x.endsWith('_pb.ts')).length);
    for (const file of files) {
      const o = file.proto.options;
      const outer = file.name.split('/').pop()!.split('_').map((w) => w[0].toUpperCase() + w.slice(1)).join('') + 'Proto';
      expect({ file: file.name, go: o?.goPackage, javaPackage: o?.javaPackage, multiple: o?.javaMultipleFiles, outer: o?.javaOuterClassname }).toEqual({
        file: file.name,
        go: 'example.com/authz/gen/go/authz/v1;authzv1',
        javaPackage: 'com.example.authz.v1',
        multiple: true,
        outer,
      });
    }
  });
});

describe('service descriptors', () => {
  it('every RPC of every service declares an access tier and (unless streaming) a google.api.http binding', async () => {
    const services = await allServices();
    expect(services.length).toBeGreaterThanOrEqual(10);
    const problems: string[] = [];
    for (const s of services) {
      for (const m of s.methods) {
        const name = `${s.typeName}.${m.name}`;
        if (accessTierOf(m) === AccessTier.UNSPECIFIED) problems.push(`${name}: no (authz.v1.access) tier`);
        if (m.methodKind === 'unary' && !hasOption(m, http)) problems.push(`${name}: no google.api.http binding`);
        if (m.methodKind !== 'unary' && hasOption(m, http)) problems.push(`${name}: a streaming RPC cannot have a REST binding`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('all bindings compile into one route table without collisions', async () => {
    const services = await allServices();
    const table = new RouteTable(services);
    const expected = services.flatMap((s) => s.methods.flatMap((m) => routesOf(m)));
    expect(table.routes.length).toBe(expected.length);
    // spot checks of the public contract
    const find = (verb: string, path: string) => {
      const m = table.match(verb, path);
      return m.kind === 'match' ? `${m.route.method.parent.typeName}.${m.route.method.name}` : m.kind;
    };
    expect(find('POST', '/evaluate')).toBe('authz.v1.DecisionService.Evaluate');
    expect(find('GET', '/scope-hierarchy/scope_1/children')).toBe('authz.v1.ScopeService.ListScopeChildren');
    expect(find('GET', '/resource-hierarchy/ancestors/resource_1')).toBe('authz.v1.ResourceService.ListResourceAncestors');
    expect(find('DELETE', '/resource-hierarchy/resource_1/resource_2')).toBe('authz.v1.ResourceService.DeleteResourceEdge');
    expect(find('GET', '/environments/tenant/tenant_1')).toBe('authz.v1.TenancyService.ListTenantEnvironments');
    expect(find('GET', '/nope')).toBe('not_found');
  });
});
