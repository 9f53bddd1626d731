/**
 * LookupResources on a tenant of 1,000,000 resources, in process (the engine's index built with
 * its builder, no database), side by side in one run:
 *
 * - `mixed`: a subject who may read 1,000 docs: 400 through ownership grants, 400 through role
 *   permissions naming their ids, 200 as the children of two folders a role permission names
 *   (inherited). Listed from its candidates, and walked (every doc) for comparison.
 * - `grants-100k`: a subject holding 100,000 ownership grants (candidates of 100,000), which
 *   shows what rebuilding the candidates on every page costs when they are many.
 * - `everything`: a subject who may read every doc through a pattern `*`: no bound, so walked.
 *
 * For each: one evaluate (median of single timed decisions on resources the subject may read,
 * and on random docs), the first page of 100 (median of repeated first pages, each building its
 * candidates, and its ratio to one evaluate; target <= 10x), the whole set streamed in pages of
 * 1,000 (resources/s; target >= 100,000/s; the first page builds the candidates, the later ones
 * take them from the index's cache). Also the children map's memory (bytes per resource),
 * measured as the heap an equal copy of it takes.
 *
 *   npm run bench:lookup            (node --expose-gc; -- --quick: 100,000 resources)
 */
import { performance } from 'node:perf_hooks';
import { evaluate, type EvaluateOptions } from '../services/engine/evaluate.js';
import { lookupResources, type LookupOptions, type LookupResourcesQuery } from '../services/engine/lookup.js';
import { forgetCandidates } from '../services/engine/lookup-candidates.js';
import { TenantIndex } from '../services/engine/tenant-index/mod.js';
import { mulberry32 } from '../test/seeded-random.js';
import { loadAverageNow, writeResults } from './results-file.js';

const quick = process.argv.includes('--quick');
const RESOURCES = quick ? 100_000 : 1_000_000;
const FOLDERS = RESOURCES / 100;
const T0 = '2025-01-01T00:00:00.000Z';
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc (npm run bench:lookup)');
const options: EvaluateOptions = { now: new Date('2025-06-01T00:00:00Z'), gate: 'off' };
const loadAtStart = loadAverageNow();

const id = (i: number) => `resource_${i.toString(36).padStart(5, '0')}`;
const isFolder = (i: number) => i % 100 === 0;
/** The folder of doc i: a folder's docs are spread over the id space (7919 is prime to FOLDERS). */
const folderOf = (i: number) => ((i * 7919) % FOLDERS) * 100;

// --- the tenant --------------------------------------------------------------------------------
const r = mulberry32(28);
const buildStart = performance.now();
const b = TenantIndex.builder(RESOURCES);
b.add('scope', { id: 'scope_root', tenantId: 'tenant_l', parentId: null, typeId: 'tenant', name: 'root' });
b.add('scope', { id: 'scope_team', tenantId: 'tenant_l', parentId: 'scope_root', typeId: 'team', name: 'team' });
b.add('resource_type', { id: 'resource_type_doc', key: 'doc', scopeId: 'scope_root', name: 'Doc' });
b.add('resource_type', { id: 'resource_type_folder', key: 'folder', scopeId: 'scope_root', name: 'Folder' });
for (const s of ['subject_mixed', 'subject_grants', 'subject_all', 'subject_other']) b.add('subject', { id: s, type: 'user', externalId: s, metadata: {} });
for (let i = 0; i < RESOURCES; i++) {
  b.add('resource', { id: id(i), resourceTypeId: isFolder(i) ? 'resource_type_folder' : 'resource_type_doc', ownerScopeId: 'scope_team', externalResourceId: `ext-${i}`, createdAt: T0, createdBy: 'subject_other' });
}
// Every doc sits in a folder (an inheriting edge): the tenant's hierarchy, and the children map's load.
for (let i = 0; i < RESOURCES; i++) {
  if (!isFolder(i)) b.add('resource_edge', { id: `resource_edge_${i}`, parentResourceId: id(folderOf(i)), childResourceId: id(i), cascade: 'inherit' });
}
const role = (roleId: string, perms: [string, string][]) => {
  b.add('role', { id: roleId, scopeId: 'scope_root', key: roleId, name: roleId });
  perms.forEach(([type, pattern], k) => {
    const pid = `permission_${roleId}_${k}`;
    b.add('permission', { id: pid, scopeId: 'scope_root', action: 'read', resourceType: type, resourcePattern: pattern, key: `${type}:read:${pattern}` });
    b.add('role_permission', { id: `role_permission_${roleId}_${k}`, roleId, permissionId: pid });
  });
};
const member = (subjectId: string, roleId: string) => {
  b.add('membership', { id: `membership_${subjectId}`, subjectId, scopeId: 'scope_root' });
  b.add('role_assignment', { id: `role_assignment_${subjectId}`, membershipId: `membership_${subjectId}`, roleId });
};
role('role_owner', [['doc', '*']]);
// Docs for the mixed subject: two folders' children, then 402 named and 400 granted docs, all distinct.
const taken = new Set<number>();
const pickedFolders = [folderOf(101), folderOf(5_501)];
for (let i = 0; i < RESOURCES; i++) if (!isFolder(i) && pickedFolders.includes(folderOf(i))) taken.add(i);
const inherited = taken.size;
const drawDoc = () => {
  for (;;) {
    const i = Math.floor(r() * RESOURCES);
    if (!isFolder(i) && !taken.has(i) && !pickedFolders.includes(folderOf(i))) {
      taken.add(i);
      return i;
    }
  }
};
const named = Array.from({ length: 1000 - 400 - inherited }, drawDoc);
role('role_named', [...named.map((i): [string, string] => ['doc', id(i)]), ...pickedFolders.map((f): [string, string] => ['doc', id(f)])]);
member('subject_mixed', 'role_named');
for (let k = 0; k < 400; k++) b.add('ownership_grant', { id: `grant_mixed_${k}`, subjectId: 'subject_mixed', resourceId: id(drawDoc()), roleId: 'role_owner' });
const manyGrants = quick ? 10_000 : 100_000;
for (let k = 0; k < manyGrants; k++) {
  const i = Math.floor(r() * RESOURCES);
  b.add('ownership_grant', { id: `grant_many_${k}`, subjectId: 'subject_grants', resourceId: id(isFolder(i) ? i + 1 : i), roleId: 'role_owner' });
}
role('role_all', [['doc', '*']]);
member('subject_all', 'role_all');
const index = b.build(1);
const buildMs = performance.now() - buildStart;
const docs = index.resourcesInIdOrder('doc').length;
console.log(`index: ${RESOURCES.toLocaleString()} resources (${docs.toLocaleString()} docs in ${FOLDERS.toLocaleString()} folders), built in ${(buildMs / 1000).toFixed(1)} s`);

