/**
 * Every surface of the sidecar answers alike: REST, Connect JSON and binary and gRPC take the
 * lean path, gRPC-Web connect-node; successes and each class of error must come out the same.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { startSidecar, type Sidecar } from './app.js';
import { ROOT, ROWS, TENANT, scriptedControlPlane, snapshot } from '../test/scripted-control-plane.js';
import { MAX_BODY_BYTES } from '../services/transport/request-limits.js';
import {
  SURFACES, effectiveOn, errorClassOn, evaluateBatchOn, evaluateOn, expectedOutcomes, transportErrorClasses, type Outcome,
} from '../test/conformance/surfaces.js';

let cp: Awaited<ReturnType<typeof scriptedControlPlane>>;
let sidecar: Sidecar;

beforeAll(async () => {
  cp = await scriptedControlPlane();
  sidecar = await startSidecar({
    controlPlaneUrl: cp.server.url, apiKey: 'azk_surfaces', tenantId: TENANT, host: '127.0.0.1', port: 0,
    maxStalenessMs: 30_000, minRevisionWaitMs: 50, watchCompression: 'none', logLevel: 'silent',
  }, pino({ level: 'silent' }));
  const s = await cp.next();
  s.push(snapshot(9, 0, true, ROWS));
  while (!sidecar.follower.fresh()) await new Promise((r) => setTimeout(r, 5));
});
afterAll(async () => {
  await sidecar?.close();
  await cp?.server.close();
});

const read = (extra: Record<string, unknown> = {}) => ({ actor: { subjectId: 'subject_alice' }, scopeId: ROOT, action: 'read', ...extra });

/** The same call on every surface; they must all agree, and the first is returned. */
async function everywhere(call: (surface: (typeof SURFACES)[number]) => Promise<Outcome>): Promise<Outcome> {
  const outcomes = await Promise.all(SURFACES.map(async (s) => [s, await call(s)] as const));
  for (const [s, o] of outcomes) expect(o, `${s} differs from ${outcomes[0][0]}`).toEqual(outcomes[0][1]);
  return outcomes[0][1];
}

describe('the sidecar\'s surfaces', () => {
  const cases: [string, Record<string, unknown>, (o: Outcome) => void][] = [
    ['a role allows', read({ resource: { externalResourceId: 'doc-9', resourceType: 'doc' } }), (o) => expect(o).toMatchObject({ ok: { allowed: true, reason: 'role', revision: 9 } })],
    ['no role denies', read({ actor: { subjectId: 'subject_bob' } }), (o) => expect(o).toMatchObject({ ok: { allowed: false, reason: 'no_match' } })],
    ['a policy denies, naming itself', read({ action: 'delete', actor: { subjectId: 'subject_alice' }, resource: { resourceId: 'resource_doc1' } }),
      (o) => expect(o).toMatchObject({ ok: { allowed: false, reason: 'policy_deny', decidedByPolicy: true, evaluatedPolicy: { id: 'policy_no_delete', effect: 'deny', priority: 5 } } })],
    ['an explanation', read({ explain: true }), (o) => expect((o as { ok: { trace: unknown[] } }).ok.trace.length).toBeGreaterThan(3)],
    ['a missing field', { scopeId: ROOT, action: 'read' }, (o) => expect(o).toEqual({ error: { code: 'InvalidArgument', message: 'actor.subjectId: is required (or actor.externalId)', reason: 'INVALID_FIELD', field: 'actor.subjectId' } })],
    ['a NUL byte', read({ action: 'r\u0000' }), (o) => expect(o).toMatchObject({ error: { code: 'InvalidArgument', field: 'action' } })],
    ['a scope of another tenant', read({ scopeId: 'scope_elsewhere' }), (o) => expect(o).toMatchObject({ error: { code: 'PermissionDenied', field: 'scopeId' } })],
    ['a revision not reached', read({ consistency: { minRevision: '99' } }), (o) => expect(o).toMatchObject({ error: { code: 'Unavailable', reason: 'STALE' } })],
    ['full consistency', read({ consistency: { fullyConsistent: true } }), (o) => expect(o).toMatchObject({ error: { code: 'FailedPrecondition', field: 'consistency.fullyConsistent' } })],
    ['a past revision', read({ consistency: { atRevision: '1' } }), (o) => expect(o).toMatchObject({ error: { code: 'FailedPrecondition', field: 'consistency.atRevision' } })],
    ['a past time', read({ consistency: { atTime: { seconds: 1577836800n, nanos: 0 } } }), (o) => expect(o).toMatchObject({ error: { code: 'FailedPrecondition', field: 'consistency.atTime' } })],
  ];
  for (const [name, request, check] of cases) {
    it(name, async () => check(await everywhere((s) => evaluateOn(s, sidecar.server.url, request as never))));
  }

  it('batches', async () => {
    const o = await everywhere((s) => evaluateBatchOn(s, sidecar.server.url, [read(), read({ actor: { subjectId: 'subject_bob' } })] as never));
    expect(o).toMatchObject({ ok: { results: [{ allowed: true }, { allowed: false }] } });
    const bad = await everywhere((s) => evaluateBatchOn(s, sidecar.server.url, [read(), read({ scopeId: '' })] as never));
    expect(bad).toMatchObject({ error: { code: 'InvalidArgument', field: 'requests[1].scopeId' } });
  });

  it('effective permissions, with the revision', async () => {
    const o = await everywhere((s) => effectiveOn(s, sidecar.server.url, { subjectId: 'subject_alice', scopeId: ROOT }));
    expect(o).toMatchObject({ ok: { permissions: [{ key: 'doc:read:*', source: 'role', roleId: 'role_reader' }], revision: 9 } });
  });

  // The same code and ErrorInfo for each class of mistake on every surface (as on the control plane).
  for (const c of transportErrorClasses({ rest: { method: 'POST', path: '/evaluate' }, rpc: '/authz.v1.DecisionService/Evaluate', valid: () => read(), bodyLimit: MAX_BODY_BYTES })) {
    it(`error class: ${c.name}`, async () => {
      expect(await errorClassOn(sidecar.server.url, c)).toEqual(expectedOutcomes(c));
    });
  }
});

