/**
 * Hierarchy rules under concurrent writers. Each rule (one parent, no cycle, at most 64 levels)
 * holds for requests sent one after the other; these tests send the two requests that would
 * break it together, many times, on PostgreSQL (the embedded database has one connection, so
 * its writes are serialized anyway), and count violations in what was stored.
 *
 * Every refusal is checked too, not only the number of successes: a request that loses a race
 * must be refused by the rule it would break (`failed_precondition`, reason CONSTRAINT, with that
 * rule's message), as it would be had it come second. Writers of one tenant are serialized by
 * the tenant's row lock, so the loser's checks see the winner's write; any other refusal
 * (`already_exists` from two writers taking the same revision, `internal` from a deadlock or a
 * dangling row) means the writes interleaved.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code, ConnectError, type Client } from '@connectrpc/connect';
import { ResourceService } from '../../../gen/authz/v1/resource_service_pb.js';
import { ResourceTypeService } from '../../../gen/authz/v1/resource_type_service_pb.js';
import { ScopeService } from '../../../gen/authz/v1/scope_service_pb.js';
import { ErrorInfoSchema, ErrorReason } from '../../../gen/authz/v1/error_reason_pb.js';
import { createTestApp, seedTenant, type TestApp } from '../../../test/harness.js';
import { MAX_DEPTH } from '../../store/scopes.js';

const RACES = { cycles: 200, chains: 20, scopes: 20 };

/**
 * Settles every request of one race; counts the successes, and records in `wrong` every refusal
 * that is not `failed_precondition` (reason CONSTRAINT) with a message matching `rule`.
 */
async function race(ps: Promise<unknown>[], rule: RegExp, wrong: string[]): Promise<number> {
  let ok = 0;
  for (const r of await Promise.allSettled(ps)) {
    if (r.status === 'fulfilled') {
      ok++;
      continue;
    }
    const err = ConnectError.from(r.reason);
    const reason = err.findDetails(ErrorInfoSchema)[0]?.reason;
    if (err.code !== Code.FailedPrecondition || reason !== ErrorReason.CONSTRAINT || !rule.test(err.rawMessage)) {
      wrong.push(`${Code[err.code]} (${reason === undefined ? 'no reason' : ErrorReason[reason]}): ${err.rawMessage}`);
    }
  }
  return ok;
}

