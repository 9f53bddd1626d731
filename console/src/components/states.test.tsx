// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest';
import { cleanup, render, screen } from '@testing-library/react';
import { Code, ConnectError } from '@connectrpc/connect';
import { ErrorBox } from './states.js';

afterEach(cleanup);

describe('ErrorBox', () => {
  it('says which keys a tier refusal needs, as an alert', () => {
    render(<ErrorBox error={new ConnectError('a user key cannot call authz.v1.TenancyService.CreateTenant (tier platform: platform keys)', Code.PermissionDenied)} />);
    const alert = screen.getByRole('alert');
    expect(alert.textContent).toContain('Not allowed with this key');
    expect(alert.textContent).toContain('tier platform: platform keys');
  });

  it('offers a retry only when given one', () => {
    render(<ErrorBox error={new Error('boom')} />);
    expect(screen.queryByRole('button')).toBeNull();
    cleanup();
    render(<ErrorBox error={new Error('boom')} retry={() => {}} />);
    expect(screen.getByRole('button', { name: 'Try again' })).toBeTruthy();
  });
});