/**
 * JSON `null` for a field is proto3 JSON for "the default": the lean path reads JSON without a
 * message decoder, so every field set to null must answer exactly as the field left out (never a
 * 500), on REST and Connect JSON.
 */
describe('null fields in JSON requests', () => {
  const post = async (path: string, body: unknown) => {
    const res = await fetch(sidecar.server.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const full = read({ resource: { externalResourceId: 'doc-9', resourceType: 'doc' }, context: { a: 1 }, explain: false, consistency: { minRevision: '1', fullyConsistent: false } }) as Record<string, unknown>;
  /** Every field path of the request, with the request holding null there and the request without it. */
  function variants(): [string, unknown, unknown][] {
    const out: [string, unknown, unknown][] = [];
    const walk = (node: Record<string, unknown>, path: string[]) => {
      for (const k of Object.keys(node)) {
        const withNull = structuredClone(full);
        const without = structuredClone(full);
        let a = withNull as Record<string, unknown>;
        let b = without as Record<string, unknown>;
        for (const p of path) {
          a = a[p] as Record<string, unknown>;
          b = b[p] as Record<string, unknown>;
        }
        a[k] = null;
        delete b[k];
        out.push([[...path, k].join('.'), withNull, without]);
        const v = node[k];
        if (v && typeof v === 'object' && k !== 'context') walk(v as Record<string, unknown>, [...path, k]);
      }
    };
    walk(full, []);
    return out;
  }

  for (const path of ['/evaluate', `/authz.v1.DecisionService/Evaluate`]) {
    it(`${path}: every field null answers as the field left out`, async () => {
      const cases = variants();
      expect(cases.length).toBeGreaterThan(10);
      for (const [field, withNull, without] of cases) {
        const [a, b] = [await post(path, withNull), await post(path, without)];
        // A decision, or a refusal of the request (a required field missing): never another status.
        expect([200, 400], `${field}: ${a.status}`).toContain(a.status);
        expect(a, field).toEqual(b);
      }
    });
  }

  it('batches and effective permissions with nulls', async () => {
    expect((await post('/evaluate/batch', { requests: null })).status).toBe(200);
    const nullItem = await post('/evaluate/batch', { requests: [null] });
    // A null item is no request: refused, naming it.
    expect(nullItem).toMatchObject({ status: 400, body: { code: 'invalid_argument', message: 'requests[0]: must not be null', details: [{ reason: 'ERROR_REASON_INVALID_FIELD', field: 'requests[0]' }] } });
    expect((await post('/authz.v1.DecisionService/GetEffectivePermissions', { subjectId: null, scopeId: ROOT })).body).toMatchObject({ code: 'invalid_argument' });
  });
});