// --- memory of the children map ----------------------------------------------------------------
const heap = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};
// What the map costs: the heap with an equal copy of it held, less the heap without.
const children = index.families().resources.childrenByParent;
const withoutMap = heap();
const held: Map<string, unknown>[] = [new Map()];
for (const [k, v] of children) held[0].set(k, v instanceof Map ? new Map(v) : v);
const withMap = heap();
if (held[0].size !== children.size) throw new Error('copy of the children map differs');
held.length = 0;
const heapTotal = heap();
const childrenMapBytesPerResource = (withMap - withoutMap) / RESOURCES;
console.log(`heap ${(withoutMap / 2 ** 20).toFixed(0)} MiB, with a copy of the children map ${(withMap / 2 ** 20).toFixed(0)} MiB`);
console.log(`heap ${(heapTotal / 2 ** 20).toFixed(0)} MiB with the index; the children map ${((withMap - withoutMap) / 2 ** 20).toFixed(1)} MiB, ${childrenMapBytesPerResource.toFixed(1)} bytes a resource (plus one field in each edge's link)`);

// --- measurements ------------------------------------------------------------------------------
const median = (xs: number[]) => [...xs].sort((a, c) => a - c)[Math.floor(xs.length / 2)];
const us = (ms: number) => Math.round(ms * 1000 * 10) / 10;

/** Median µs of single timed evaluates of `subjectId` on `ids` (each timed alone). */
function oneEvaluate(subjectId: string, ids: readonly string[]): number {
  const times: number[] = [];
  const req = { actor: { subjectId }, scopeId: 'scope_team', action: 'read', resource: { resourceId: '' } };
  for (let k = 0; k < 20_000; k++) {
    req.resource.resourceId = ids[k % ids.length];
    const t = performance.now();
    evaluate(index, req, options);
    times.push(performance.now() - t);
  }
  return us(median(times));
}

function query(subjectId: string, pageSize: number): Omit<LookupResourcesQuery, 'after'> {
  return { actor: { subjectId }, scopeId: 'scope_team', action: 'read', resourceType: 'doc', pageSize };
}

/** Median µs of the first page (repeated), with what it returned and visited. */
function firstPage(subjectId: string, opts: LookupOptions, repeats: number) {
  const times: number[] = [];
  let page = lookupResources(index, query(subjectId, 100), opts);
  for (let k = 0; k < repeats; k++) {
    // A first page builds its listing's candidates: none kept from the one before.
    forgetCandidates(index);
    const t = performance.now();
    page = lookupResources(index, query(subjectId, 100), opts);
    times.push(performance.now() - t);
  }
  return { us: us(median(times)), returned: page.resources.length, visited: page.visited, via: page.via };
}

