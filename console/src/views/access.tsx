/**
 * Who holds what: a subject's effective permissions (GetEffectivePermissions), who may perform an
 * action (LookupSubjects, with how each is granted) and on what (LookupResources), the lookups a
 * page at a time by their cursors. Every row links to the playground with its check filled in.
 */
import { useState, type FormEvent, type ReactNode } from 'react';
import { Link } from 'wouter';
import { useQuery } from '@tanstack/react-query';
import { DecisionService, type Grant } from '../../../gen/authz/v1/decision_service_pb.js';
import { client } from '../api/transport.js';
import { Page } from '../components/page.js';
import { PAGE_SIZE, Paged, usePaged } from '../components/paged.js';
import { QueryState } from '../components/states.js';
import { playgroundHref, type CheckForm, type CheckLink, type ResourceBy, type SubjectBy } from '../components/playground/check-state.js';
import { ErrorSummary, SelectField, SuggestionProblems, TextField } from '../components/playground/fields.js';
import { useTenantLists, type TenantLists } from '../components/playground/tenant-lists.js';
import { Ref, TraceTree } from '../components/playground/trace-tree.js';
import { useTenant } from '../tenant.js';

export default function Access() {
  return (
    <Page title="Access">
      <p className="help">What a subject may do, and who may do what, as the decision engine answers it. Each row opens the same check in the playground, with its trace.</p>
      <SubjectPermissions />
      <WhoCan />
      <WhatCan />
    </Page>
  );
}

/** A field's problem, by the id of its input. */
interface Problem {
  id: string;
  message: string;
}

/** The required fields left empty: [input id, label, value]. */
function missing(fields: readonly [string, string, string][]): Problem[] {
  return fields.filter(([, , value]) => value.trim() === '').map(([id, label]) => ({ id, message: `${label}: required` }));
}

const errorFor = (problems: readonly Problem[], id: string) => problems.find((p) => p.id === id)?.message;

/** A lookup's form: its problems first, its fields, its button. */
function LookupForm({ titleId, problems, lists, onSubmit, button, children }: {
  titleId: string; problems: readonly Problem[]; lists: TenantLists; onSubmit: () => void; button: string; children: ReactNode;
}) {
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onSubmit();
  };
  return (
    <form className="lookup-form" onSubmit={submit} noValidate aria-labelledby={titleId}>
      <ErrorSummary errors={problems} />
      <div className="field-row">{children}</div>
      <SuggestionProblems queries={{ subjects: lists.queries.subjects, scopes: lists.queries.scopes, actions: lists.queries.permissions }} />
      <button type="submit" className="primary">{button}</button>
    </form>
  );
}

const SUBJECT_BY: { value: SubjectBy; label: string }[] = [{ value: 'externalId', label: 'External id' }, { value: 'subjectId', label: 'Subject id' }];

function SubjectFields({ prefix, by, value, onBy, onValue, lists, problems }: {
  prefix: string; by: SubjectBy; value: string; onBy: (by: SubjectBy) => void; onValue: (v: string) => void; lists: TenantLists; problems: readonly Problem[];
}) {
  return (
    <>
      <SelectField id={`${prefix}-subjectBy`} label="Subject by" value={by} onChange={onBy} options={SUBJECT_BY} />
      <TextField
        id={`${prefix}-subject`}
        label={by === 'externalId' ? 'Subject external id' : 'Subject id'}
        required
        value={value}
        onChange={onValue}
        error={errorFor(problems, `${prefix}-subject`)}
        suggestions={by === 'externalId' ? lists.suggest.externalIds : lists.suggest.subjectIds}
      />
    </>
  );
}

const actorOf = (by: SubjectBy, subject: string) => (by === 'externalId' ? { externalId: subject.trim() } : { subjectId: subject.trim() });

/** "Check" links of a table, each named by its row for a screen reader's list of links. */
function CheckLinkCell({ link, row }: { link: CheckLink; row: string }) {
  return <Link href={playgroundHref(link)}>Check<span className="visually-hidden"> {row}</span></Link>;
}

// What can this subject do

interface PermissionsAsk {
  by: SubjectBy;
  subject: string;
  scopeId: string;
  resourceId: string;
}

