/** The tenant a view belongs to, read once per tenant from the URL's `/t/<id>`. */
import { createContext, useContext, type ReactNode } from 'react';
import { useQuery } from '@tanstack/react-query';
import { TenancyService } from '../../gen/authz/v1/tenancy_service_pb.js';
import type { Tenant } from '../../gen/authz/v1/tenancy_pb.js';
import { client } from './api/transport.js';
import { QueryState } from './components/states.js';

const Context = createContext<Tenant | null>(null);

export function TenantProvider({ id, children }: { id: string; children: ReactNode }) {
  const query = useQuery({ queryKey: ['tenant', id], queryFn: async () => (await client(TenancyService).getTenant({ id })).tenant! });
  return <QueryState query={query} what="the tenant">{(tenant) => <Context.Provider value={tenant}>{children}</Context.Provider>}</QueryState>;
}

export function useTenant(): Tenant {
  const t = useContext(Context);
  if (t === null) throw new Error('useTenant outside TenantProvider');
  return t;
}