/** The whole listing in pages of 1,000 (its candidates built by its first page): resources/s, pages, ms. */
function stream(subjectId: string, opts: LookupOptions) {
  forgetCandidates(index);
  const t = performance.now();
  let after: string | undefined;
  let listed = 0;
  let pages = 0;
  for (;;) {
    const page = lookupResources(index, { ...query(subjectId, 1000), after }, opts);
    pages++;
    listed += page.resources.length;
    if (page.last === undefined) break;
    after = page.last;
  }
  const ms = performance.now() - t;
  return { listed, pages, ms: Math.round(ms), perSecond: Math.round(listed / (ms / 1000)) };
}

const sortStart = performance.now();
index.resourcesInIdOrder('doc');
const allIds = index.resourcesInIdOrder('doc').map((n) => index.resourceNodes.idOf(n));
const randomDocs = Array.from({ length: 4096 }, () => allIds[Math.floor(r() * allIds.length)]);
console.log(`id order of the docs (the walk's, kept by the index once sorted): ${Math.round(performance.now() - sortStart)} ms`);

interface CaseResult {
  allowed: number;
  evaluateUs: { allowed: number; randomDoc: number };
  firstPage: { via: string; us: number; returned: number; visited: number; ratioToEvaluate: number };
  whole: { via: string; listed: number; pages: number; ms: number; perSecond: number };
  walk: { firstPage: { us: number; returned: number; visited: number; ratioToEvaluate: number }; whole: { listed: number; pages: number; ms: number; perSecond: number } } | null;
}

function measure(name: string, subjectId: string, withWalk: boolean, repeats: number): CaseResult {
  const allowedIds: string[] = [];
  const all = stream(subjectId, options);
  // The allowed ids, for the evaluate figure (one listing of them, untimed).
  let after: string | undefined;
  for (;;) {
    const page = lookupResources(index, { ...query(subjectId, 1000), after }, options);
    allowedIds.push(...page.resources.map((x) => x.id));
    if (page.last === undefined) break;
    after = page.last;
  }
  const evalAllowed = oneEvaluate(subjectId, allowedIds);
  const evalRandom = oneEvaluate(subjectId, randomDocs);
  const first = firstPage(subjectId, options, repeats);
  const whole = [all, stream(subjectId, options), stream(subjectId, options)].sort((a, c) => c.perSecond - a.perSecond)[1];
  const result: CaseResult = {
    allowed: allowedIds.length,
    evaluateUs: { allowed: evalAllowed, randomDoc: evalRandom },
    firstPage: { via: first.via, us: first.us, returned: first.returned, visited: first.visited, ratioToEvaluate: Math.round((first.us / evalAllowed) * 10) / 10 },
    whole: { via: first.via, ...whole },
    walk: null,
  };
  if (withWalk) {
    const walkOpts = { ...options, walk: true };
    const wf = firstPage(subjectId, walkOpts, 5);
    const ww = stream(subjectId, walkOpts);
    result.walk = { firstPage: { us: wf.us, returned: wf.returned, visited: wf.visited, ratioToEvaluate: Math.round((wf.us / evalAllowed) * 10) / 10 }, whole: ww };
  }
  const w = result.walk;
  console.log(
    `\n${name}: ${result.allowed.toLocaleString()} allowed of ${docs.toLocaleString()} docs (${first.via})\n` +
      `  one evaluate: ${evalAllowed} µs on an allowed doc, ${evalRandom} µs on a random doc\n` +
      `  first page of 100: ${first.us} µs (${first.returned} returned, ${first.visited} visited) = ${result.firstPage.ratioToEvaluate}x one evaluate (target <= 10x)` +
      (w ? `; walk: ${w.firstPage.us} µs (${w.firstPage.returned} returned, ${w.firstPage.visited} visited) = ${w.firstPage.ratioToEvaluate}x` : '') +
      `\n  whole set in pages of 1,000: ${whole.listed.toLocaleString()} in ${whole.pages} pages, ${whole.ms} ms = ${whole.perSecond.toLocaleString()}/s (target >= 100,000/s)` +
      (w ? `; walk: ${w.whole.pages} pages, ${w.whole.ms} ms = ${w.whole.perSecond.toLocaleString()}/s` : ''),
  );
  return result;
}

const results = {
  resources: RESOURCES,
  docs,
  folders: FOLDERS,
  buildSeconds: Math.round(buildMs / 100) / 10,
  heapMiB: Math.round(heapTotal / 2 ** 20),
  childrenMapBytesPerResource: Math.round(childrenMapBytesPerResource * 10) / 10,
  mixed: measure(`mixed (400 grants, ${named.length} named ids, ${inherited} inherited)`, 'subject_mixed', true, 200),
  grants: measure(`grants-${manyGrants / 1000}k`, 'subject_grants', false, 10),
  everything: measure('everything (pattern *)', 'subject_all', false, 200),
};
if (!quick) {
  const file = writeResults('lookup-resources', { command: 'npm run bench:lookup', results, loadAtStart });
  console.log(`\nwrote ${file}`);
}
