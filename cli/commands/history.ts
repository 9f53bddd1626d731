/**
 * `authz history`: the tenant's change log (ChangeService.ListChanges), oldest first, as a log
 * reads: each revision with when, who and why, then its changes with the fields that changed.
 */
import type { Command } from 'commander';
import type { EntityChange } from '../../gen/authz/v1/change_service_pb.js';
import type { CliCommand } from '../command.js';
import type { CliContext } from '../context.js';
import { UsageError } from '../exit.js';
import { cell } from '../output.js';

interface HistoryOptions {
  kind?: string;
  entity?: string;
  since?: string;
  fromRevision?: number;
  limit: number;
}

/** The most changes one page asks for (the service's page limit). */
const PAGE = 1000;

interface ChangeData {
  revision: number;
  time: string;
  writer: { keyId: string; subjectId: string } | null;
  reason: string | null;
  op: string;
  kind: string;
  entityId: string;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
}

function changeData(c: EntityChange): ChangeData {
  return {
    revision: Number(c.revision),
    time: c.time ? new Date(Number(c.time.seconds) * 1000 + Math.floor(c.time.nanos / 1e6)).toISOString() : '',
    writer: c.writer ? { keyId: c.writer.keyId, subjectId: c.writer.subjectId } : null,
    reason: c.reason === '' ? null : c.reason,
    op: c.op, kind: c.kind, entityId: c.entityId,
    before: (c.before as Record<string, unknown> | undefined) ?? null,
    after: (c.after as Record<string, unknown> | undefined) ?? null,
  };
}

/** `field: before → after` for each field whose value differs (a create lists its set fields, a delete none). */
export function changedFields(before: Record<string, unknown> | null, after: Record<string, unknown> | null): string[] {
  if (after === null) return [];
  const out: string[] = [];
  for (const key of Object.keys(after)) {
    const was = before?.[key];
    const now = after[key];
    if (JSON.stringify(was) === JSON.stringify(now)) continue;
    if (before === null && (now === '' || now === null || (Array.isArray(now) && now.length === 0))) continue;
    out.push(`${key}: ${cell(was)} → ${cell(now)}`);
  }
  return out;
}

function render(ctx: CliContext, changes: ChangeData[]): string {
  const s = ctx.styles;
  const lines: string[] = [];
  let revision: number | undefined;
  for (const c of changes) {
    if (c.revision !== revision) {
      revision = c.revision;
      const who = c.writer ? `${c.writer.keyId} (${c.writer.subjectId})` : 'writer not recorded';
      lines.push(`${s.bold(`revision ${c.revision}`)}  ${c.time}  ${who}${c.reason ? `  ${JSON.stringify(c.reason)}` : ''}`);
    }
    const op = c.op === 'delete' ? 'delete' : c.before === null ? 'create' : 'update';
    lines.push(`  ${op} ${c.kind} ${c.entityId}`);
    for (const f of changedFields(c.before, c.after)) lines.push(`    ${s.dim(f)}`);
  }
  return lines.length > 0 ? lines.join('\n') : 'No changes.';
}

async function history(ctx: CliContext, o: HistoryOptions): Promise<void> {
  const tenantId = ctx.requireTenant('history');
  if (o.since !== undefined && Number.isNaN(Date.parse(o.since))) throw new UsageError(`--since: not a time: ${o.since} (e.g. 2025-01-31T12:00:00Z)`);
  const client = ctx.client();
  const out: ChangeData[] = [];
  let cursor = '';
  let more = false;
  do {
    const page = await client.changes.listChanges({
      tenantId, kind: o.kind ?? '', entityId: o.entity ?? '',
      fromTime: o.since !== undefined ? new Date(o.since).toISOString() : '',
      fromRevision: o.fromRevision !== undefined ? BigInt(o.fromRevision) : undefined,
      pageSize: Math.min(PAGE, o.limit - out.length), cursor,
    });
    out.push(...page.changes.map(changeData));
    cursor = page.nextCursor;
    more = cursor !== '';
  } while (more && out.length < o.limit);
  const data = { tenant: tenantId, changes: out, more };
  ctx.emit(data, () => {
    const text = render(ctx, out);
    if (!more) return text;
    const next = out[out.length - 1].revision;
    return `${text}\n${ctx.styles.dim(`More changes follow: raise --limit, or continue with --from-revision ${next} (revision ${next} is shown again).`)}`;
  });
}

function positive(flag: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag}: must be a whole number of at least 1, got ${value}`);
    return n;
  };
}

export const historyCommand: CliCommand = {
  register(program: Command, cli) {
    program
      .command('history')
      .summary('the tenant\'s change log: who changed what, when and why')
      .description(
        'Lists the changes of the tenant (--tenant) oldest first, each revision with its time, the API key and subject that wrote it and the reason it gave (x-change-reason), ' +
          'then each change (create, update, delete) with the fields that changed, before → after. Up to --limit changes; the change log holds what retention keeps. ' +
          'With -o json or yaml, every change with its before and after whole.',
      )
      .option('--kind <kind>', 'only changes of this kind (scope, role, resource, membership, ...)')
      .option('--entity <id>', 'only changes of this entity')
      .option('--since <time>', 'only revisions written at or after this time (RFC 3339, e.g. 2025-01-31T12:00:00Z)')
      .option('--from-revision <n>', 'only revisions from this one on', positive('--from-revision'))
      .option('--limit <n>', 'the most changes to print', positive('--limit'), 100)
      .action(cli.action<HistoryOptions>(history));
  },
};
