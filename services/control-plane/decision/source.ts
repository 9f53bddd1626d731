import type { Decision, GateMode, TenantIndex } from '../../engine/mod.js';
import { notFound } from '../../common/errors.js';
import type { CallSignal, DecisionSource, Freshness } from '../../decision/decide.js';
import { assertScopeReach, assertTenantReach, type Principal } from '../auth/principal.js';
import type { TenantIndexes } from './indexes.js';
import type { PastIndexes } from './past-indexes.js';
import type { DecisionLog } from '../../decision/log.js';

/**
 * The control plane's decisions: any tenant's scope, within the calling key's reach (its
 * tenant, and for a key restricted to an environment that environment's scope and below),
 * from the tenant's index caught up to the committed revision (as notifications tell it;
 * `fullyConsistent` asks the database).
 */
export class ControlPlaneSource implements DecisionSource<Principal> {
  constructor(
    readonly indexes: TenantIndexes,
    private readonly past: PastIndexes,
    private readonly gateMode: GateMode,
    readonly onEngineError?: (err: unknown) => void,
    readonly onDecision?: (d: Decision) => void,
    readonly decisionLog?: DecisionLog,
  ) {}

  gate(): GateMode {
    return this.gateMode;
  }

  indexFor(principal: Principal, scopeId: string, prefix: string, freshness: Freshness, deadline: number, signal?: CallSignal): TenantIndex | Promise<TenantIndex> {
    const field = `${prefix}scopeId`;
    if (freshness.at !== undefined || freshness.pinned !== undefined) return this.pastIndex(principal, scopeId, field, freshness, deadline, signal);
    const ready = freshness.fullyConsistent ? undefined : this.indexes.readyFor(scopeId, freshness.minRevision);
    if (ready === undefined) return this.indexAfterWait(principal, scopeId, field, freshness, deadline, signal);
    return this.checked(principal, ready.tenantId, ready.index, scopeId, field);
  }

  /** indexFor when the scope's tenant or a fresh enough index must be read or waited for. */
  private async indexAfterWait(principal: Principal, scopeId: string, field: string, freshness: Freshness, deadline: number, signal?: CallSignal): Promise<TenantIndex> {
    const tenantId = await this.indexes.tenantOfScope(scopeId, field);
    assertTenantReach(principal, tenantId, field);
    const index = await this.indexes.get(tenantId, freshness.minRevision, deadline, freshness.fullyConsistent, signal);
    return this.checked(principal, tenantId, index, scopeId, field);
  }

  /**
   * indexFor a past state (`consistency.atRevision`/`atTime`) or a pinned revision (a listing's
   * later page): the current index when it is at that revision, else one built from the history.
   */
  private async pastIndex(principal: Principal, scopeId: string, field: string, freshness: Freshness, deadline: number, signal?: CallSignal): Promise<TenantIndex> {
    const tenantId = await this.indexes.tenantOfScope(scopeId, field);
    assertTenantReach(principal, tenantId, field);
    const revision = freshness.at !== undefined ? await this.past.revisionOf(tenantId, freshness.at) : freshness.pinned!;
    const current = await this.indexes.get(tenantId, revision, deadline, false, signal);
    const index = current.revision === revision ? current : await this.past.at(tenantId, revision, freshness.at?.field ?? 'cursor');
    return this.checked(principal, tenantId, index, scopeId, field);
  }

  private checked(principal: Principal, tenantId: string, index: TenantIndex, scopeId: string, field: string): TenantIndex {
    assertTenantReach(principal, tenantId, field);
    if (principal.environment) assertScopeReach(principal, index.scopePath(scopeId).ids, field);
    // The scope was seen in the store: the index lacks it only if it was deleted since.
    if (!index.scope(scopeId)) throw notFound('scope', scopeId, field);
    return index;
  }
}
