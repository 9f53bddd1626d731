// @vitest-environment happy-dom
import { afterEach, describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { Code, ConnectError } from '@connectrpc/connect';
import { ApplyStep, type PlannedModel } from './apply-step.js';

const applyTenantModel = vi.fn();
vi.mock('../../api/transport.js', async (importOriginal) => ({
  ...(await importOriginal<object>()),
  client: () => ({ applyTenantModel }),
}));

afterEach(() => {
  cleanup();
  applyTenantModel.mockReset();
});

const plan: PlannedModel = { document: 'apiVersion: authz/v1\n', fileName: 'm.yaml', prune: false, revision: 4n, writes: 1 };

function renderStep(onPlanAgain = () => {}) {
  render(
    <QueryClientProvider client={new QueryClient()}>
      <ApplyStep tenantId="tenant_1" tenantName="acme" plan={plan} onPlanAgain={onPlanAgain} planningAgain={false} />
    </QueryClientProvider>,
  );
}

describe('ApplyStep', () => {
  it('asks first, then applies at the plan revision and links the new revision in the history', async () => {
    applyTenantModel.mockResolvedValue({ revision: 5n, changes: [] });
    renderStep();
    expect(applyTenantModel).not.toHaveBeenCalled();
    fireEvent.click(screen.getByRole('button', { name: 'Apply this plan…' }));
    expect(screen.getByRole('heading', { name: 'Apply 1 change to tenant acme?' })).toBeTruthy();
    fireEvent.click(screen.getByRole('button', { name: 'Apply now' }));
    expect(await screen.findByRole('heading', { name: 'Applied: the tenant is at revision 5' })).toBeTruthy();
    expect(applyTenantModel).toHaveBeenCalledWith({ tenantId: 'tenant_1', document: plan.document, fileName: 'm.yaml', prune: false, expectedRevision: 4n });
    expect(screen.getByRole('link', { name: 'See revision 5 in the history' }).getAttribute('href')).toBe('/history?fromRevision=5&toRevision=5');
  });

  it('cancels without applying', () => {
    renderStep();
    fireEvent.click(screen.getByRole('button', { name: 'Apply this plan…' }));
    fireEvent.click(screen.getByRole('button', { name: 'Cancel' }));
    expect(screen.getByRole('button', { name: 'Apply this plan…' })).toBeTruthy();
    expect(applyTenantModel).not.toHaveBeenCalled();
  });

  it('shows a stale plan with the server message and offers to plan again', async () => {
    applyTenantModel.mockRejectedValue(new ConnectError('the tenant is at revision 6, not at the expected revision 4: plan again', Code.Aborted));
    const again = vi.fn();
    renderStep(again);
    fireEvent.click(screen.getByRole('button', { name: 'Apply this plan…' }));
    fireEvent.click(screen.getByRole('button', { name: 'Apply now' }));
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toContain('The tenant changed after this plan (made at revision 4): nothing was applied');
    expect(alert.textContent).toContain('the tenant is at revision 6, not at the expected revision 4: plan again');
    fireEvent.click(screen.getByRole('button', { name: 'Plan again' }));
    expect(again).toHaveBeenCalledOnce();
  });

  it('says there is nothing to apply when the plan writes nothing', () => {
    render(
      <QueryClientProvider client={new QueryClient()}>
        <ApplyStep tenantId="tenant_1" tenantName="acme" plan={{ ...plan, writes: 0 }} onPlanAgain={() => {}} planningAgain={false} />
      </QueryClientProvider>,
    );
    expect(screen.getByText('Nothing to apply: the tenant stays at revision 4.')).toBeTruthy();
    expect(screen.queryByRole('button')).toBeNull();
  });
});
