/**
 * The binary mutator of the fuzz suite: it reads every method's valid request back byte for
 * byte, and each wire mutation makes bytes that the server's scan refuses, naming the field
 * the mutation was aimed at (or an enclosing one), except the few a reader takes on purpose.
 */
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../seeded-random.js';
import { binaryRequestProblem } from '../../services/transport/binary-scan.js';
import { MAX_BODY_BYTES } from '../../services/transport/request-limits.js';
import { WIRE_KINDS, fieldPaths, mutateBinary, rewritten, validBinary, type WireKind } from './binary-mutations.js';
import { METHODS, pathText, validRequest, type TenantWorld, type World } from './generator.js';
import { envelope } from './http.js';

const tenant = (id: string): TenantWorld => ({
  tenantId: id, rootScopeId: `scope_${id}`, parentTypeId: 'resource_type_a', childTypeId: 'resource_type_b', typeKeys: ['folder', 'doc'], core: {}, spare: {},
});
const world: World = { A: tenant('tenant_a'), B: tenant('tenant_b'), global: { core: {}, spare: {} }, hasParent: new Set(), usedCombos: new Set() };

/** Mutations a protobuf reader takes, by their label: they are sent to see that they are taken. */
const TAKEN = /within the limit|past 64 bits|129-deep|no bytes/;

describe('the binary mutator', () => {
  it('reads every method\'s valid request back byte for byte, each field under its JSON path', () => {
    const r = mulberry32(1);
    for (const m of METHODS) {
      const bytes = validBinary(m, validRequest(r, world, m, 'A'));
      expect(binaryRequestProblem(m.method.input, bytes), m.name).toBeNull();
      expect(Buffer.from(rewritten(m.method.input, bytes)).equals(Buffer.from(bytes)), m.name).toBe(true);
    }
    const batch = METHODS.find((m) => m.name.endsWith('.BatchCreateSubjects'))!;
    const paths = fieldPaths(batch.method.input, validBinary(batch, { items: [{ tenantId: 'tenant_a', type: 'user', externalId: 'x', metadata: { team: 'red' } }] }));
    expect(paths).toEqual(expect.arrayContaining(['items.0', 'items.0.externalId', 'items.0.metadata', 'items.0.metadata.team']));
  });

  it.each(WIRE_KINDS.filter((k) => k !== 'badEnvelope'))('%s: bytes the server\'s scan refuses, naming the field aimed at', (kind: WireKind) => {
    const r = mulberry32(7);
    let made = 0;
    for (const m of METHODS) {
      const got = mutateBinary(r, world, m, validRequest(r, world, m, 'A'), 'connect-proto', [kind]);
      if (!got) continue;
      made++;
      const { mutation, payload } = got;
      const what = `${m.name}: ${mutation.label} at ${pathText(mutation.path)}`;
      expect(mutation.kind, what).toBe(kind);
      // Only the mutations meant to pass the limit make a body over it.
      expect(payload.message.length <= MAX_BODY_BYTES || /past the 4 MiB/.test(mutation.label), what).toBe(true);
      const problem = binaryRequestProblem(m.method.input, payload.message);
      if (TAKEN.test(mutation.label)) continue;
      if (payload.message.length > MAX_BODY_BYTES) continue; // refused by its size before any scan
      expect(problem, what).not.toBeNull();
      if (mutation.path.length === 0 || kind === 'malformed') continue;
      const ancestors = mutation.path.map((_, i) => pathText(mutation.path.slice(0, i + 1)));
      const named = ancestors.some((a) => problem!.field === a || problem!.field.startsWith(`${a}.`) || problem!.field.startsWith(`${a}[`));
      expect(named, `${what}: the scan named "${problem!.field}" (${problem!.message})`).toBe(true);
    }
    expect(made).toBeGreaterThan(10);
  });

  it('badEnvelope: a gRPC frame that is not the one envelope of a valid message', () => {
    const r = mulberry32(3);
    const labels = new Set<string>();
    for (const m of METHODS) {
      const got = mutateBinary(r, world, m, validRequest(r, world, m, 'A'), 'grpc', ['badEnvelope']);
      expect(got, m.name).toBeDefined();
      expect(binaryRequestProblem(m.method.input, got!.payload.message), m.name).toBeNull();
      expect(Buffer.from(got!.payload.envelope!).equals(Buffer.from(envelope(got!.payload.message))), got!.mutation.label).toBe(false);
      labels.add(got!.mutation.label);
    }
    expect(labels.size).toBeGreaterThan(6);
    // Connect binary has no envelope to break.
    expect(mutateBinary(r, world, METHODS[0], validRequest(r, world, METHODS[0], 'A'), 'connect-proto', ['badEnvelope'])).toBeUndefined();
  });
});
