/**
 * Where a CPU profile's time went: self time by function (the top `--top`, default 25) and by the
 * file it is in, from `.cpuprofile` files (`--cpu-prof`, or the inspector's Profiler). Several
 * files are summed (a process's main thread and its workers). The last table charges the time
 * of Node's own code (buffers, streams, natives) to the nearest caller outside it: a `utf8Slice`
 * called by the PostgreSQL parser is the parser's.
 *
 * Usage: tsx bench/profile-summary.ts [--top 25] FILE.cpuprofile [FILE …]
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const argv = process.argv.slice(2);
let top = 25;
const files: string[] = [];
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--top') top = Number(argv[++i]);
  else files.push(argv[i]);
}
const byFunction = new Map<string, number>();
const byFile = new Map<string, number>();
const byCaller = new Map<string, number>();
let total = 0;
const short = (url: string) => {
  const path = url.replace(/^file:\/\//, '');
  const lib = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(path);
  return lib ? `${lib[1]}/${lib[2].replace(/^(dist|lib)\//, '')}` : path.replace(/^.*\/(services|sidecar|bench|gen|cmd)\//, '$1/');
};
for (const file of files) {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const nodes = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const caller = (id: number): string => {
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const url = nodes.get(at)!.callFrame.url;
      if (url && !url.startsWith('node:')) return short(url);
    }
    return nodes.get(id)!.callFrame.functionName || '(anonymous)';
  };
  // Self time of a sample: the time to the next sample (the profile's own deltas).
  for (let i = 0; i < p.samples.length; i++) {
    const us = p.timeDeltas[i + 1] ?? 0;
    const n = nodes.get(p.samples[i])!;
    const fn = n.callFrame.functionName || '(anonymous)';
    const where = n.callFrame.url ? short(n.callFrame.url) : fn.startsWith('(') ? fn : '(native)';
    const key = `${fn} ${n.callFrame.url ? `${where}:${n.callFrame.lineNumber + 1}` : ''}`.trim();
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    byFile.set(where, (byFile.get(where) ?? 0) + us);
    const c = caller(n.id);
    byCaller.set(c, (byCaller.get(c) ?? 0) + us);
    total += us;
  }
}
const print = (title: string, m: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${(us / 1000).toFixed(0).padStart(7)} ms ${((100 * us) / total).toFixed(1).padStart(5)}%  ${k}`);
};
console.log(`${files.length} profile(s), ${(total / 1000).toFixed(0)} ms sampled`);
print('self time by function', byFunction);
print('self time by file', byFile);
print("self time by file, Node's own code charged to its caller", byCaller);
