/**
 * Where a CPU profile's time went, from `.cpuprofile` files (`--cpu-prof`; several files, such as
 * a process's main thread and its workers, are summed):
 *
 * - by category of the decision path (the rules below): every sample goes to the innermost frame
 *   of its stack that a rule names (a native frame without a file, such as JSON.parse or a Buffer
 *   copy, counts for the code that called it; Node's HTTP, stream and socket internals are the
 *   transport), so the table is the same for anyone who runs it on the same profile;
 * - self time by function, by file, and by file with Node's own code (buffers, streams, natives)
 *   charged to the nearest caller outside it: a `utf8Slice` called by the PostgreSQL parser is
 *   the parser's (what a snapshot's profile wants).
 *
 * `--window S` keeps the S seconds with the most busy samples (the saturated load, not the
 * snapshot load before it nor the lighter loads after it); `--requests N` (the requests served
 * in that window, e.g. wrk's count) turns samples into µs per request.
 *
 * Usage: npx tsx bench/profile-summary.ts FILE.cpuprofile [FILE …] [--window 10] [--requests 250000] [--top 20]
 */
import { readFileSync } from 'node:fs';

interface Frame { functionName: string; url: string; lineNumber: number }
interface ProfileNode { id: number; callFrame: Frame; children?: number[] }
interface Profile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number }

