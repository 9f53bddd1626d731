/**
 * The Python example (examples/python/authz_client.py) against a real control plane: Debian's
 * grpcio and protobuf, messages from a `buf build` descriptor set. CI installs the two packages
 * and sets AUTHZ_TEST_PYTHON_REQUIRED=1, so a machine without them fails there; elsewhere the
 * test is skipped with the reason.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEachBackend, startTestControlPlane, TEST_BOOTSTRAP_KEY } from '../harness.js';

const ROOT = resolve(import.meta.dirname, '../..');
const SCRIPT = join(ROOT, 'examples/python/authz_client.py');
/** Debian's interpreter: the packages install there, not into a python3 earlier on PATH. */
const PYTHON = process.env.AUTHZ_TEST_PYTHON ?? '/usr/bin/python3';
const REQUIRED = process.env.AUTHZ_TEST_PYTHON_REQUIRED === '1';

const probe = spawnSync(PYTHON, ['-c', 'import grpc, google.protobuf'], { encoding: 'utf8' });
const missing = probe.status === 0 ? undefined : `${PYTHON} cannot import grpc and google.protobuf (${(probe.error?.message ?? probe.stderr).trim().split('\n').pop()}); install python3-grpcio and python3-protobuf`;
if (missing && !REQUIRED) console.warn(`skipping the Python client test: ${missing}`);

const run = promisify(execFile);

describe('the Python client example', () => {
  if (missing && REQUIRED) {
    it('needs python3-grpcio and python3-protobuf (AUTHZ_TEST_PYTHON_REQUIRED=1)', () => {
      expect.fail(missing);
    });
  }

  describe.runIf(!missing)('against a control plane', () => describeEachBackend('on %s', (backend) => {
    let cp: Awaited<ReturnType<typeof startTestControlPlane>>;
    let dir: string;
    let descriptors: string;

    beforeAll(async () => {
      cp = await startTestControlPlane(backend);
      dir = mkdtempSync(join(tmpdir(), 'authz-python-'));
      descriptors = join(dir, 'authz.binpb');
      // As the README says: npx buf build -o <file> (the launcher is a node script).
      execFileSync(process.execPath, [join(ROOT, 'node_modules/@bufbuild/buf/bin/buf'), 'build', '-o', descriptors], { cwd: ROOT });
    });
    afterAll(async () => {
      await cp?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    const client = (apiKey: string) =>
      run(PYTHON, [SCRIPT, '--target', `127.0.0.1:${cp.server.port}`, '--api-key', apiKey, '--descriptors', descriptors], { timeout: 60_000 });

    it('runs the README flow over gRPC: x-revision from trailers, the decision, an ErrorInfo', async () => {
      const { stdout } = await client(TEST_BOOTSTRAP_KEY);
      const lines = stdout.trim().split('\n');
      const writes = lines.filter((l) => !l.startsWith('evaluate:') && !l.startsWith('error:')).map((l) => /^(\w+): (\S+) x-revision=(\S+)$/.exec(l));
      expect(writes.map((m) => m?.[1])).toEqual([
        'tenant', 'scopeType', 'scope', 'subject', 'role', 'permission', 'rolePermission', 'membership', 'roleAssignment', 'resourceType', 'resource',
      ]);
      for (const m of writes) expect(m![2]).toMatch(new RegExp(`^${m![1].replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}_`));
      // Every tenant write's revision, read from the gRPC trailers: 1, 2, … in order; scope types touch no tenant.
      const revisions = writes.map((m) => m![3]);
      expect(revisions).toEqual(['1', '-', '2', '3', '4', '5', '6', '7', '8', '9', '10']);
      expect(lines).toContain('evaluate: allowed=true reason=role revision=10');
      expect(lines.find((l) => l.startsWith('error:'))).toMatch(/^error: INVALID_ARGUMENT reason=ERROR_REASON_INVALID_FIELD field=type message=type: /);
    });

    it('reports a refused key with its code and ErrorInfo reason, and exits 1', async () => {
      const failure = await client('azk_not_a_key_of_this_server_000000000000000').then(
        () => undefined,
        (err: { code?: number; stderr?: string }) => err,
      );
      expect(failure?.code).toBe(1);
      expect(failure?.stderr).toMatch(/^failed: UNAUTHENTICATED: .* \(reason ERROR_REASON_UNAUTHENTICATED, field None\)/);
    });
  }));
});
