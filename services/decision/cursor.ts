/**
 * The cursor of a listing (LookupResources, LookupSubjects): base64url JSON `{v, r, a, q}`, the
 * revision the listing started at (`r`), the last id of the page before (`a`), and a digest of
 * the listing's kind and query (`q`), so a cursor cannot page another query nor a listing of
 * the other kind. It is not signed: a forged one can only start a listing of the caller's own
 * query after an id of its choice, which any caller may ask.
 *
 * Pinned revision: every page answers at `r`. The control plane reads the tenant at `r` from its
 * history once it has moved past it (`failed_precondition` on `cursor` when the history no longer
 * holds `r`); a sidecar holds only its current state, so a page asked once it has moved past `r`
 * is `failed_precondition` on `cursor` (the listing must start again) rather than a mix of
 * states. A process still behind `r` waits for it as for `consistency.minRevision`.
 */
import { createHash } from 'node:crypto';
import type { TenantIndex } from '../engine/mod.js';
import { constraint, invalid } from '../common/errors.js';
import type { CallSignal, DecisionSource, Freshness } from './decide.js';

/** A listing page's size when the request gives none, and the most it may ask. */
export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;

/** A listing request's `pageSize`: 1 to MAX_PAGE_SIZE; 0 or absent means DEFAULT_PAGE_SIZE. */
export function pageSizeOf(raw: unknown): number {
  const size = raw ?? 0;
  if (typeof size !== 'number' || !Number.isInteger(size) || size < 0 || size > MAX_PAGE_SIZE) {
    throw invalid('pageSize', `must be an integer from 1 to ${MAX_PAGE_SIZE} (0 or absent: ${DEFAULT_PAGE_SIZE})`);
  }
  return size === 0 ? DEFAULT_PAGE_SIZE : size;
}

/** What a listing lists: part of every cursor's digest. */
export type ListingKind = 'resources' | 'subjects';

/** Longer than any cursor this module writes (a 256-character id and the rest). */
const MAX_CURSOR_CHARS = 1024;

export interface Cursor {
  /** The revision the listing started at. */
  r: number;
  /** The last id of the previous page. */
  a: string;
  /** The digest of the listing's kind and query. */
  q: string;
}

/** The digest of a listing: its kind and the fields of its query that every page must repeat. */
export function listingDigest(kind: ListingKind, query: readonly unknown[]): string {
  return createHash('sha256').update(JSON.stringify([kind, ...query])).digest('base64url').slice(0, 22);
}

export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify({ v: 1, r: c.r, a: c.a, q: c.q })).toString('base64url');
}

const RPC: Record<ListingKind, string> = { resources: 'LookupResources', subjects: 'LookupSubjects' };

/**
 * The cursor a previous page of this listing returned; anything else is invalid_argument on
 * `cursor` (`fields` names what must stay the first page's, for the message).
 */
export function decodeCursor(text: string, kind: ListingKind, q: string, fields: string): Cursor {
  const bad = () => invalid('cursor', `is not a cursor a ${RPC[kind]} page returned`);
  if (text.length > MAX_CURSOR_CHARS || !/^[A-Za-z0-9_-]+$/.test(text)) throw bad();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  const c = parsed as Record<string, unknown> | null;
  if (
    typeof c !== 'object' || c === null || Array.isArray(c) || c.v !== 1 ||
    typeof c.r !== 'number' || !Number.isSafeInteger(c.r) || c.r < 0 ||
    typeof c.a !== 'string' || c.a === '' || c.a.length > 256 || typeof c.q !== 'string'
  ) throw bad();
  if (c.q !== q) throw invalid('cursor', `was returned for another listing: ${fields} must stay those of the first page`);
  return { r: c.r, a: c.a, q: c.q };
}

/**
 * The index a page of a listing answers from: for a first page, as fresh as asked; for a later
 * one, at its cursor's revision (a process behind it waits for it, the control plane reads it
 * from the history once it has moved past it, a sidecar past it refuses). Nothing awaits after
 * it returns, so the index cannot move under the page. `onTenant` learns the index's tenant.
 */
export async function listingIndex<C>(
  source: DecisionSource<C>, caller: C, scopeId: string, freshness: Freshness, cursor: Cursor | undefined, deadline: number, signal?: CallSignal,
  onTenant?: (tenantId: string) => void,
): Promise<TenantIndex> {
  const wanted: Freshness = cursor === undefined ? freshness : { minRevision: cursor.r, fullyConsistent: false, pinned: cursor.r };
  const index = await source.indexFor(caller, scopeId, '', wanted, deadline, signal);
  if (cursor !== undefined && index.revision !== cursor.r) {
    throw constraint(
      `the tenant moved from revision ${cursor.r}, where this listing started, to revision ${index.revision}; ` +
        'pages of one listing answer at one revision, so start the listing again without a cursor',
      'cursor',
    );
  }
  if (onTenant !== undefined) {
    const tenantId = index.scope(scopeId)?.tenantId;
    if (tenantId !== undefined) onTenant(tenantId);
  }
  return index;
}
