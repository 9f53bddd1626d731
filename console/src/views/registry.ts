/**
 * The views of a tenant, in the order the navigation shows them. Each loads on demand, so the
 * console's first load carries only the shell and the sign-in.
 */
import { lazy, type ComponentType, type LazyExoticComponent } from 'react';

export interface TenantView {
  /** The path under `/console/t/<tenant>/`. */
  readonly path: string;
  readonly title: string;
  readonly component: LazyExoticComponent<ComponentType>;
}

export const TENANT_VIEWS: readonly TenantView[] = [
  { path: 'scopes', title: 'Scopes', component: lazy(() => import('./scopes.js')) },
  { path: 'roles', title: 'Roles', component: lazy(() => import('./roles.js')) },
  { path: 'resource-types', title: 'Resource types', component: lazy(() => import('./resource-types.js')) },
  { path: 'resources', title: 'Resources', component: lazy(() => import('./resources.js')) },
  { path: 'subjects', title: 'Subjects', component: lazy(() => import('./subjects.js')) },
  { path: 'policies', title: 'Policies', component: lazy(() => import('./policies.js')) },
  { path: 'playground', title: 'Playground', component: lazy(() => import('./playground.js')) },
  { path: 'access', title: 'Access', component: lazy(() => import('./access.js')) },
  { path: 'history', title: 'History', component: lazy(() => import('./history.js')) },
  { path: 'model', title: 'Model as code', component: lazy(() => import('./model.js')) },
];
