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

/** A column as copyData writes it: its property name and whether it holds JSON. */
export interface CopyColumn {
  name: string;
  columnTypes: string[];
}

/**
 * The COPY text of `rows` (one line per row, a field per column; undefined and null are NULL, a
 * Date its ISO text, a JSON column its JSON text) and of their change-log entries: `logHead`,
 * the entry's `seq` (from `seq`), `logMid`, the row's id, its JSON (the columns by property
 * name, as JSON.stringify writes the row), `logTail`. One pass, each value converted once.
 */
export function copyData(columns: readonly CopyColumn[], rows: readonly Record<string, unknown>[], logHead: string, seq: number, logMid: string, logTail: string): { data: string; log: string } {
  const names = columns.map((c) => c.name);
  const keys = names.map((n) => `${JSON.stringify(n)}:`);
  const json = columns.map((c) => c.columnTypes[0].startsWith('json'));
  let lastDate: Date | undefined;
  let lastIso = '';
  let data = '';
  let log = '';
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i];
    let line = '';
    let text = '{';
    for (let k = 0; k < names.length; k++) {
      const v = r[names[k]];
      let field: string;
      let value: string | undefined;
      if (v === undefined || v === null) {
        field = '\\N';
        value = v === null ? 'null' : undefined;
      } else if (v instanceof Date) {
        if (v !== lastDate) {
          lastDate = v;
          lastIso = v.toISOString();
        }
        field = lastIso;
        value = `"${lastIso}"`;
      } else if (json[k]) {
        value = JSON.stringify(v);
        field = copyText(value);
      } else if (typeof v === 'string') {
        field = copyText(v);
        value = JSON.stringify(v);
      } else {
        field = String(v);
        value = JSON.stringify(v);
      }
      line += k === 0 ? field : `\t${field}`;
      if (value !== undefined) text += text.length === 1 ? `${keys[k]}${value}` : `,${keys[k]}${value}`;
    }
    data += `${line}\n`;
    log += `${logHead}${seq + i}${logMid}${copyText(String(r.id))}\t${copyText(`${text}}`)}${logTail}`;
  }
  return { data, log };
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

/**
 * Runs `copy <table> (<columns>) from stdin` in the entity manager's transaction with `data` (rows
 * of COPY text, each ending in a newline). A failure (a constraint, a malformed value) is
 * PostgreSQL's error, converted as every query's (MikroORM's typed exceptions), and fails the
 * transaction.
 */
export async function copyInto(em: EntityManager, table: string, columns: string[], data: string): Promise<void> {
  if (data.length === 0) return;
  const conn = await transactionConnection(em);
  const stream = conn.query(copyFrom(`copy "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) from stdin`));
  try {
    stream.end(data);
    await finished(stream);
  } catch (err) {
    throw em.getPlatform().getExceptionConverter().convertException(err as Error);
  }
}
