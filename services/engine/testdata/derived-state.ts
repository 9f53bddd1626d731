/**
 * A canonical dump of every derived map and node of a tenant index (not the lazy path cache),
 * for tests that compare an incrementally updated index with a freshly built one: two indexes
 * of the same rows give equal dumps whatever order they received them in. Beyond the entries,
 * each copy the index keeps (inline assignments, facts, the plain bitmap, star covers, the
 * id tables) is checked against what it copies and shows as `'stale'` when it disagrees.
 */
import { ENTITY_KINDS, type OwnershipGrant } from '../model.js';
import { type Bag, type Identified, type RowBag, bagRows } from '../tenant-index/bags.js';
import type { CollectionFile } from '../tenant-index/collection-files.js';
import type { ResourceNodes } from '../tenant-index/resource-nodes.js';
import type { ResourceNode } from '../tenant-index/types.js';
import { RowTable } from '../tenant-index/row-table.js';
import { REST_STRIDE, type SubjectGrants } from '../tenant-index/subject-grants.js';
import { groupByScope, type MutableSubjectNode, type SubjectFamily } from '../tenant-index/subjects.js';
import type { TenantIndex } from '../tenant-index/tenant-index.js';
import {
  ASSIGNMENT_SCAN_LIMIT,
  A_ID,
  A_ROLE,
  A_SCOPE,
  A_STRIDE,
  FACT_FLAGS,
  FACT_UP_NUM,
  GRANT_SCAN_LIMIT,
  INLINE_ASSIGNMENTS,
  type AssignmentList,
  type StarCover,
} from '../tenant-index/types.js';

type Deep = Map<string, unknown>;

const byKey = <T>(xs: [string, T][]) => xs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));

/** Id bags canonicalise to sorted ids; row bags to their rows (so a stale row is caught too). */
function ids(b: RowBag<Identified> | Bag | undefined): unknown[] {
  if (b === undefined) return [];
  if (typeof b === 'string') return [b];
  if (b instanceof Set || Array.isArray(b)) return [...b].sort();
  return [...bagRows(b as RowBag<Identified>)].sort((x, y) => (x.id < y.id ? -1 : 1));
}

/** A map of bags `depth` maps deep, sorted by key at every level. */
function canon(m: Deep, depth: number): unknown {
  return byKey([...m.entries()].map(([k, v]) => [k, depth > 1 ? canon(v as Deep, depth - 1) : ids(v as Bag)]));
}

/** A collection file's collections as filed: every one, by field value (a value's JSON tells 1 from "1"), by tag, and those without keys. */
function collectionFileCanonical(file: CollectionFile): unknown {
  const byValue = (m: ReadonlyMap<unknown, RowBag<Identified>>) => byKey([...m.entries()].map(([v, bag]) => [JSON.stringify(v), ids(bag)]));
  return {
    all: ids(file.all),
    byField: byKey([...file.byField.entries()].map(([field, m]) => [field, byValue(m)])),
    byTag: byKey([...file.byTag.entries()].map(([group, m]) => [group, byValue(m)])),
    unkeyed: ids(file.unkeyed),
  };
}

/** The entries of a flat assignment list, one array of four strings each, by id. */
function entriesOf(list: AssignmentList): string[][] {
  const out: string[][] = [];
  for (let i = 0; i < list.length; i += A_STRIDE) out.push(list.slice(i, i + A_STRIDE));
  return out.sort((x, y) => (x[A_ID] < y[A_ID] ? -1 : 1));
}

/** Canonical text of a by-scope view. */
function byScopeKey(m: ReadonlyMap<string, AssignmentList>): string {
  return JSON.stringify([...m.entries()].map(([k, v]) => [k, entriesOf(v)]).sort((a, b) => (a[0] < b[0] ? -1 : 1)));
}

/** Whether a subject node's inline copy agrees with its list. */
function inlineOk(n: MutableSubjectNode): boolean {
  const list = n.assignments;
  const count = list.length / A_STRIDE;
  const fields = [n.s0, n.r0, n.s1, n.r1, n.s2, n.r2, n.s3, n.r3];
  for (let k = 0; k < INLINE_ASSIGNMENTS; k++) {
    if (fields[2 * k] !== list[k * A_STRIDE + A_SCOPE] || fields[2 * k + 1] !== list[k * A_STRIDE + A_ROLE]) return false;
  }
  return n.inline === (count <= INLINE_ASSIGNMENTS ? count : -1);
}

