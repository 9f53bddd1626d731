/**
 * Listings as an application calls them: a control plane on PostgreSQL holding `--resources`
 * resources (1,000,000 by default) and `--grants` ownership grants over `--subjects` subjects
 * (100,000 / 100: each subject owns 1,000 resources), over REST, one call at a time, side by side
 * in one run:
 * - one `POST /evaluate` of a resource the subject owns (median of 400 calls);
 * - the first page of 100 of `POST /lookup/resources` (median over the subjects, each listing
 *   asked once, so each builds its candidates) and its ratio to one Evaluate (target ≤ 10×);
 * - a subject's whole set streamed in pages of 1,000 (resources/s; target ≥ 100,000/s);
 * - the same for `POST /lookup/subjects` of a resource with `--readers` readers through
 *   memberships, when the control plane serves it.
 *
 * Usage: DATABASE_URL=postgres://… tsx bench/lookup-http.ts [--resources 1000000 --grants 100000 --subjects 100]
 */
import { startTestControlPlane, TEST_BOOTSTRAP_KEY } from '../test/harness.js';
import { restClient } from '../test/rest-client.js';
import { insertBigTenant } from './big-tenant.js';
import { runAsDeployed } from './as-deployed.js';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i].replace(/^--/, ''), process.argv[i + 1]);
const RESOURCES = Number(args.get('resources') ?? 1_000_000);
const GRANTS = Number(args.get('grants') ?? 100_000);
const SUBJECTS = Number(args.get('subjects') ?? 100);
if (!process.env.DATABASE_URL) throw new Error('set DATABASE_URL');

const { call, ok } = restClient(TEST_BOOTSTRAP_KEY);
const uuid = (n: number) => `0192f3a4-0000-7000-8000-${String(n).padStart(12, '0')}`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

runAsDeployed();
const cp = await startTestControlPlane('postgres');
try {
  const { scopeId } = await insertBigTenant(cp, { resources: RESOURCES, grants: GRANTS, subjects: SUBJECTS });
  // Grant k: subject k % S + 1 owns resource k % R + 1; the owner role may `edit` every doc.
  const subject = (s: number) => `subject_${uuid(s)}`;
  // Subject s holds grants k = s - 1 + S·j; j = 1 is on resource (s - 1 + S) % R + 1.
  const owned = (s: number) => `resource_${uuid(((s - 1 + SUBJECTS) % RESOURCES) + 1)}`;
  let t = performance.now();
  await ok(call(cp.url, 'POST', '/evaluate', { actor: { subjectId: subject(1) }, scopeId, action: 'edit', resource: { resourceId: owned(1) } }));
  console.log(`index loaded by the first call in ${(performance.now() - t).toFixed(0)} ms`);

  const evaluateMs: number[] = [];
  let allowed = 0;
  for (let i = 0; i < 400; i++) {
    const s = (i % SUBJECTS) + 1;
    t = performance.now();
    const r = await ok(call(cp.url, 'POST', '/evaluate', { actor: { subjectId: subject(s) }, scopeId, action: 'edit', resource: { resourceId: owned(s) } }));
    evaluateMs.push(performance.now() - t);
    if (r.body.allowed) allowed++;
  }
  if (allowed !== 400) throw new Error(`the owned resources were not all allowed (${allowed} of 400)`);

  const firstPageMs: number[] = [];
  for (let s = 1; s <= SUBJECTS; s++) {
    t = performance.now();
    const page = await ok(call(cp.url, 'POST', '/lookup/resources', { actor: { subjectId: subject(s) }, scopeId, action: 'edit', resourceType: 'doc', pageSize: 100 }));
    firstPageMs.push(performance.now() - t);
    if (page.body.resources.length !== 100) throw new Error(`a first page held ${page.body.resources.length} resources`);
  }

  const streamed: number[] = [];
  for (const s of [SUBJECTS, SUBJECTS - 1, SUBJECTS - 2]) {
    let cursor = '';
    let n = 0;
    t = performance.now();
    do {
      const page = await ok(call(cp.url, 'POST', '/lookup/resources', { actor: { subjectId: subject(s) }, scopeId, action: 'edit', resourceType: 'doc', pageSize: 1000, cursor }));
      n += page.body.resources.length;
      cursor = page.headers.get('x-next-cursor') ?? '';
    } while (cursor);
    streamed.push(n / ((performance.now() - t) / 1000));
  }
  const e = median(evaluateMs);
  const p = median(firstPageMs);
  console.log(`one Evaluate over REST: median ${e.toFixed(3)} ms`);
  console.log(`LookupResources, first page of 100 (a listing's first, candidates built): median ${p.toFixed(3)} ms = ${(p / e).toFixed(1)}× one Evaluate`);
  console.log(`LookupResources, a whole set of ${GRANTS / SUBJECTS} in pages of 1,000: ${streamed.map((x) => Math.round(x).toLocaleString('en-US')).join(' / ')} resources/s`);
} finally {
  await cp.close();
}