describe.skipIf(!process.env.DATABASE_URL)('hierarchy rules under concurrent writers on postgres', () => {
  let app: TestApp;
  let resources: Client<typeof ResourceService>;
  let scopes: Client<typeof ScopeService>;
  beforeAll(async () => {
    app = await createTestApp('postgres');
    await seedTenant(app.db, 'tenant_race');
    const types = app.client(ResourceTypeService);
    await types.createResourceType({ id: 'resource_type_node', name: 'Node', key: 'node', scopeId: 'scope_tenant_race' });
    await types.createResourceTypeEdge({ parentTypeId: 'resource_type_node', childTypeId: 'resource_type_node' });
    resources = app.client(ResourceService);
    scopes = app.client(ScopeService);
  });
  afterAll(() => app?.close());

  const q = async <T>(sql: string, params: unknown[] = []) => (await app.db.orm.em.fork().execute(sql, params)) as T[];

  /** Creates resources `${prefix}_0..n-1`, chained parent to child when `chain`. */
  async function nodes(prefix: string, n: number, chain: boolean): Promise<string[]> {
    const ids = Array.from({ length: n }, (_, i) => `resource_${prefix}_${i}`);
    await resources.batchCreateResources({ items: ids.map((id) => ({ id, resourceTypeId: 'resource_type_node', ownerScopeId: 'scope_tenant_race', externalResourceId: id })) });
    if (chain && n > 1) {
      await resources.batchCreateResourceEdges({ items: ids.slice(1).map((id, i) => ({ parentResourceId: ids[i], childResourceId: id })) });
    }
    return ids;
  }

  /** Levels of the chain that ends at `leaf` (1 for a root), following stored edges, capped. */
  async function levelsAbove(leaf: string): Promise<number> {
    const [row] = await q<{ n: number }>(`
      with recursive up(id, depth) as (
        select ?::text, 1
        union all select e.parent_resource_id, up.depth + 1 from resource_edges e join up on e.child_resource_id = up.id where up.depth < 200
      ) select max(depth)::int as n from up`, [leaf]);
    return row.n;
  }

  it(`P→Q and Q→P sent together: one of them is refused, no stored cycle (${RACES.cycles} races)`, async () => {
    let violations = 0;
    let bothRefused = 0;
    const wrong: string[] = [];
    for (let i = 0; i < RACES.cycles; i++) {
      const [p, qq] = await nodes(`cyc${i}`, 2, false);
      // The second edge sees the first: its child has no parent yet, so only the cycle rule refuses it.
      const ok = await race([
        resources.createResourceEdge({ parentResourceId: p, childResourceId: qq }),
        resources.createResourceEdge({ parentResourceId: qq, childResourceId: p }),
      ], /^childResourceId: making \S+ the parent of \S+ would create a cycle$/, wrong);
      if (ok === 2) violations++;
      if (ok === 0) bothRefused++;
    }
    const cycles = await q<{ n: number }>(`
      select count(*)::int as n from resource_edges a join resource_edges b
      on a.parent_resource_id = b.child_resource_id and a.child_resource_id = b.parent_resource_id where a.tenant_id = 'tenant_race'`);
    expect({ violations, bothRefused, storedCycles: cycles[0].n, wrong }).toEqual({ violations: 0, bothRefused: 0, storedCycles: 0, wrong: [] });
  });

  it(`two 40-level chains joined from both sides at once stay within ${MAX_DEPTH} levels (${RACES.chains} races)`, async () => {
    let violations = 0;
    const wrong: string[] = [];
    for (let i = 0; i < RACES.chains; i++) {
      const top = await nodes(`top${i}`, 40, true);
      const [middle] = await nodes(`mid${i}`, 1, false);
      const bottom = await nodes(`bot${i}`, 40, true);
      // Each edge alone makes 41 levels; both together would make 81, so the second is refused
      // by the depth rule, whichever it is.
      const ok = await race([
        resources.createResourceEdge({ parentResourceId: top[top.length - 1], childResourceId: middle }),
        resources.createResourceEdge({ parentResourceId: middle, childResourceId: bottom[0] }),
      ], new RegExp(`^childResourceId: the edge would make the hierarchy 81 levels deep; at most ${MAX_DEPTH} are allowed$`), wrong);
      if (ok !== 1 || (await levelsAbove(bottom[bottom.length - 1])) > MAX_DEPTH) violations++;
    }
    expect({ violations, wrong }).toEqual({ violations: 0, wrong: [] });
  });

  it(`a scope move and a scope create at once stay within ${MAX_DEPTH} levels (${RACES.scopes} races)`, async () => {
    /** A chain of `n` scopes under `parentId`; returns their ids, top first. */
    async function scopeChain(prefix: string, n: number, parentId: string): Promise<string[]> {
      const ids = Array.from({ length: n }, (_, i) => `scope_${prefix}_${i}`);
      await scopes.batchCreateScopes({ items: ids.map((id, i) => ({ id, name: id, typeId: 'scope_type_project', parentId: i === 0 ? parentId : ids[i - 1] })) });
      return ids;
    }
    let violations = 0;
    const wrong: string[] = [];
    for (let i = 0; i < RACES.scopes; i++) {
      // Root (level 1) + 31 = a leaf at level 32; a second chain of 32 under the root.
      const left = await scopeChain(`l${i}`, 31, 'scope_tenant_race');
      const right = await scopeChain(`r${i}`, 32, 'scope_tenant_race');
      // Moving the right chain under the left leaf puts its leaf at level 64; a new child of
      // that leaf is level 33 now. Together they would give a scope at level 65.
      // The second is refused by its own depth rule: the create's (a scope at level 65) or the move's.
      const ok = await race([
        scopes.moveScope({ childScopeId: right[0], parentScopeId: left[left.length - 1] }),
        scopes.createScope({ id: `scope_new${i}`, name: 'new', typeId: 'scope_type_project', parentId: right[right.length - 1] }),
      ], new RegExp(`^(parentId: the scope would be 65 levels deep; at most ${MAX_DEPTH} are allowed|parentScopeId: the move would make the hierarchy deeper than ${MAX_DEPTH} levels)$`), wrong);
      const [deepest] = await q<{ n: number }>(`
        with recursive down(id, depth) as (
          select id, 1 from scopes where id = 'scope_tenant_race'
          union all select s.id, down.depth + 1 from scopes s join down on s.parent_id = down.id where down.depth < 200
        ) select max(depth)::int as n from down`);
      if (ok !== 1 || deepest.n > MAX_DEPTH) violations++;
      // Undo the move, if it happened, so the next race starts from the same depths.
      await scopes.moveScope({ childScopeId: right[0], parentScopeId: 'scope_tenant_race' }).catch(() => undefined);
    }
    expect({ violations, wrong }).toEqual({ violations: 0, wrong: [] });
  });
});
