// @vitest-environment happy-dom
import type { ReactNode } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanup, render, screen, within } from '@testing-library/react';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { ResourceCollectionSchema, ResourcePolicySchema } from '../../../gen/authz/v1/policy_pb.js';
import { CollectionCard, PolicyCard } from './policy-cards.js';

afterEach(cleanup);

/** Names the cards look up, already in the cache: nothing is fetched. */
function withNames(ui: ReactNode) {
  const queryClient = new QueryClient({ defaultOptions: { queries: { retry: false, staleTime: Infinity } } });
  queryClient.setQueryData(['name', 'collection', 'collection_1'], 'confidential-documents');
  queryClient.setQueryData(['name', 'resource-type', 'resource_type_1'], 'Document');
  return render(<QueryClientProvider client={queryClient}>{ui}</QueryClientProvider>);
}

describe('PolicyCard', () => {
  it('names the effect, actions and target, and writes the conditions as expressions', () => {
    withNames(<PolicyCard policy={create(ResourcePolicySchema, {
      id: 'policy_1', effect: 'deny', actions: ['read', 'write'], priority: 100,
      target: { kind: 'collection', collectionId: 'collection_1' },
      subjectCondition: { '==': [{ var: 'subject.meta.employment' }, 'contractor'] },
      contextCondition: { and: [{ '==': [{ var: 'context.deviceType' }, 'managed'] }, { '>=': [{ var: 'context.level' }, 3] }] },
    })} />);
    const card = screen.getByRole('article', { name: 'deny read, write on collection confidential-documents' });
    const expressions = [...card.querySelectorAll('code.logic')].map((c) => c.textContent);
    expect(expressions).toEqual(['subject.meta.employment == "contractor"', 'context.deviceType == "managed" and context.level >= 3']);
    expect(within(card).getByText('100')).toBeTruthy();
    expect(within(card).getByText('always')).toBeTruthy();
  });

  it('says when there is no condition, and gives the validity window', () => {
    withNames(<PolicyCard policy={create(ResourcePolicySchema, {
      id: 'policy_2', effect: 'allow', actions: ['*'], target: { kind: 'collection', collectionId: 'collection_1' },
      validFrom: timestampFromDate(new Date('2025-01-01T00:00:00Z')),
    })} />);
    const card = screen.getByRole('article');
    expect(within(card).getAllByText('none (always holds)')).toHaveLength(2);
    expect(card.textContent).toContain('(every action)');
    // The day depends on the time zone the test runs in.
    expect(card.textContent).toMatch(/Validfrom .*202[45]/);
  });
});

describe('CollectionCard', () => {
  it('lists the match definition as clauses, nested groups as nested lists', () => {
    withNames(<CollectionCard collection={create(ResourceCollectionSchema, {
      id: 'collection_1', name: 'hot-docs', resourceTypeId: 'resource_type_1',
      matchDefinition: { tags: { classification: 'confidential' }, any: [{ fields: { 'attributes.level': { gte: 3 } } }, { patterns: { externalResourceId: '^x' } }] },
    })} />);
    const card = screen.getByRole('article', { name: 'hot-docs' });
    expect(card.textContent).toContain('Document');
    const top = card.querySelector('ul.match')!;
    expect([...top.querySelectorAll(':scope > li')].map((li) => li.firstChild?.textContent)).toEqual(['tag classification is "confidential"', 'any of these holds:']);
    expect([...top.querySelectorAll('ul.match ul.match code')].map((c) => c.textContent)).toEqual(['attributes.level >= 3', 'externalResourceId matches /^x/']);
  });
});
