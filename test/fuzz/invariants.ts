/**
 * The invariants checked after every step, as SQL run on the server's own database:
 * - the digest: a row count per table, the sum of tenant revisions and the number of revoked API
 *   keys. An error answer must leave it unchanged (nothing written, no change-log row added).
 * - the log gaps: for every tenant, the revisions present in `change_log` must be exactly
 *   1..`tenants.revision` (each revision has at least one change-log row, none above the tenant's
 *   revision, none of a tenant that does not exist).
 */
import { ALL_ENTITIES } from '../../services/store/schema.js';
import type { FuzzServer } from './control-plane.js';

const TABLES = ALL_ENTITIES.map((e) => e.meta.tableName as string);

const DIGEST_SQL = `select json_build_object(${[
  ...TABLES.map((t) => `'${t}', (select count(*) from ${t})`),
  `'tenants.revision (sum)', (select coalesce(sum(revision), 0) from tenants)`,
  `'api_keys revoked', (select count(*) from api_keys where status = 'revoked')`,
].join(', ')})::text as d`;

export type Digest = Record<string, number>;

/** What changed between two digests (`resources +1, change_log +2`), or '' when nothing. */
export function diffDigest(before: Digest, after: Digest): string {
  const out: string[] = [];
  for (const k of Object.keys(after)) {
    const d = (after[k] ?? 0) - (before[k] ?? 0);
    if (d !== 0) out.push(`${k} ${d > 0 ? '+' : ''}${d}`);
  }
  return out.join(', ');
}

export interface LogGap {
  tenantId: string;
  /** `missing` revisions have no change-log row; `stray` rows lie above the tenant's revision or name no tenant. */
  kind: 'missing' | 'stray';
  revision: number;
}

const GAPS_SQL = `
  select t.id as tenant, 'missing' as kind, s.r as revision
  from tenants t cross join lateral generate_series(1, t.revision) as s(r)
  where not exists (select 1 from change_log c where c.tenant_id = t.id and c.revision = s.r)
  union all
  select c.tenant_id, 'stray', c.revision
  from change_log c left join tenants t on t.id = c.tenant_id
  where t.id is null or c.revision > t.revision or c.revision < 1
  group by c.tenant_id, c.revision`;

/**
 * The database's transaction snapshot (`xmin:xmax:in-progress`). It moves whenever a
 * transaction that writes starts or ends anywhere in the cluster, and only then: when it has
 * not moved since the last full snapshot, nothing can have been written and the checks are
 * skipped (most error answers never reach a write). When it has moved, the full checks run.
 */
export async function txSnapshot(server: FuzzServer): Promise<string> {
  const [row] = await server.sql<{ t: string }>('select txid_current_snapshot()::text as t');
  return row.t;
}

/** Both checks in one round trip (one statement, so one consistent view): digest and change-log gaps. */
export async function snapshot(server: FuzzServer): Promise<{ tx: string; digest: Digest; gaps: LogGap[] }> {
  const [row] = await server.sql<{ t: string; d: string; g: string | null }>(
    `select txid_current_snapshot()::text as t, (${DIGEST_SQL.replace(/ as d$/, '')}) as d, (select json_agg(x)::text from (${GAPS_SQL}) x) as g`,
  );
  const raw = JSON.parse(row.d) as Record<string, string | number>;
  const gaps = (row.g ? (JSON.parse(row.g) as { tenant: string; kind: 'missing' | 'stray'; revision: number }[]) : []).map((r) => ({
    tenantId: r.tenant, kind: r.kind, revision: Number(r.revision),
  }));
  return { tx: row.t, digest: Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, Number(v)])), gaps };
}

