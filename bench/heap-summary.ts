/**
 * What a heap holds, by kind of object: a V8 heap snapshot (the inspector's, taken in process)
 * summed by node type and constructor name, self sizes only. For seeing what a tenant index's
 * bytes per entity are made of (node objects, id strings, arrays, typed arrays) before changing
 * how it stores them. Used by snapshot-apply.ts `--heap-summary`.
 */
import { Session } from 'node:inspector/promises';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

/** Takes a heap snapshot of this process; returns bytes by `type name`, largest first. */
export async function heapByKind(): Promise<{ kind: string; count: number; bytes: number }[]> {
  const session = new Session();
  session.connect();
  const parts: string[] = [];
  session.on('HeapProfiler.addHeapSnapshotChunk', (m) => parts.push(m.params.chunk));
  await session.post('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
  session.disconnect();
  const snap = JSON.parse(parts.join('')) as Snapshot;
  const fields = snap.snapshot.meta.node_fields;
  const width = fields.length;
  const [TYPE, NAME, SIZE] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f));
  const types = snap.snapshot.meta.node_types[0];
  const by = new Map<string, { count: number; bytes: number }>();
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + TYPE]];
    // Strings by the shape of their contents (digits and hex runs folded: ids of one kind together); objects by constructor.
    const raw = snap.strings[snap.nodes[i + NAME]];
    const name = type === 'string' ? `"${raw.replace(/[0-9a-f]{4,}|[0-9]+/g, '#').replace(/(-?#)+/g, '#').slice(0, 24)}"` : type === 'concatenated string' || type === 'sliced string' || type === 'number' ? '' : raw;
    const key = `${type} ${name.length > 60 ? `${name.slice(0, 57)}...` : name}`.trim();
    const e = by.get(key) ?? { count: 0, bytes: 0 };
    e.count++;
    e.bytes += snap.nodes[i + SIZE];
    by.set(key, e);
  }
  return [...by].map(([kind, e]) => ({ kind, ...e })).sort((a, b) => b.bytes - a.bytes);
}
