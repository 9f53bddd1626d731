/**
 * How a batch asks its source for indexes: a `fullyConsistent` read is made once per tenant per
 * batch, later requests on that tenant asking for the revision it gave.
 */
import { describe, expect, it } from 'vitest';
import { TenantIndex } from '../engine/tenant-index/mod.js';
import type { Scope } from '../engine/model.js';
import { decideAll, parseEvaluate, type DecisionSource, type Freshness } from './decide.js';

const scope = (id: string, tenantId: string) => ({ id, tenantId, parentId: null, typeId: 'scope_type_project', name: id }) as Scope;
const acme = TenantIndex.fromSnapshot({ revision: 7, rows: { scope: [scope('scope_a1', 'tenant_a'), scope('scope_a2', 'tenant_a')] } });
const beta = TenantIndex.fromSnapshot({ revision: 3, rows: { scope: [scope('scope_b1', 'tenant_b')] } });

/** A source that answers after a turn (as the control plane does for `fullyConsistent`) and records what it was asked. */
function recordingSource(): { source: DecisionSource<null>; asked: [string, Freshness][] } {
  const asked: [string, Freshness][] = [];
  const source: DecisionSource<null> = {
    gate: () => 'off',
    indexFor(_caller, scopeId, _field, freshness) {
      asked.push([scopeId, freshness]);
      const index = scopeId.startsWith('scope_a') ? acme : beta;
      return freshness.fullyConsistent || freshness.minRevision > 0 ? Promise.resolve(index) : index;
    },
  };
  return { source, asked };
}

const request = (scopeId: string, consistency?: Record<string, unknown>) =>
  ({ actor: { subjectId: 'subject_x' }, scopeId, action: 'read', consistency });

describe('a batch and fullyConsistent', () => {
  it('reads each tenant once; later requests on it ask for the revision that read gave', async () => {
    const { source, asked } = recordingSource();
    const inputs = [
      request('scope_a1'),
      request('scope_a1', { fullyConsistent: true }),
      request('scope_a2', { fullyConsistent: true }),
      request('scope_b1', { fullyConsistent: true }),
      request('scope_a1', { fullyConsistent: true, minRevision: 9 }),
      request('scope_b1', { fullyConsistent: true }),
    ].map((r, i) => parseEvaluate(r, `requests[${i}].`));
    const ds = await decideAll(source, null, inputs, true, Number.POSITIVE_INFINITY);
    expect(ds.map((d) => d.revision)).toEqual([7, 7, 7, 3, 7, 3]);
    expect(asked).toEqual([
      ['scope_a1', { minRevision: 0, fullyConsistent: false }],
      ['scope_a1', { minRevision: 0, fullyConsistent: true }],
      ['scope_a2', { minRevision: 7, fullyConsistent: false }],
      ['scope_b1', { minRevision: 0, fullyConsistent: true }],
      // Its own minRevision still holds when it is ahead of the read.
      ['scope_a1', { minRevision: 9, fullyConsistent: false }],
      ['scope_b1', { minRevision: 3, fullyConsistent: false }],
    ]);
  });

  it('a single request still asks fully consistently every time', async () => {
    const { source, asked } = recordingSource();
    for (let i = 0; i < 2; i++) await decideAll(source, null, [parseEvaluate(request('scope_a1', { fullyConsistent: true }))], false, Number.POSITIVE_INFINITY);
    expect(asked.map(([, f]) => f.fullyConsistent)).toEqual([true, true]);
  });
});
