/**
 * The import client against a real control plane (REST, real keys, PostgreSQL and the embedded
 * database): a file round trip read back through the entity APIs, a decision and a Watch stream;
 * a bad line fails its batch alone and names itself; an interrupted import resumes without
 * writing anything twice; tiers; Connect JSON over HTTP/1.1 on the same service.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createClient } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node';
import { ImportService } from '../../gen/authz/v1/import_service_pb.js';
import { SnapshotService } from '../../gen/authz/v1/snapshot_service_pb.js';
import { describeEachBackend, startTestControlPlane, storeDigest, TEST_BOOTSTRAP_KEY } from '../../test/harness.js';
import { ModelClient } from '../../test/watch-fixtures.js';
import { ImportError, formatProgress, importNdjson, importStatus, type ImportProgress } from './ndjson-client.js';

const dir = mkdtempSync(join(tmpdir(), 'authz-import-'));
const file = (name: string, lines: unknown[]) => {
  const path = join(dir, name);
  writeFileSync(path, lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n');
  return path;
};
const res = (externalId: string, type = 'doc', more: Record<string, unknown> = {}) => ({ resource: { type, externalId, ...more } });
const grant = (who: string, externalId: string) => ({ ownershipGrant: { subject: { externalId: who }, resource: { type: 'doc', externalId }, role: 'owner' } });

describeEachBackend('importing NDJSON into a real control plane on %s', (backend) => {
  let cp: Awaited<ReturnType<typeof startTestControlPlane>>;
  const ids: Record<string, string> = {};
  const keys: Record<string, string> = {};
  const call = async (key: string, method: string, path: string, body?: unknown) => {
    const r = await fetch(cp.url + path, { method, headers: { 'content-type': 'application/json', 'x-api-key': key }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await r.text();
    return { status: r.status, body: text ? JSON.parse(text) : {}, revision: r.headers.get('x-revision') };
  };
  const platform = async (method: string, path: string, body?: unknown) => {
    const r = await call(TEST_BOOTSTRAP_KEY, method, path, body);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body;
  };
  const options = (importId: string, source: string, more: Partial<Parameters<typeof importNdjson>[0]> = {}) =>
    ({ baseUrl: cp.url, apiKey: TEST_BOOTSTRAP_KEY, tenantId: ids.tenant, importId, source, ...more });

  beforeAll(async () => {
    cp = await startTestControlPlane(backend);
    const tenant = await platform('POST', '/tenants', { name: 'import' });
    ids.tenant = tenant.id;
    ids.root = tenant.scopeId;
    ids.other = (await platform('POST', '/tenants', { name: 'other' })).id;
    await platform('POST', '/resource-types', { name: 'Doc', key: 'doc', scopeId: ids.root });
    const role = await platform('POST', '/roles', { scopeId: ids.root, key: 'owner', name: 'Owner' });
    const perm = await platform('POST', '/permissions', { scopeId: ids.root, action: 'read', resourceType: 'doc', resourcePattern: '*' });
    await platform('POST', '/role-permissions', { roleId: role.id, permissionId: perm.id });
    for (const [name, body] of [['user', { kind: 'user', tenantId: ids.tenant }], ['service', { kind: 'service', tenantId: ids.tenant }], ['otherUser', { kind: 'user', tenantId: ids.other }]] as const) {
      keys[name] = (await platform('POST', '/api-keys', { name, ...body })).secretKey;
    }
  });
  afterAll(() => cp?.close());

  it('imports a file in batches: progress, the entity APIs, a decision and a Watch stream all see it', async () => {
    const lines = [{ subject: { type: 'user', externalId: 'ann' } }, ...Array.from({ length: 25 }, (_, i) => res(`rt-${i}`, 'doc', { displayName: `Doc ${i}` })), grant('ann', 'rt-7')];
    const path = file('round-trip.ndjson', lines);
    const model = new ModelClient();
    const ac = new AbortController();
    const watching = (async () => {
      const watch = createClient(SnapshotService, createGrpcTransport({ baseUrl: cp.url }));
      for await (const m of watch.watch({ tenantId: ids.tenant }, { signal: ac.signal, headers: { 'x-api-key': TEST_BOOTSTRAP_KEY } })) {
        model.apply(m);
        if (model.held !== undefined && [...model.rows.keys()].some((k) => k.startsWith('ownership_grant/'))) break;
      }
    })().catch((e: unknown) => (ac.signal.aborted ? undefined : Promise.reject(e)));
    const seen: ImportProgress[] = [];
    const result = await importNdjson(options('round-trip', path, { batchSize: 10, onProgress: (p) => seen.push(p) }));
    expect(result).toMatchObject({ entities: 27, batches: 3, lastSequence: 3, nextLine: 28, counts: { subjects: 1, resources: 25, ownershipGrants: 1 } });
    expect(seen.map((p) => p.entities)).toEqual([10, 20, 27]);
    expect(seen.at(-1)).toMatchObject({ bytes: seen.at(-1)!.totalBytes, etaMs: 0 });
    expect(formatProgress(seen[0])).toMatch(/^10 entities \d+\.\d%, [\d,]+\/s, ETA \d+s, next line 11$/);

    const listed = await call(TEST_BOOTSTRAP_KEY, 'GET', `/resources?scopeId=${ids.root}&limit=100`);
    expect(listed.body.map((r: { externalResourceId: string }) => r.externalResourceId).sort()).toEqual(lines.slice(1, 26).map((l) => (l as ReturnType<typeof res>).resource.externalId).sort());
    const subject = (await call(TEST_BOOTSTRAP_KEY, 'GET', `/subjects?tenantId=${ids.tenant}&externalId=ann`)).body[0];
    const decision = await call(TEST_BOOTSTRAP_KEY, 'POST', '/evaluate', {
      actor: { subjectId: subject.id }, scopeId: ids.root, action: 'read', resource: { resourceType: 'doc', externalResourceId: 'rt-7' },
      consistency: { minRevision: result.revision },
    });
    expect(decision.body).toMatchObject({ allowed: true, reason: 'ownership' });
    const other = await call(TEST_BOOTSTRAP_KEY, 'POST', '/evaluate', { actor: { subjectId: subject.id }, scopeId: ids.root, action: 'read', resource: { resourceType: 'doc', externalResourceId: 'rt-8' } });
    expect(other.body).toMatchObject({ allowed: false });

    await Promise.race([watching, new Promise((_, reject) => setTimeout(() => reject(new Error('the Watch stream did not see the import')), 10_000))]);
    ac.abort();
    const watched = [...model.rows.keys()];
    expect(watched.filter((k) => k.startsWith('resource/')).length).toBe(25);
    expect(watched.filter((k) => k.startsWith('subject/') && model.rows.get(k)!.includes('"ann"'))).toHaveLength(1);
  });

  it('fails the batch of a bad line alone, names the line, and resumes after the fix without writing twice', async () => {
    const good = Array.from({ length: 9 }, (_, i) => res(`fix-${i}`));
    const bad = [...good.slice(0, 4), res('fix-4', 'nope'), ...good.slice(5)];
    let err: unknown;
    try {
      await importNdjson(options('fix', file('bad.ndjson', bad), { batchSize: 3 }));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ImportError);
    expect(err).toMatchObject({ code: 'failed_precondition', line: 5, field: 'entities[1].resource.type', reason: 'ERROR_REASON_MISSING_REFERENCE', resumeLine: 4 });
    expect((err as Error).message).toContain('line 5: entities[1].resource.type: resource type "nope" does not exist');
    expect(await importStatus(options('fix', ''))).toMatchObject({ lastSequence: 1, nextLine: 4 });

    const seen: number[] = [];
    const result = await importNdjson(options('fix', file('fixed.ndjson', good), { batchSize: 3, onProgress: (p) => seen.push(p.nextLine) }));
    expect(seen).toEqual([7, 10]);
    expect(result).toMatchObject({ entities: 6, lastSequence: 3, nextLine: 10, counts: { resources: 6 } });
    const listed = await call(TEST_BOOTSTRAP_KEY, 'GET', `/resources?scopeId=${ids.root}&limit=1000`);
    expect(listed.body.filter((r: { externalResourceId: string }) => r.externalResourceId.startsWith('fix-')).length).toBe(9);
    // Everything is committed: running it again sends nothing and writes nothing.
    const before = await storeDigest(cp.db);
    expect(await importNdjson(options('fix', file('fixed.ndjson', good), { batchSize: 3 }))).toMatchObject({ entities: 0, batches: 0, nextLine: 10 });
    expect(await storeDigest(cp.db)).toEqual(before);
  });

  it('resumes an import whose answers were lost: batches the server committed are not written again', async () => {
    const path = file('lost.ndjson', Array.from({ length: 12 }, (_, i) => res(`lost-${i}`)));
    let calls = 0;
    // The second batch reaches the server, its answer never reaches the client.
    const flaky: typeof fetch = async (input, init) => {
      const r = await fetch(input, init);
      if (init?.method === 'POST' && ++calls === 2) throw new TypeError('socket hang up');
      return r;
    };
    await expect(importNdjson(options('lost', path, { batchSize: 4, inFlight: 1, retries: 0, fetch: flaky }))).rejects.toMatchObject({ code: 'network', resumeLine: 5 });
    expect(await importStatus(options('lost', ''))).toMatchObject({ lastSequence: 2, nextLine: 9 });
    const result = await importNdjson(options('lost', path, { batchSize: 4 }));
    expect(result).toMatchObject({ entities: 4, lastSequence: 3, nextLine: 13 });
    const listed = await call(TEST_BOOTSTRAP_KEY, 'GET', `/resources?scopeId=${ids.root}&limit=1000`);
    expect(listed.body.filter((r: { externalResourceId: string }) => r.externalResourceId.startsWith('lost-')).length).toBe(12);

    // A retry of a batch whose answer was lost is answered as committed, and writes nothing.
    calls = 0;
    const again = file('again.ndjson', Array.from({ length: 2 }, (_, i) => res(`again-${i}`)));
    const once: typeof fetch = async (input, init) => {
      const r = await fetch(input, init);
      if (init?.method === 'POST' && ++calls === 1) return new Response('{"code":"unavailable","message":"lost"}', { status: 503 });
      return r;
    };
    expect(await importNdjson(options('again', again, { fetch: once }))).toMatchObject({ entities: 0, batches: 1, lastSequence: 1 });
    const listedAgain = await call(TEST_BOOTSTRAP_KEY, 'GET', `/resources?scopeId=${ids.root}&limit=1000`);
    expect(listedAgain.body.filter((r: { externalResourceId: string }) => r.externalResourceId.startsWith('again-')).length).toBe(2);
  });

  it('sends a batch again after the one it follows when the server took it first', async () => {
    const path = file('overtaken.ndjson', Array.from({ length: 6 }, (_, i) => res(`ot-${i}`)));
    const answers: number[] = [];
    // The first batch reaches the server late: the second arrives first and is refused (aborted).
    const slow: typeof fetch = async (input, init) => {
      const first = typeof init?.body === 'string' && init.body.includes('"sequence":1,');
      if (first) await new Promise((resolve) => setTimeout(resolve, 300));
      const r = await fetch(input, init);
      if (init?.method === 'POST') answers.push(r.status);
      return r;
    };
    const result = await importNdjson(options('overtaken', path, { batchSize: 3, fetch: slow }));
    expect(answers).toEqual([409, 200, 200]);
    expect(result).toMatchObject({ entities: 6, lastSequence: 2, nextLine: 7 });
  });

  it('refuses a line that is not one JSON object before sending it, after committing the lines before it', async () => {
    const path = file('malformed.ndjson', [res('m-0'), res('m-1'), '{"resource": ', res('m-3')]);
    await expect(importNdjson(options('malformed', path, { batchSize: 1 }))).rejects.toMatchObject({ code: 'malformed_line', line: 3, resumeLine: 3 });
    const arrayLine = file('array.ndjson', ['[1, 2]']);
    await expect(importNdjson(options('array', arrayLine))).rejects.toMatchObject({ code: 'malformed_line', line: 1 });
  });

  it('admits platform keys and user keys of the tenant only', async () => {
    const path = file('tiers.ndjson', [res('tier-0')]);
    await expect(importNdjson(options('tiers', path, { apiKey: keys.service }))).rejects.toMatchObject({ code: 'permission_denied' });
    await expect(importNdjson(options('tiers', path, { apiKey: keys.otherUser }))).rejects.toMatchObject({ code: 'permission_denied' });
    await expect(importNdjson(options('tiers', path, { apiKey: 'azk_unknown_0123456789abcdefghijklmnopqrstuv' }))).rejects.toMatchObject({ code: 'unauthenticated' });
    expect(await importNdjson(options('tiers', path, { apiKey: keys.user }))).toMatchObject({ entities: 1 });
  });

  it('serves the same RPC over Connect JSON on HTTP/1.1', async () => {
    const client = createClient(ImportService, createConnectTransport({ baseUrl: cp.url, httpVersion: '1.1', useBinaryFormat: false }));
    const headers = { 'x-api-key': TEST_BOOTSTRAP_KEY };
    const out = await client.importBatch({ tenantId: ids.tenant, importId: 'connect', sequence: 1, firstLine: 1, entities: [{ entity: { case: 'resource', value: { type: 'doc', externalId: 'cj-1' } } }] }, { headers });
    expect(out).toMatchObject({ applied: true, nextLine: 2, counts: { resources: 1 } });
    expect((await client.getImport({ tenantId: ids.tenant, importId: 'connect' }, { headers })).lastSequence).toBe(1);
  });

  it('holds the limits: entities per batch, the body, string lengths', async () => {
    const many = { importId: 'limits', sequence: 1, firstLine: 1, entities: Array.from({ length: 5001 }, (_, i) => res(`l-${i}`)) };
    const over = await call(TEST_BOOTSTRAP_KEY, 'POST', `/tenants/${ids.tenant}/import`, many);
    expect(over.status).toBe(400);
    expect(over.body).toMatchObject({ code: 'invalid_argument', details: [{ reason: 'ERROR_REASON_LIMIT', field: 'entities' }] });
    const huge = { importId: 'limits', sequence: 1, firstLine: 1, entities: Array.from({ length: 4000 }, (_, i) => res(`l-${i}`, 'doc', { displayName: 'x'.repeat(250), attributes: { pad: 'y'.repeat(900) } })) };
    expect((await call(TEST_BOOTSTRAP_KEY, 'POST', `/tenants/${ids.tenant}/import`, huge)).body).toMatchObject({ code: 'resource_exhausted' });
    const long = await call(TEST_BOOTSTRAP_KEY, 'POST', `/tenants/${ids.tenant}/import`, { importId: 'limits', sequence: 1, firstLine: 40, entities: [res('ok'), res('x'.repeat(257))] });
    expect(long.body).toMatchObject({ code: 'invalid_argument', details: [{ reason: 'ERROR_REASON_LIMIT', field: 'entities[1].resource.externalId' }] });
    expect(long.body.message).toMatch(/^line 41: /);
    expect(await importStatus(options('limits', ''))).toBeUndefined();
  });
});