function sameStar(a: StarCover | undefined, b: StarCover | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** A subject's grants as sorted (resource id, grant rows) pairs, with whether its storage agrees with its count. */
export function grantSetCanonical(set: SubjectGrants): unknown {
  const rows = set.rows();
  const { resources, rest, byId, count } = set.layout();
  let form = 'ok';
  if ((resources === undefined) !== (rest === undefined)) form = 'arrays half there';
  if (resources !== undefined && rest !== undefined && rest.length !== resources.length * REST_STRIDE) form = 'arrays out of step';
  if (resources !== undefined && resources.length > GRANT_SCAN_LIMIT) form = 'arrays too long';
  if (resources === undefined) {
    if (count <= GRANT_SCAN_LIMIT / 2) form = 'map too small';
    const filed = (g: OwnershipGrant) => {
      const num = byId?.get(g.id);
      return num !== undefined && [...bagRows<OwnershipGrant>(set.get(num))].some((x) => x.id === g.id && x.resourceId === g.resourceId);
    };
    if (byId === undefined || byId.size !== rows.length || !rows.every(filed)) form = 'byId out of sync';
  }
  const byResource = new Map<string, typeof rows>();
  for (const g of rows) (byResource.get(g.resourceId) ?? byResource.set(g.resourceId, []).get(g.resourceId)!).push(g);
  return {
    form: form === 'ok' && rows.length === count ? 'ok' : `${form}, ${rows.length} rows for a count of ${count}`,
    byResource: [...byResource.entries()].map(([k, v]) => [k, v.sort((x, y) => (x.id < y.id ? -1 : 1))]).sort((a, b) => ((a[0] as string) < (b[0] as string) ? -1 : 1)),
  };
}

/** Whether a node's facts in the resource table are those its node implies. */
function factsOk(nodes: ResourceNodes, id: string, n: ResourceNode): boolean {
  const slot = nodes.table.slotOf(id);
  const type = nodes.type(n);
  return (
    slot >= 0 &&
    nodes.table.valueAt(slot) === n &&
    nodes.live(n) &&
    nodes.table.word(slot, FACT_FLAGS) === nodes.factFlags(n) &&
    nodes.table.word(slot, FACT_UP_NUM) === nodes.up(n) &&
    (type === undefined || nodes.typeSlotsByNum[type.num] === type)
  );
}

/**
 * External id → sorted resource ids, from the nodes; each marked when the table and the
 * extra ids do not file it exactly once, then the table's size when it holds others.
 */
function externalCanonical(nodes: ResourceNodes): [string, string[]][] {
  const byExt = new Map<string, string[]>();
  let firsts = 0;
  for (let n = 0; n < nodes.nextNum; n++) {
    if (!nodes.live(n) || !nodes.exists(n)) continue;
    const id = nodes.idOf(n);
    if (nodes.table.get(id) !== n) (byExt.get('(stale nodes)') ?? byExt.set('(stale nodes)', []).get('(stale nodes)')!).push(id);
    const ext = nodes.ext(n) as string;
    const first = nodes.externalFirst.get(ext) === n;
    const more = nodes.isExternalMore(n);
    if (first) firsts++;
    (byExt.get(ext) ?? byExt.set(ext, []).get(ext)!).push(first !== more ? id : `${id} (filed ${first ? 'twice' : 'nowhere'})`);
  }
  const out = [...byExt].map(([k, list]) => [k, list.sort()] as [string, string[]]).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  if (nodes.externalFirst.size !== firsts) out.push([`(the external-id table holds ${nodes.externalFirst.size} for ${firsts})`, []]);
  return out;
}

/** Every grant id, sorted, each marked when the id table does not map it to its set; then the table's size when it holds others. */
function grantIdsCanonical(subjects: SubjectFamily): string[] {
  const out: string[] = [];
  subjects.grantSets.forEach((set, num) => {
    if (set === undefined) return;
    if (set.num !== num || set.size === 0) out.push(`set ${num} (stale)`);
    for (const g of set.rows()) out.push(subjects.grantsById.get(g.id) === num ? g.id : `${g.id} (stale)`);
  });
  out.sort();
  if (subjects.grantsById.size !== out.length) out.push(`(the id table holds ${subjects.grantsById.size})`);
  return out;
}

/**
 * External id → the ids of its subjects, from the two tables; an entry whose node is not the
 * live node of a subject with that external id is marked, as is a shared list of one or a
 * single id kept in the shared table.
 */
function subjectExternalCanonical(subjects: SubjectFamily): [string, string[]][] {
  const live = (n: MutableSubjectNode, ext: string) => (subjects.nodes.get(n.id) === n && n.row?.externalId === ext ? n.id : `${n.id} (stale)`);
  const out: [string, string[]][] = [];
  for (const [ext, n] of subjects.byExternal) out.push([ext, subjects.sharedExternal.has(ext) ? ['(in both tables)'] : [live(n, ext)]]);
  for (const [ext, list] of subjects.sharedExternal) out.push([ext, list.length < 2 ? ['(shared by fewer than two)'] : list.map((n) => live(n, ext))]);
  return out.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/** The canonical dump of an index's derived state (see the module comment). */
export function derivedState(index: TenantIndex): Record<string, unknown> {
  const { kinds, scopes, roles, subjects, nodes, resources, policies, tags } = index.families();
  // A type slot's count of existing resources must be the number of nodes it types.
  const typed = new Map<string, number>();
  for (const [, n] of nodes.table.entries()) {
    const type = nodes.type(n);
    if (nodes.exists(n) && type !== undefined) typed.set(type.id, (typed.get(type.id) ?? 0) + 1);
  }
  // A node's count of grants naming it must be the number of grants whose resource it is.
  const granted = new Map<number, number>();
  for (const set of subjects.grantSets) set?.forEachResource((num) => granted.set(num, (granted.get(num) ?? 0) + 1));
  return {
    subjects: byKey(
      [...subjects.nodes.entries()].map(([k, n]) => [
        k,
        {
          row: n.row?.id ?? null,
          type: n.type === n.row?.type ? 'ok' : 'stale',
          inline: inlineOk(n) ? 'ok' : 'stale',
          assignments: entriesOf(n.assignments),
          // The by-scope view may outlive its threshold (hysteresis), so only its presence
          // when required and its agreement with the list are canonical.
          byScope: n.assignmentsByScope
            ? byScopeKey(n.assignmentsByScope) === byScopeKey(groupByScope(n.assignments))
              ? 'ok'
              : 'out of sync'
            : n.assignments.length > ASSIGNMENT_SCAN_LIMIT * A_STRIDE
              ? 'missing'
              : 'ok',
          grants: n.grantsByResource ? grantSetCanonical(n.grantsByResource) : [],
          tags: ids(n.tags),
        },
      ]),
    ),
    subjectsByExternalId: subjectExternalCanonical(subjects),
    resources: byKey(
      [...nodes.table.entries()].map(([k, n]) => {
        const type = nodes.type(n);
        const up = nodes.up(n);
        const chosen = nodes.parentOf(n);
        const fields = nodes.rowFieldsOf(n);
        return [
        k,
        {
          row: nodes.exists(n) ? nodes.row(n) : null,
          type: type ? { key: type.key ?? null, collections: type.collections, live: nodes.typeSlots.get(type.id) === type } : null,
          // A node without a row keeps none of its fields.
          cleared:
            nodes.exists(n) ||
            (type === undefined && nodes.ext(n) === undefined && nodes.owner(n) === undefined && nodes.displayName(n) === undefined && fields.attributes === undefined && fields.createdBy === undefined && nodes.createdAtOf(n) === undefined)
              ? 'ok'
              : 'stale',
          patterns: nodes.patterns(n),
          up: up === (chosen?.parent ?? -1) && nodes.upInherit(n) === (chosen?.inherit ?? false) ? (up >= 0 ? nodes.idOf(up) : null) : 'stale',
          refs: nodes.refs(n),
          grantRefs: nodes.grantRefsOf(n) === (granted.get(n) ?? 0) ? nodes.grantRefsOf(n) : 'stale',
          // Numbers differ between builds; their use must agree with the node.
          plain: nodes.plain[n] === (nodes.exists(n) && nodes.patterns(n) === 0 && up < 0 ? 1 : 0) ? 'ok' : 'stale',
          // Each link must point at the live node of its parent.
          parents: [...bagRows(nodes.parents(n))]
            .sort((x, y) => (x.id < y.id ? -1 : 1))
            .map((l) => ({
              edge: resources.edgeRow(l),
              parent: nodes.idOf(l.parent),
              // The link is the one the edge id finds, of this child, and its parent node is live.
              live: nodes.table.get(nodes.idOf(l.parent)) === l.parent && resources.edgeLinks.get(l.id) === l && l.child === n,
            })),
          policies: ids(nodes.policies(n)),
          links: ids(nodes.links(n)),
          tags: ids(nodes.tags(n)),
          facts: factsOk(nodes, k, n) ? 'ok' : 'stale',
        },
      ];
      }),
    ),
    scopeChildren: canon(scopes.children as Deep, 1),
    overridesByScopeRole: canon(roles.overridesByScopeRole as Deep, 2),
    rpByRole: canon(roles.rpByRole as Deep, 1),
    rpByPermission: canon(roles.rpByPermission as Deep, 1),
    roleInfos: byKey(
      [...roles.infos.entries()].map(([role, info]) => [
        role,
        {
          row: info.row === roles.roles.rows.get(role) ? (info.row ? 'ok' : null) : 'stale',
          scope: info.scope === info.row?.scopeId ? 'ok' : 'stale',
          cover: info.cover ? byKey([...info.cover.entries()].map(([pat, byAction]) => [pat, byKey([...byAction.entries()].map(([a, b]) => [a, ids(b)]))])) : null,
          // Term numbers differ between builds: compare with a fresh compile of this index's cover.
          star: sameStar(info.star, roles.starCoverOf(info)) ? 'ok' : 'stale',
        },
      ]),
    ),
    assignmentsByMembership: canon(subjects.assignmentsByMembership as Deep, 1),
    // Slots are never dropped, so an incremental index may hold empty ones a rebuild lacks.
    typeSlots: byKey(
      [...nodes.typeSlots.entries()]
        .filter(([, slot]) => slot.key !== undefined || slot.collections !== 0 || slot.resources !== 0)
        .map(([k, slot]) => [k, { id: slot.id, key: slot.key ?? null, collections: slot.collections, resources: slot.resources === (typed.get(slot.id) ?? 0) ? slot.resources : `stale (${slot.resources})` }]),
    ),
    resourcesByExternal: externalCanonical(nodes),
    patternCounts: byKey([...nodes.patternCounts.entries()]),
    collectionsByTypeScope: byKey(
      [...policies.collectionsByTypeScope.entries()].map(([type, byScope]) => [type, byKey([...byScope.entries()].map(([scope, file]) => [scope, collectionFileCanonical(file)]))]),
    ),
    policiesByCollection: canon(policies.policiesByCollection as Deep, 1),
    directAllowsByAction: canon(policies.directAllowsByAction as Deep, 1),
    directDeniesByAction: canon(policies.directDeniesByAction as Deep, 1),
    // Each child link must be the very link its child holds, under the parent it names.
    childrenByParent: byKey(
      [...resources.childrenByParent.entries()].map(([parent, bag]) => [
        parent,
        [...bagRows(bag)]
          .sort((x, y) => (x.id < y.id ? -1 : 1))
          .map((l) => ({
            edge: l.id,
            child: nodes.idOf(l.child),
            live: nodes.idOf(l.parent) === parent && [...bagRows(nodes.parents(l.child))].includes(l) && nodes.table.get(nodes.idOf(l.child)) === l.child,
          })),
      ]),
    ),
    scopeTags: canon(tags.scopeTags as Deep, 1),
    bindingsByTagScope: canon(tags.bindingsByTagScope as Deep, 2),
    tagsByGroup: canon(tags.tagsByGroup as Deep, 1),
    resourceAssignmentsByTag: canon(tags.resourceAssignmentsByTag as Deep, 1),
    rows: Object.fromEntries(
      ENTITY_KINDS.map((k) => {
        const store = kinds[k];
        if (store instanceof RowTable) return [k, [...store.rows.keys()].sort()];
        if (k === 'resource') return [k, [...nodes.table.entries()].filter(([, n]) => nodes.exists(n)).map(([id]) => id).sort()];
        if (k === 'ownership_grant') return [k, grantIdsCanonical(subjects)];
        if (k === 'resource_edge') return [k, [...resources.edgeLinks.keys()].sort()];
        throw new Error(`derivedState: no dump for kind ${k}`);
      }),
    ),
    resourceCount: nodes.existing,
    createdAtRaw: nodes.createdAtRaw.size,
  };
}
