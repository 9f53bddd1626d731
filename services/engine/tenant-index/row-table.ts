/**
 * The {@link KindStore} of a kind whose rows the index keeps in a map by id (every kind but
 * resources and ownership grants, which live in their nodes), with the owning family's
 * derived entries maintained through its hooks.
 */
import type { EntityKind, RowsByKind } from '../model.js';
import type { KindStore } from './types.js';

/** What a family does around the rows of one of its kinds. */
export interface RowHooks<R> {
  /** Fields that must be strings. */
  readonly required: readonly string[];
  /** Why a row whose required fields are strings is still malformed, or null. */
  invalid?(row: Record<string, unknown>): string | null;
  /**
   * The row as the index keeps it: kinds a tenant holds by the hundred thousand keep only the
   * fields of their model interface, and their references to other rows use the referred row's
   * own id string (one copy of each id instead of one per referring row). Absent: kept as given.
   */
  slim?(row: R): R;
  /** Adds the derived entries of a row just stored; `old` is the row it replaced. */
  index?(row: R, old: R | undefined): void;
  /** Removes every derived entry a row contributed (the row is still stored). */
  unindex?(row: R): void;
  /** Runs once the row with this id left the map. */
  removed?(id: string): void;
}

export class RowTable<K extends EntityKind> implements KindStore<K> {
  readonly rows = new Map<string, RowsByKind[K]>();
  readonly required: readonly string[];

  constructor(private readonly hooks: RowHooks<RowsByKind[K]>) {
    this.required = hooks.required;
  }

  invalid(row: Record<string, unknown>): string | null {
    return this.hooks.invalid === undefined ? null : this.hooks.invalid(row);
  }

  get(id: string): RowsByKind[K] | undefined {
    return this.rows.get(id);
  }

  upsert(given: RowsByKind[K]): void {
    const hooks = this.hooks;
    const row = hooks.slim === undefined ? given : hooks.slim(given);
    const old = this.rows.get(row.id);
    if (old !== undefined && hooks.unindex !== undefined) hooks.unindex(old);
    this.rows.set(row.id, row);
    if (hooks.index !== undefined) hooks.index(row, old);
  }

  remove(id: string): void {
    const old = this.rows.get(id);
    if (old === undefined) return;
    if (this.hooks.unindex !== undefined) this.hooks.unindex(old);
    this.rows.delete(id);
    if (this.hooks.removed !== undefined) this.hooks.removed(id);
  }

  count(): number {
    return this.rows.size;
  }
}

/** Copies `key` from `from` to `to` when present (keeps null; leaves absent absent), for `slim`. */
export function copyField(to: Record<string, unknown>, from: Record<string, unknown>, key: string): void {
  const v = from[key];
  if (v !== undefined) to[key] = v;
}
