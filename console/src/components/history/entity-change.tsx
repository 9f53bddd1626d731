/** One entity's change within a revision: what happened to it, and its fields before and after. */
import { Link } from 'wouter';
import type { EntityChange } from '../../../../gen/authz/v1/change_service_pb.js';
import { changeAction, diffFields, entityName, formatValue, type FieldDiff } from './diff.js';

export function EntityChangeItem({ change, open }: { change: EntityChange; open: boolean }) {
  const action = changeAction(change.op, change.before);
  const name = entityName(change.before, change.after);
  const fields = diffFields(change.before, change.after);
  const moved = fields.filter((f) => f.change !== 'unchanged');
  const unchanged = fields.filter((f) => f.change === 'unchanged');
  return (
    <li className="entity-change">
      <details open={open}>
        <summary>
          <span className={`badge badge-${action}`}>{action}</span> {change.kind}{name && <> <strong>{name}</strong></>} <code>{change.entityId}</code>
        </summary>
        <p className="change-links">
          <Link href={`/history?entityId=${encodeURIComponent(change.entityId)}`}>Every change of this entity</Link>
        </p>
        {moved.length > 0 ? <DiffTable fields={moved} caption={captionOf(action)} /> : <p className="empty">No field changed.</p>}
        {unchanged.length > 0 && (
          <details className="unchanged">
            <summary>{unchanged.length} unchanged {unchanged.length === 1 ? 'field' : 'fields'}</summary>
            <DiffTable fields={unchanged} caption="Fields the change left as they were" />
          </details>
        )}
      </details>
    </li>
  );
}

function captionOf(action: 'create' | 'update' | 'delete'): string {
  if (action === 'create') return 'Created with these fields (there is no before)';
  if (action === 'delete') return 'Deleted: the fields it had (there is no after)';
  return 'Fields before and after the change';
}

function DiffTable({ fields, caption }: { fields: readonly FieldDiff[]; caption: string }) {
  return (
    <table className="diff">
      <caption>{caption}</caption>
      <thead>
        <tr><th scope="col">Field</th><th scope="col">Before</th><th scope="col">After</th></tr>
      </thead>
      <tbody>
        {fields.map((f) => (
          <tr key={f.path.join('\u0000')} className={`diff-${f.change}`}>
            <th scope="row"><code>{f.path.join('.')}</code> <span className="change-word">{f.change}</span></th>
            <td>{f.before !== undefined ? <code className="before">{formatValue(f.before)}</code> : <span className="muted">none</span>}</td>
            <td>{f.after !== undefined ? <code className="after">{formatValue(f.after)}</code> : <span className="muted">none</span>}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