function SubjectPermissions() {
  const tenant = useTenant();
  const [form, setForm] = useState<PermissionsAsk>({ by: 'externalId', subject: '', scopeId: tenant.scopeId, resourceId: '' });
  const [problems, setProblems] = useState<Problem[]>([]);
  const [asked, setAsked] = useState<PermissionsAsk>();
  const lists = useTenantLists(form.scopeId.trim());
  const set = <K extends keyof PermissionsAsk>(key: K) => (value: PermissionsAsk[K]) => setForm({ ...form, [key]: value });
  const submit = () => {
    const found = missing([['eff-subject', 'Subject', form.subject], ['eff-scopeId', 'Scope id', form.scopeId]]);
    setProblems(found);
    if (found.length === 0) setAsked({ ...form, subject: form.subject.trim(), scopeId: form.scopeId.trim(), resourceId: form.resourceId.trim() });
  };
  return (
    <section aria-labelledby="eff-title">
      <h2 id="eff-title">What can this subject do</h2>
      <LookupForm titleId="eff-title" problems={problems} lists={lists} onSubmit={submit} button="Show permissions">
        <SubjectFields prefix="eff" by={form.by} value={form.subject} onBy={set('by')} onValue={set('subject')} lists={lists} problems={problems} />
        <TextField id="eff-scopeId" label="Scope id" required value={form.scopeId} onChange={set('scopeId')} error={errorFor(problems, 'eff-scopeId')} suggestions={lists.suggest.scopeIds} hint={lists.scopeHint(form.scopeId)} />
        <TextField id="eff-resourceId" label="Resource id" value={form.resourceId} onChange={set('resourceId')} suggestions={lists.suggest.resourceIds} hint="Optional: adds what the subject holds on this resource (ownership, tags)." />
      </LookupForm>
      {asked && <EffectivePermissions ask={asked} names={lists.names} />}
    </section>
  );
}

