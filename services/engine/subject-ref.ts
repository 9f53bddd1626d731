/**
 * A request's subject named by the caller's own id (`externalId`, optionally with its type),
 * resolved through the tenant index's hash table of external ids: no scan, no I/O.
 */
import { AmbiguousSubjectError } from './errors.js';
import type { SubjectNode, TenantIndex } from './tenant-index/mod.js';

function several(found: SubjectNode | readonly SubjectNode[]): found is readonly SubjectNode[] {
  return Array.isArray(found);
}

/**
 * The one subject with this external id (of `type` when given; an empty type is none), or
 * undefined when no subject has it. Throws AmbiguousSubjectError when several do.
 */
export function subjectByExternalId(index: TenantIndex, externalId: string, type: string | undefined): SubjectNode | undefined {
  const found = index.subjectsByExternalId(externalId, type || undefined);
  if (found === undefined || !several(found)) return found;
  const types = [...new Set(found.map((n) => String(n.type)))].sort();
  throw new AmbiguousSubjectError(externalId, found.length, types);
}
