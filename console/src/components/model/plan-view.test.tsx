// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest';
import { cleanup, render, screen, within } from '@testing-library/react';
import { PlanView } from './plan-view.js';

afterEach(cleanup);

describe('PlanView', () => {
  it('lists the writes by kind with the fields that change and what the file sets them to, and counts keeps', () => {
    render(
      <PlanView
        revision={7n}
        document={{ resources: [{ type: 'document', externalId: 'roadmap', displayName: 'Roadmap 2' }] }}
        changes={[
          { kind: 'scope', action: 'create', key: 'scope /support', fields: [], reason: '', path: 'scopes[0]' },
          { kind: 'resource', action: 'update', key: 'resource document/roadmap', fields: ['displayName'], reason: '', path: 'resources[0]' },
          { kind: 'role', action: 'keep', key: 'role viewer', fields: [], reason: 'not in the file; kept (prune is off)', path: '' },
        ]}
      />,
    );
    expect(screen.getByRole('heading', { name: 'Plan at revision 7', level: 3 })).toBeTruthy();
    expect(screen.getByText(/^1 to create, 1 to update, 0 to replace, 0 to delete; 1 kept/)).toBeTruthy();
    expect(screen.getAllByRole('heading', { level: 4 }).map((h) => h.textContent)).toEqual(['scope (1)', 'resource (1)']);
    expect(within(screen.getByRole('list', { name: 'Changes of kind scope' })).getByRole('listitem').textContent).toBe('+create scope /support at scopes[0]');
    expect(within(screen.getByRole('list', { name: 'Fields that change in resource document/roadmap' })).getByRole('listitem').textContent).toBe('displayName → Roadmap 2');
    expect(screen.queryByText('role viewer')).toBeNull();
  });

  it('says when there is nothing to change', () => {
    render(<PlanView revision={3n} document={{}} changes={[]} />);
    expect(screen.getByText(/^No changes\./)).toBeTruthy();
  });
});