function EffectivePermissions({ ask, names }: { ask: PermissionsAsk; names: ReadonlyMap<string, string> }) {
  const query = useQuery({
    queryKey: ['decide', 'effective', ask],
    queryFn: async () =>
      client(DecisionService).getEffectivePermissions({
        scopeId: ask.scopeId,
        ...(ask.by === 'externalId' ? { subjectExternalId: ask.subject } : { subjectId: ask.subject }),
        ...(ask.resourceId ? { resourceId: ask.resourceId } : {}),
      }),
  });
  const who = ask.by === 'externalId' ? { externalId: ask.subject } : { subjectId: ask.subject };
  return (
    <QueryState query={query} what="the effective permissions">
      {(r) => r.permissions.length === 0 ? <p className="empty">No permissions at this scope (revision {String(r.revision)}).</p> : (
        <>
          <p className="help">{r.permissions.length} permissions at revision {String(r.revision)}.</p>
          <table>
            <thead><tr><th scope="col">Permission</th><th scope="col">From</th><th scope="col">Role</th><th scope="col"><span className="visually-hidden">Playground</span></th></tr></thead>
            <tbody>
              {r.permissions.map((p) => (
                <tr key={`${p.key} ${p.source} ${p.roleId}`}>
                  <td><code>{p.key}</code></td>
                  <td>{p.source}</td>
                  <td>{p.roleId ? <Ref id={p.roleId} names={names} /> : '-'}</td>
                  <td><CheckLinkCell row={p.key} link={{ ...who, scopeId: ask.scopeId, action: p.action, ...permissionResource(p, ask.resourceId) }} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </QueryState>
  );
}

/** The resource a permission's check names: the one asked about, else the one its pattern names (`*`: none). */
function permissionResource(p: { resourceType: string; resourcePattern: string }, resourceId: string): Partial<CheckLink> {
  if (resourceId) return { resourceId };
  if (p.resourcePattern === '*' || p.resourcePattern === '') return {};
  // A pattern is an external id or a resource id; ids carry the engine's `resource_` prefix.
  if (p.resourcePattern.startsWith('resource_')) return { resourceId: p.resourcePattern };
  return { resourceType: p.resourceType, externalResourceId: p.resourcePattern };
}

// Who can

/** The playground form's scope, action and resource fields: who-can asks about those alone. */
type WhoAsk = Pick<CheckForm, 'scopeId' | 'action' | 'resourceBy' | 'resourceType' | 'externalResourceId' | 'resourceId'>;

const RESOURCE_BY: { value: ResourceBy; label: string }[] = [
  { value: 'none', label: 'No resource' },
  { value: 'external', label: 'Type and external id' },
  { value: 'id', label: 'Resource id' },
];

function WhoCan() {
  const tenant = useTenant();
  const [form, setForm] = useState<WhoAsk>({ scopeId: tenant.scopeId, action: '', resourceBy: 'external', resourceType: '', externalResourceId: '', resourceId: '' });
  const [problems, setProblems] = useState<Problem[]>([]);
  const [asked, setAsked] = useState<WhoAsk>();
  const lists = useTenantLists(form.scopeId.trim());
  const set = <K extends keyof WhoAsk>(key: K) => (value: WhoAsk[K]) => setForm({ ...form, [key]: value });
  const submit = () => {
    const found = missing([
      ['who-scopeId', 'Scope id', form.scopeId],
      ['who-action', 'Action', form.action],
      ...(form.resourceBy === 'external' ? [['who-resourceType', 'Resource type', form.resourceType], ['who-externalResourceId', 'External resource id', form.externalResourceId]] as [string, string, string][] : []),
      ...(form.resourceBy === 'id' ? [['who-resourceId', 'Resource id', form.resourceId]] as [string, string, string][] : []),
    ]);
    setProblems(found);
    if (found.length === 0) setAsked(trimmed(form));
  };
  return (
    <section aria-labelledby="who-title">
      <h2 id="who-title">Who can</h2>
      <LookupForm titleId="who-title" problems={problems} lists={lists} onSubmit={submit} button="Find subjects">
        <TextField id="who-scopeId" label="Scope id" required value={form.scopeId} onChange={set('scopeId')} error={errorFor(problems, 'who-scopeId')} suggestions={lists.suggest.scopeIds} hint={lists.scopeHint(form.scopeId)} />
        <TextField id="who-action" label="Action" required value={form.action} onChange={set('action')} error={errorFor(problems, 'who-action')} suggestions={lists.suggest.actions} />
        <SelectField id="who-resourceBy" label="Resource by" value={form.resourceBy} onChange={set('resourceBy')} options={RESOURCE_BY} />
        {form.resourceBy === 'external' && (
          <>
            <TextField id="who-resourceType" label="Resource type" required value={form.resourceType} onChange={set('resourceType')} error={errorFor(problems, 'who-resourceType')} suggestions={lists.suggest.resourceTypes} />
            <TextField id="who-externalResourceId" label="External resource id" required value={form.externalResourceId} onChange={set('externalResourceId')} error={errorFor(problems, 'who-externalResourceId')} suggestions={lists.suggest.externalResourceIds(form.resourceType)} />
          </>
        )}
        {form.resourceBy === 'id' && (
          <TextField id="who-resourceId" label="Resource id" required value={form.resourceId} onChange={set('resourceId')} error={errorFor(problems, 'who-resourceId')} suggestions={lists.suggest.resourceIds} />
        )}
      </LookupForm>
      {/* Keyed by the question, so a new one starts again from its first page. */}
      {asked && <WhoCanResults key={JSON.stringify(asked)} ask={asked} names={lists.names} />}
    </section>
  );
}

function trimmed<T extends object>(form: T): T {
  return Object.fromEntries(Object.entries(form).map(([k, v]) => [k, typeof v === 'string' ? v.trim() : v])) as T;
}

function whoResource(ask: WhoAsk): Pick<CheckLink, 'resourceId' | 'resourceType' | 'externalResourceId'> {
  if (ask.resourceBy === 'id') return { resourceId: ask.resourceId };
  if (ask.resourceBy === 'external') return { resourceType: ask.resourceType, externalResourceId: ask.externalResourceId };
  return {};
}

function WhoCanResults({ ask, names }: { ask: WhoAsk; names: ReadonlyMap<string, string> }) {
  const resource = whoResource(ask);
  const paged = usePaged(['decide', 'who-can', ask], async (cursor) => {
    const r = await client(DecisionService).lookupSubjects({
      scopeId: ask.scopeId, action: ask.action, explain: true, pageSize: PAGE_SIZE, cursor,
      ...(ask.resourceBy !== 'none' ? { resource } : {}),
    });
    return { items: r.subjects, nextCursor: r.nextCursor };
  });
  return (
    <Paged paged={paged} what={`subjects who may ${ask.action}`}>
      {(subjects) => (
        <table aria-label={`Subjects who may ${ask.action}`}>
          <thead><tr><th scope="col">Subject</th><th scope="col">Type</th><th scope="col">Granted by</th><th scope="col"><span className="visually-hidden">Playground</span></th></tr></thead>
          <tbody>
            {subjects.map((s) => (
              <tr key={s.id}>
                <td><strong>{s.externalId}</strong> <code>{s.id}</code></td>
                <td>{s.type}</td>
                <td>
                  {s.grant ? <GrantText grant={s.grant} names={names} /> : '-'}
                  {s.grant && s.grant.trace.length > 0 && (
                    <details className="grant-trace">
                      <summary>Trace<span className="visually-hidden"> of {s.externalId}</span></summary>
                      <TraceTree trace={s.grant.trace} names={names} label={`Trace of ${s.externalId}'s decision`} />
                    </details>
                  )}
                </td>
                <td><CheckLinkCell row={s.externalId} link={{ subjectId: s.id, scopeId: ask.scopeId, action: ask.action, ...resource }} /></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Paged>
  );
}

/** How a subject is granted, in words with the entities behind it. */
export function GrantText({ grant, names }: { grant: Grant; names: ReadonlyMap<string, string> }) {
  const parts: ReactNode[] = [<code key="reason">{grant.reason}</code>];
  if (grant.roleId) parts.push(<span key="role"> role <Ref id={grant.roleId} names={names} /></span>);
  if (grant.membershipId) parts.push(<span key="m"> through membership <code>{grant.membershipId}</code></span>);
  if (grant.tagBindingId) parts.push(<span key="t"> through tag binding <code>{grant.tagBindingId}</code></span>);
  if (grant.ownershipGrantId) parts.push(<span key="o"> through ownership grant <code>{grant.ownershipGrantId}</code></span>);
  if (grant.sourceScopeId) parts.push(<span key="s"> at <Ref id={grant.sourceScopeId} names={names} /></span>);
  if (grant.ancestorResourceId) parts.push(<span key="a"> on ancestor <Ref id={grant.ancestorResourceId} names={names} /></span>);
  if (grant.policyId) parts.push(<span key="p"> by policy <Ref id={grant.policyId} names={names} /></span>);
  return <span className="grant">{parts}</span>;
}

// What can

interface WhatAsk {
  by: SubjectBy;
  subject: string;
  scopeId: string;
  action: string;
  resourceType: string;
}

function WhatCan() {
  const tenant = useTenant();
  const [form, setForm] = useState<WhatAsk>({ by: 'externalId', subject: '', scopeId: tenant.scopeId, action: '', resourceType: '' });
  const [problems, setProblems] = useState<Problem[]>([]);
  const [asked, setAsked] = useState<WhatAsk>();
  const lists = useTenantLists(form.scopeId.trim());
  const set = <K extends keyof WhatAsk>(key: K) => (value: WhatAsk[K]) => setForm({ ...form, [key]: value });
  const submit = () => {
    const found = missing([['what-subject', 'Subject', form.subject], ['what-scopeId', 'Scope id', form.scopeId], ['what-action', 'Action', form.action]]);
    setProblems(found);
    if (found.length === 0) setAsked(trimmed(form));
  };
  return (
    <section aria-labelledby="what-title">
      <h2 id="what-title">What can</h2>
      <LookupForm titleId="what-title" problems={problems} lists={lists} onSubmit={submit} button="Find resources">
        <SubjectFields prefix="what" by={form.by} value={form.subject} onBy={set('by')} onValue={set('subject')} lists={lists} problems={problems} />
        <TextField id="what-scopeId" label="Scope id" required value={form.scopeId} onChange={set('scopeId')} error={errorFor(problems, 'what-scopeId')} suggestions={lists.suggest.scopeIds} hint={lists.scopeHint(form.scopeId)} />
        <TextField id="what-action" label="Action" required value={form.action} onChange={set('action')} error={errorFor(problems, 'what-action')} suggestions={lists.suggest.actions} />
        <TextField id="what-resourceType" label="Resource type" value={form.resourceType} onChange={set('resourceType')} suggestions={lists.suggest.resourceTypes} hint="Optional: only resources of this type." />
      </LookupForm>
      {asked && <WhatCanResults key={JSON.stringify(asked)} ask={asked} names={lists.names} />}
    </section>
  );
}

function WhatCanResults({ ask, names }: { ask: WhatAsk; names: ReadonlyMap<string, string> }) {
  const paged = usePaged(['decide', 'what-can', ask], async (cursor) => {
    const r = await client(DecisionService).lookupResources({
      actor: actorOf(ask.by, ask.subject), scopeId: ask.scopeId, action: ask.action, pageSize: PAGE_SIZE, cursor,
      ...(ask.resourceType ? { resourceType: ask.resourceType } : {}),
    });
    return { items: r.resources, nextCursor: r.nextCursor };
  });
  return (
    <Paged paged={paged} what={`resources ${ask.subject} may ${ask.action}`}>
      {(resources) => (
        <table aria-label={`Resources ${ask.subject} may ${ask.action}`}>
          <thead><tr><th scope="col">Resource</th><th scope="col">Id</th><th scope="col">Owner scope</th><th scope="col"><span className="visually-hidden">Playground</span></th></tr></thead>
          <tbody>
            {resources.map((r) => (
              <tr key={r.id}>
                <td><strong>{r.resourceType}/{r.externalResourceId}</strong></td>
                <td><code>{r.id}</code></td>
                <td><Ref id={r.ownerScopeId} names={names} /></td>
                <td><CheckLinkCell row={`${r.resourceType}/${r.externalResourceId}`} link={{ ...actorOf(ask.by, ask.subject), scopeId: ask.scopeId, action: ask.action, resourceId: r.id }} /></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Paged>
  );
}
