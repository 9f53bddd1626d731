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

const keepRow = <R>(row: R): R => row;
const noError = (): null => null;
const nothing = (): void => {};

export class RowTable<K extends EntityKind> implements KindStore<K> {
  readonly rows = new Map<string, RowsByKind[K]>();
  readonly required: readonly string[];
  // The hooks as fields of one class, absent ones as no-ops: every table has the same shape,
  // so indexing a row reads them without a lookup that depends on the family.
  private readonly check: (row: Record<string, unknown>) => string | null;
  private readonly slim: (row: RowsByKind[K]) => RowsByKind[K];
  private readonly index: (row: RowsByKind[K], old: RowsByKind[K] | undefined) => void;
  private readonly unindex: (row: RowsByKind[K]) => void;
  private readonly removed: (id: string) => void;

  constructor(hooks: RowHooks<RowsByKind[K]>) {
    this.required = hooks.required;
    this.check = hooks.invalid ?? noError;
    this.slim = hooks.slim ?? keepRow;
    this.index = hooks.index ?? nothing;
    this.unindex = hooks.unindex ?? nothing;
    this.removed = hooks.removed ?? nothing;
  }

  invalid(row: Record<string, unknown>): string | null {
    return this.check(row);
  }

  get(id: string): RowsByKind[K] | undefined {
    return this.rows.get(id);
  }

  upsert(given: RowsByKind[K]): void {
    const row = this.slim(given);
    const old = this.rows.get(row.id);
    if (old !== undefined) this.unindex(old);
    this.rows.set(row.id, row);
    this.index(row, old);
  }

  remove(id: string): void {
    const old = this.rows.get(id);
    if (old === undefined) return;
    this.unindex(old);
    this.rows.delete(id);
    this.removed(id);
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
