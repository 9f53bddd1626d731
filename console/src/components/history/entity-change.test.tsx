// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest';
import { cleanup, render, screen, within } from '@testing-library/react';
import { create } from '@bufbuild/protobuf';
import { EntityChangeSchema } from '../../../../gen/authz/v1/change_service_pb.js';
import { EntityChangeItem } from './entity-change.js';

afterEach(cleanup);

const rows = (table: HTMLElement) => within(table).getAllByRole('row').slice(1).map((r) => [...r.querySelectorAll('th, td')].map((c) => c.textContent));

describe('EntityChangeItem', () => {
  it('shows an update as the fields that moved, before and after, the rest folded away', () => {
    const change = create(EntityChangeSchema, {
      revision: 4n, op: 'upsert', kind: 'subject', entityId: 'subject_1',
      before: { id: 'subject_1', externalId: 'hist-1', metadata: { team: 'eng', level: 1 } },
      after: { id: 'subject_1', externalId: 'hist-1', metadata: { team: 'ops', region: 'eu' } },
    });
    render(<ul><EntityChangeItem change={change} open /></ul>);
    expect(screen.getByText('update')).toBeTruthy();
    const table = screen.getByRole('table', { name: 'Fields before and after the change' });
    expect(rows(table)).toEqual([
      ['metadata.team changed', 'eng', 'ops'],
      ['metadata.region added', 'none', 'eu'],
      ['metadata.level removed', '1', 'none'],
    ]);
    expect(screen.getByText('2 unchanged fields')).toBeTruthy();
    expect(screen.getByRole('link', { name: 'Every change of this entity' }).getAttribute('href')).toBe('/history?entityId=subject_1');
  });

  it('shows a create with its fields as added and says there is no before', () => {
    const change = create(EntityChangeSchema, { revision: 2n, op: 'upsert', kind: 'scope', entityId: 'scope_1', after: { id: 'scope_1', name: 'eng' } });
    render(<ul><EntityChangeItem change={change} open={false} /></ul>);
    expect(screen.getByText('create')).toBeTruthy();
    expect(screen.getByText('eng', { selector: 'strong' })).toBeTruthy();
    const table = screen.getByRole('table', { name: 'Created with these fields (there is no before)', hidden: true });
    expect(rows(table)).toEqual([['id added', 'none', 'scope_1'], ['name added', 'none', 'eng']]);
  });
});
