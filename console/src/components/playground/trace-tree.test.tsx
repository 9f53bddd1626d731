// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest';
import { cleanup, render, screen, within } from '@testing-library/react';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import type { ResourcePolicy } from '../../../../gen/authz/v1/policy_pb.js';
import type { Subject } from '../../../../gen/authz/v1/subject_pb.js';
import { ConditionInputsProvider } from './policy-conditions.js';
import { TraceTree } from './trace-tree.js';
import type { StepLike } from './trace-model.js';

afterEach(cleanup);

// The trace Evaluate gave for bob reading document/roadmap in /eng/platform (examples/documents).
const POLICY = 'policy_9af4fa4591_no-contractors-on-confidential';
const BOB_DENIED: StepLike[] = [
  { step: 'scope', result: 'info', message: 'scope scope_01a22358-8484-72fa-9746-028a6bad607b; ancestors nearest first: scope_01a22358-8484-72f9-b716-1f322aba032b', details: { scopePath: ['scope_01a22358-8484-72fa-9746-028a6bad607b', 'scope_01a22358-8484-72f9-b716-1f322aba032b'] } },
  { step: 'gate', result: 'pass', message: 'gate off', details: {} },
  { step: 'policy', result: 'pass', message: 'collection collection_01a22358-8484-732c-b93e-bc6ca73b1475 at scope_01a22358-8484-72f9-b716-1f322aba032b matches the resource', details: { collectionId: 'collection_01a22358-8484-732c-b93e-bc6ca73b1475', match: 'match' } },
  {
    step: 'policy', result: 'pass',
    message: `policy ${POLICY} (collection collection_01a22358-8484-732c-b93e-bc6ca73b1475, priority 100, deny): action matches, window active, subjectCondition passed, no contextCondition`,
    details: { policyId: POLICY, via: 'collection collection_01a22358-8484-732c-b93e-bc6ca73b1475', priority: 100, effect: 'deny', action: true, window: true, subjectCondition: true, matched: true },
  },
  { step: 'policy', result: 'deny', message: `highest matching priority 100: deny wins (policy ${POLICY})`, details: {} },
  { step: 'decision', result: 'deny', message: 'denied (policy_deny)', details: {} },
];

const NAMES = new Map([
  ['scope_01a22358-8484-72fa-9746-028a6bad607b', '/eng/platform'],
  ['scope_01a22358-8484-72f9-b716-1f322aba032b', '/eng'],
  ['collection_01a22358-8484-732c-b93e-bc6ca73b1475', 'confidential-documents'],
]);

const policy = { id: POLICY, effect: 'deny', priority: 100, actions: ['*'], subjectCondition: { '==': [{ var: 'subject.meta.employment' }, 'contractor'] } } as unknown as ResourcePolicy;
const bob = { id: 'subject_b', type: 'user', externalId: 'bob', metadata: { employment: 'contractor' } } as unknown as Subject;

function withInputs(children: ReactNode) {
  return (
    <QueryClientProvider client={new QueryClient()}>
      <ConditionInputsProvider value={{ knownPolicies: new Map([[POLICY, policy]]), subject: bob, past: false }}>{children}</ConditionInputsProvider>
    </QueryClientProvider>
  );
}

describe('TraceTree', () => {
  it('draws a branch per leg, the policies by priority, and each step with its details', () => {
    render(withInputs(<TraceTree trace={BOB_DENIED} names={NAMES} withConditions label="Trace of the decision" />));
    const tree = screen.getByRole('list', { name: 'Trace of the decision' });
    const legs = within(tree).getAllByRole('listitem').filter((li) => li.parentElement === tree);
    expect(legs.map((li) => li.querySelector('.trace-leg-name')?.textContent)).toEqual(['scope', 'gate', 'policies', 'decision']);
    // Ids the names map knows read as names in the sentences; the details keep the ids beside them.
    expect(legs[0].querySelector('summary')?.textContent).toBe('scope info scope /eng/platform; ancestors nearest first: /eng');
    expect([...legs[0].querySelectorAll('.trace-path > li')].map((li) => li.textContent)).toEqual(['/eng/platform scope_01a22358-8484-72fa-9746-028a6bad607b', '/eng scope_01a22358-8484-72f9-b716-1f322aba032b']);
    const policies = legs[2];
    expect(policies.querySelector('summary')?.textContent).toBe('policies deny 3 steps');
    const group = policies.querySelector('.trace-group')!;
    expect(group.querySelector('.trace-priority')?.textContent).toBe('priority 100');
    expect(group.textContent).toContain(`policy ${POLICY} (collection confidential-documents, priority 100, deny)`);
  });

  it('shows a policy\'s condition and the value it read', () => {
    render(withInputs(<TraceTree trace={BOB_DENIED} names={NAMES} withConditions />));
    const condition = document.querySelector('.condition')!;
    expect(condition.querySelector('.condition-head')?.textContent).toBe('subjectCondition passed');
    expect(condition.querySelector('.condition-rule')?.textContent).toBe('subject.meta.employment == "contractor"');
    const values = condition.querySelector('.condition-values')!;
    expect(values.querySelector('dt')?.textContent).toBe('subject.meta.employment');
    expect(values.querySelector('dd')?.textContent).toBe('"contractor"');
  });

  it('writes the sentences as they came when asked, and says when there is no trace', () => {
    render(withInputs(<TraceTree trace={BOB_DENIED} names={NAMES} rawMessages />));
    expect(document.querySelector('.trace-leg summary')?.textContent).toContain('scope scope_01a22358-8484-72fa-9746-028a6bad607b; ancestors');
    expect(document.querySelector('.condition')).toBeNull();
    cleanup();
    render(withInputs(<TraceTree trace={[]} names={NAMES} />));
    expect(screen.getByText('The answer carries no trace.')).toBeTruthy();
  });
});

describe('names in sentences', () => {
  it('does not repeat a name the engine wrote after the id', () => {
    const names = new Map([['permission_01a22358-8484-7303-a744-8b2cfb9cbde7', 'document:write:*'], ['role_01a22358-8484-7305-95bd-7e55448cd862', 'editor']]);
    const step: StepLike = { step: 'role', result: 'allow', message: 'role role_01a22358-8484-7305-95bd-7e55448cd862 has permission permission_01a22358-8484-7303-a744-8b2cfb9cbde7 (document:write:*) covering the request' };
    render(withInputs(<TraceTree trace={[step]} names={names} />));
    expect(document.querySelector('.trace-message')?.textContent).toBe('role editor has permission document:write:* covering the request');
  });
});
