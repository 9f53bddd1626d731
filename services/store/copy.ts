/**
 * PostgreSQL's `COPY … FROM STDIN` for bulk writes (pg-copy-streams), on the connection of the
 * transaction that runs it: rows as COPY's text format, one column per stored property.
 */
import { finished } from 'node:stream/promises';
import type { EntityManager } from '@mikro-orm/postgresql';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';

/** COPY text format: a backslash, tab, newline or carriage return in a value is escaped. */
const SPECIAL = /[\\\t\n\r]/;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** A text value as one field of COPY's text format. */
export function copyText(s: string): string {
  return SPECIAL.test(s) ? s.replace(/[\\\t\n\r]/g, (c) => ESCAPES[c]) : s;
}

/** SQL NULL in COPY's text format. */
export const COPY_NULL = '\\N';

/** How a value of a column becomes COPY text: a JSON column's value is its JSON text. */
export function copyField(v: unknown, json: boolean): string {
  if (v === null || v === undefined) return COPY_NULL;
  if (json) return copyText(JSON.stringify(v));
  if (v instanceof Date) return v.toISOString();
  return typeof v === 'string' ? copyText(v) : String(v);
}

/**
 * The pg connection of the entity manager's transaction (knex hands out that one connection to
 * every query of the transaction), so the COPY is part of it: all or nothing.
 */
async function transactionConnection(em: EntityManager): Promise<pg.Client> {
  const trx = em.getTransactionContext() as { client?: { acquireConnection(): Promise<pg.Client> } } | undefined;
  if (!trx?.client) throw new Error('COPY runs inside a write transaction');
  return trx.client.acquireConnection();
}

/** Bytes of COPY data sent in one CopyData message. */
const CHUNK_BYTES = 1 << 20;

/**
 * Runs `copy <table> (<columns>) from stdin` in the entity manager's transaction with `lines` (each
 * a row of COPY text ending in a newline). A failure (a constraint, a malformed value) is
 * PostgreSQL's error, converted as every query's (MikroORM's typed exceptions), and fails the
 * transaction.
 */
export async function copyInto(em: EntityManager, table: string, columns: string[], lines: string[]): Promise<void> {
  if (lines.length === 0) return;
  const conn = await transactionConnection(em);
  const stream = conn.query(copyFrom(`copy "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) from stdin`));
  try {
    let chunk = '';
    for (const line of lines) {
      chunk += line;
      if (chunk.length >= CHUNK_BYTES) {
        stream.write(chunk);
        chunk = '';
      }
    }
    if (chunk.length > 0) stream.end(chunk);
    else stream.end();
    await finished(stream);
  } catch (err) {
    throw em.getPlatform().getExceptionConverter().convertException(err as Error);
  }
}