/** Categories, tried on each frame from the innermost out; the first rule naming a frame wins. */
export const RULES: [string, (fn: string, url: string) => boolean][] = [
  ['garbage collection', (fn) => fn === '(garbage collector)'],
  ['idle', (fn) => fn === '(idle)'],
  ['V8, not attributed', (fn) => fn === '(program)'],
  ['id resolution by external id', (fn, url) => /services\/engine\//.test(url) && /ExternalId|pickCandidate|byExternalId/.test(fn)],
  ['collection matching', (fn, url) => /services\/engine\/(match|match-keys)\.|tenant-index\/collection-files\./.test(url) || /^(collectionsToTry|collectionCandidates)$/.test(fn)],
  ['condition evaluation', (fn, url) => /services\/engine\/(jsonlogic|budget)\./.test(url) || fn === 'conditionContext'],
  ['id resolution (subject, resource by id)', (fn, url) => /services\/engine\/(target|id-table|subject-ref)\./.test(url) || (/services\/engine\/tenant-index\//.test(url) && /^(subjectNode|resourceNode|resourceSlot|slotOf|get|lookup|idOf)$/.test(fn))],
  ['decision (policies, roles, ownership)', (_fn, url) => /services\/engine\//.test(url)],
  ['answer encoding', (fn, url) => /services\/decision\/response-codec\./.test(url) || (/services\/decision\/lean\./.test(url) && /^(reply|envelope)$/.test(fn))],
  ['body parsing and request checks', (fn, url) => /services\/transport\/(json-scan|guard|gateway\/json|binary-scan)\./.test(url) || (/services\/decision\//.test(url) && /^(parseEvaluate|resourceRefOf|subjectRef|freshnessOf|decode)$/.test(fn))],
  ['decision service (routing, tenant, metrics, log)', (_fn, url) => /services\/decision\/|\/sidecar\/|services\/transport\/observability/.test(url)],
  ['HTTP transport', (fn, url) => url.startsWith('node:') || /services\/transport\//.test(url) || /node_modules\//.test(url) || /^(writev|writeUtf8String|writeBuffer|writeLatin1String)$/.test(fn)],
];

/**
 * Frames that count for their caller: jsonlogic.ts's property readers (they serve match
 * definitions too) and protobuf-es (decoding a gRPC request is body parsing, not transport).
 */
const passThrough = (f: Frame) =>
  (/services\/engine\/jsonlogic\./.test(f.url) && /^(ownProp|getPath|isArrayIndex)$/.test(f.functionName)) || /node_modules\/@bufbuild\/protobuf\//.test(f.url);

export function categoryOf(stack: Frame[]): string {
  for (const f of stack) {
    if (passThrough(f)) continue;
    for (const [name, rule] of RULES) if (rule(f.functionName, f.url)) return name;
  }
  return 'other';
}

/** A file's url shortened to its package (for libraries) or its path from the source root. */
function shortUrl(url: string): string {
  const path = url.replace(/^file:\/\//, '');
  const lib = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(path);
  return lib ? `${lib[1]}/${lib[2].replace(/^(dist|lib)\//, '')}` : path.replace(/^.*\/(services|sidecar|bench|gen|cmd)\//, '$1/');
}

/** Several profiles of one run (a main thread and its workers) as one: samples of each, in turn. */
function merged(profiles: Profile[]): Profile {
  if (profiles.length === 1) return profiles[0];
  const out: Profile = { nodes: [], samples: [], timeDeltas: [], startTime: 0, endTime: 0 };
  let offset = 0;
  for (const p of profiles) {
    const shift = (id: number) => id + offset;
    for (const n of p.nodes) out.nodes.push({ ...n, id: shift(n.id), children: n.children?.map(shift) });
    for (const s of p.samples) out.samples.push(shift(s));
    for (const d of p.timeDeltas) out.timeDeltas.push(d);
    offset += p.nodes.reduce((max, n) => Math.max(max, n.id), 0) + 1;
  }
  return out;
}

export function summarise(profile: Profile, windowS?: number) {
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const categoryCache = new Map<number, string>();
  const category = (id: number) => {
    let c = categoryCache.get(id);
    if (c === undefined) {
      const stack: Frame[] = [];
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) stack.push(byId.get(at)!.callFrame);
      categoryCache.set(id, (c = categoryOf(stack)));
    }
    return c;
  };
  // Sample times (µs from the start) and the window with the most busy samples.
  const times: number[] = [];
  let t = 0;
  for (const d of profile.timeDeltas) times.push((t += d));
  let from = 0;
  let to = profile.samples.length;
  if (windowS !== undefined) {
    const busy = profile.samples.map((id) => (category(id) === 'idle' ? 0 : 1));
    let best = -1;
    let lo = 0;
    let count = 0;
    for (let hi = 0; hi < busy.length; hi++) {
      count += busy[hi];
      while (times[hi] - times[lo] > windowS * 1e6) count -= busy[lo++];
      if (count > best) [best, from, to] = [count, lo, hi + 1];
    }
  }
  const spanUs = times[to - 1] - times[from];
  const us = new Map<string, number>();
  const fileUs = new Map<string, number>();
  const callerUs = new Map<string, number>();
  // The nearest frame outside Node's own code (node: urls and natives without a file).
  const callerOf = (id: number): string => {
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const url = byId.get(at)!.callFrame.url;
      if (url && !url.startsWith('node:')) return shortUrl(url);
    }
    return byId.get(id)!.callFrame.functionName || '(anonymous)';
  };
  const fnUs = new Map<string, { us: number; category: string }>();
  for (let i = from; i < to; i++) {
    // A sample stands for the time until the next one.
    const dt = i + 1 < times.length ? times[i + 1] - times[i] : 0;
    const id = profile.samples[i];
    const c = category(id);
    us.set(c, (us.get(c) ?? 0) + dt);
    const f = byId.get(id)!.callFrame;
    const key = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*?\/(dist|node_modules)\//, '$1/')}:${f.lineNumber + 1}`;
    const e = fnUs.get(key) ?? { us: 0, category: c };
    e.us += dt;
    fnUs.set(key, e);
    if (c === 'idle') continue;
    const file = f.url ? shortUrl(f.url) : (f.functionName.startsWith('(') ? f.functionName : '(native)');
    fileUs.set(file, (fileUs.get(file) ?? 0) + dt);
    const caller = callerOf(id);
    callerUs.set(caller, (callerUs.get(caller) ?? 0) + dt);
  }
  const sorted = <V>(m: Map<string, V>, by: (v: V) => number) => [...m].sort((a, b) => by(b[1]) - by(a[1]));
  return {
    spanUs,
    samples: to - from,
    byCategory: sorted(us, (v) => v),
    byFunction: sorted(fnUs, (v) => v.us),
    byFile: sorted(fileUs, (v) => v),
    byCaller: sorted(callerUs, (v) => v),
  };
}

function main() {
  const argv = process.argv.slice(2);
  const opt = (name: string) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? Number(argv[i + 1]) : undefined;
  };
  const files = argv.filter((a) => a.endsWith('.cpuprofile'));
  if (files.length === 0) throw new Error('usage: profile-summary.ts FILE.cpuprofile [FILE …] [--window S] [--requests N] [--top N]');
  const requests = opt('requests');
  const top = opt('top') ?? 20;
  const s = summarise(merged(files.map((f) => JSON.parse(readFileSync(f, 'utf8')) as Profile)), opt('window'));
  const busyUs = s.byCategory.filter(([c]) => c !== 'idle').reduce((a, [, v]) => a + v, 0);
  console.log(`window ${(s.spanUs / 1e6).toFixed(1)} s, ${s.samples} samples, busy ${(busyUs / 1e6).toFixed(2)} s (${((100 * busyUs) / s.spanUs).toFixed(0)}% of one core)`);
  console.log(`| category | share of busy time |${requests ? ' µs per request |' : ''}`);
  console.log(`|---|---|${requests ? '---|' : ''}`);
  for (const [c, v] of s.byCategory) {
    if (c === 'idle') continue;
    console.log(`| ${c} | ${((100 * v) / busyUs).toFixed(1)}% |${requests ? ` ${(v / requests).toFixed(2)} |` : ''}`);
  }
  if (requests) console.log(`| total | 100% | ${(busyUs / requests).toFixed(2)} |`);
  console.log(`\ntop functions by self time (category):`);
  for (const [k, v] of s.byFunction.slice(0, top)) {
    if (v.category === 'idle') continue;
    console.log(`  ${((100 * v.us) / busyUs).toFixed(1).padStart(5)}%  ${k}  (${v.category})`);
  }
  const table = (title: string, rows: [string, number][]) => {
    console.log(`\n${title}:`);
    for (const [k, us] of rows.slice(0, top)) console.log(`${(us / 1000).toFixed(0).padStart(7)} ms ${((100 * us) / busyUs).toFixed(1).padStart(5)}%  ${k}`);
  };
  table('self time by file', s.byFile);
  table("self time by file, Node's own code charged to its caller", s.byCaller);
}

if (process.argv[1]?.endsWith('profile-summary.ts')) main();
