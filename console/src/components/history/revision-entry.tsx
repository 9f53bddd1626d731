/** One revision of the timeline: who wrote it, when, why, and the changes it made. */
import { Link } from 'wouter';
import { formatTime } from '../../format.js';
import { EntityChangeItem } from './entity-change.js';
import type { RevisionGroup } from './timeline-groups.js';

/** Changes shown opened when a revision has this many or fewer on the page; more start closed to keep the page scannable. */
const OPEN_UP_TO = 3;

export function RevisionEntry({ group, continuesFromPrevious, mayContinue }: { group: RevisionGroup; continuesFromPrevious: boolean; mayContinue: boolean }) {
  const revision = String(group.revision);
  const headingId = `revision-${revision}`;
  const writer = group.writer;
  return (
    <li className="revision-entry">
      <article aria-labelledby={headingId}>
        <h3 id={headingId}>Revision {revision}</h3>
        <dl className="facts">
          <dt>When</dt>
          <dd>{group.time ? formatTime(group.time) : <span className="muted">not recorded</span>}</dd>
          <dt>Who</dt>
          <dd>
            {writer ? (
              <>
                key <Link href={`/history?writerKeyId=${encodeURIComponent(writer.keyId)}`} aria-label={`Changes written with key ${writer.keyId}`}><code>{writer.keyId}</code></Link>
                {' '}as subject <Link href={`/history?writerSubjectId=${encodeURIComponent(writer.subjectId)}`} aria-label={`Changes written by subject ${writer.subjectId}`}><code>{writer.subjectId}</code></Link>
              </>
            ) : <span className="muted">not recorded (written before writers were kept)</span>}
          </dd>
          <dt>Why</dt>
          <dd>{group.reason ? group.reason : <span className="muted">no reason given</span>}</dd>
        </dl>
        <p className="revision-links">
          <Link href={`/playground?atRevision=${revision}`}>Evaluate a check as of revision {revision}</Link>
        </p>
        {continuesFromPrevious && <p className="help">Earlier changes of this revision are on the previous page.</p>}
        <ul className="entity-changes" aria-label={`Changes of revision ${revision}`}>
          {group.changes.map((c, i) => <EntityChangeItem key={`${c.entityId}-${i}`} change={c} open={group.changes.length <= OPEN_UP_TO} />)}
        </ul>
        {mayContinue && <p className="help">This revision may have more changes on the next page.</p>}
      </article>
    </li>
  );
}
