import type { Decision, GateMode, TenantIndex } from '../services/engine/mod.js';
import { DomainError, permissionDenied, unavailable } from '../services/common/errors.js';
import { signalOf, waitEnded, type CallSignal, type DecisionSource, type Freshness } from '../services/decision/decide.js';
import type { Follower } from './follower.js';
import type { DecisionLog } from '../services/decision/log.js';

/**
 * The sidecar's decisions: its tenant's scopes only (callers on loopback need no credentials;
 * the listener is the boundary), from the followed index, and only while it is fresh. A
 * `minRevision` ahead of the index waits up to SIDECAR_MIN_REVISION_WAIT_MS (or the caller's
 * deadline, when shorter, and no longer than the caller stays); it never answers from an older state.
 */
export class SidecarSource implements DecisionSource<void> {
  constructor(
    private readonly follower: Follower,
    private readonly opts: { tenantId: string; minRevisionWaitMs: number; maxStalenessMs: number },
    readonly onEngineError?: (err: unknown) => void,
    readonly onDecision?: (d: Decision) => void,
    readonly decisionLog?: DecisionLog,
  ) {}

  gate(): GateMode {
    return this.follower.gate;
  }

  indexFor(_caller: void, scopeId: string, prefix: string, freshness: Freshness, deadline: number, signal?: CallSignal): TenantIndex | Promise<TenantIndex> {
    const field = `${prefix}scopeId`;
    if (freshness.fullyConsistent) {
      const at = `${prefix}consistency.fullyConsistent`;
      throw new DomainError('constraint', `${at}: a sidecar cannot read the database; send consistency.minRevision (a write's x-revision) or ask the control plane`, at);
    }
    if (freshness.at !== undefined) {
      const at = freshness.at.field;
      throw new DomainError('constraint', `${at}: a sidecar holds only its tenant's current state; ask the control plane for a past one`, at);
    }
    if (freshness.minRevision > this.follower.revision) return this.afterWait(scopeId, field, freshness.minRevision, deadline, signal);
    return this.current(scopeId, field);
  }

  /**
   * The index once it reaches `minRevision`; `unavailable`, `deadline_exceeded` or `canceled`
   * (see waitEnded) when it does not in time.
   */
  private async afterWait(scopeId: string, field: string, minRevision: number, deadline: number, signal: CallSignal | undefined): Promise<TenantIndex> {
    const waitUntil = Date.now() + this.opts.minRevisionWaitMs;
    const aborted = signalOf(signal);
    const reached = await this.follower.waitFor(minRevision, Math.min(waitUntil, deadline), aborted);
    if (!reached) {
      const message = `revision ${minRevision} of tenant ${this.opts.tenantId} is not available yet (at ${this.follower.revision})`;
      throw waitEnded(message, deadline, waitUntil, aborted);
    }
    return this.current(scopeId, field);
  }

  /** The index as it is, when fresh and holding the scope. */
  private current(scopeId: string, field: string): TenantIndex {
    const index = this.follower.index;
    if (!index) throw unavailable(`the sidecar has no snapshot of tenant ${this.opts.tenantId} yet`);
    if (!this.follower.fresh()) {
      throw unavailable(`no message from the control plane for over ${this.opts.maxStalenessMs} ms: the state may be stale, so decisions are refused`);
    }
    if (!index.scope(scopeId)) {
      throw permissionDenied(`${field}: scope ${scopeId} is not in tenant ${this.opts.tenantId} (as of revision ${index.revision})`, field);
    }
    return index;
  }
}
