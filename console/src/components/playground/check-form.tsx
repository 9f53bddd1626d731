/** The playground's form: who, where, what, on which resource, with which context, as of when. */
import type { FormEvent } from 'react';
import { FIELD_LABELS, type CheckForm as Form, type FieldError, type ResourceBy, type SubjectBy } from './check-state.js';
import { ErrorSummary, SelectField, SuggestionProblems, TextAreaField, TextField } from './fields.js';
import type { TenantLists } from './tenant-lists.js';

export const fieldId = (field: keyof Form): string => `check-${field}`;

const SUBJECT_BY: { value: SubjectBy; label: string }[] = [
  { value: 'externalId', label: 'External id' },
  { value: 'subjectId', label: 'Subject id' },
];

const RESOURCE_BY: { value: ResourceBy; label: string }[] = [
  { value: 'none', label: 'No resource (the action in the scope)' },
  { value: 'external', label: 'Type and external id' },
  { value: 'id', label: 'Resource id' },
];

export function CheckForm({ form, onChange, errors, lists, onSubmit, busy }: {
  form: Form;
  onChange: (form: Form) => void;
  errors: readonly FieldError[];
  lists: TenantLists;
  onSubmit: () => void;
  busy: boolean;
}) {
  const set = <K extends keyof Form>(key: K) => (value: Form[K]) => onChange({ ...form, [key]: value });
  const errorOf = (field: keyof Form) => errors.find((e) => e.field === field)?.message;
  const { suggest } = lists;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onSubmit();
  };
  return (
    <form className="check-form" onSubmit={submit} noValidate aria-labelledby="check-title">
      <ErrorSummary errors={errors.map((e) => ({ id: fieldId(e.field), message: `${FIELD_LABELS[e.field]}: ${e.message}` }))} />
      <fieldset>
        <legend>Subject</legend>
        <div className="field-row">
          <SelectField id={fieldId('subjectBy')} label="Subject by" value={form.subjectBy} onChange={set('subjectBy')} options={SUBJECT_BY} />
          <TextField
            id={fieldId('subject')}
            label={form.subjectBy === 'externalId' ? 'Subject external id' : 'Subject id'}
            required
            value={form.subject}
            onChange={set('subject')}
            error={errorOf('subject')}
            suggestions={form.subjectBy === 'externalId' ? suggest.externalIds : suggest.subjectIds}
          />
        </div>
      </fieldset>
      <fieldset>
        <legend>Where and what</legend>
        <div className="field-row">
          <TextField id={fieldId('scopeId')} label={FIELD_LABELS.scopeId} required value={form.scopeId} onChange={set('scopeId')} error={errorOf('scopeId')} suggestions={suggest.scopeIds} hint={lists.scopeHint(form.scopeId)} />
          <TextField id={fieldId('action')} label={FIELD_LABELS.action} required value={form.action} onChange={set('action')} error={errorOf('action')} suggestions={suggest.actions} />
        </div>
      </fieldset>
      <fieldset>
        <legend>Resource</legend>
        <div className="field-row">
          <SelectField id={fieldId('resourceBy')} label="Resource by" value={form.resourceBy} onChange={set('resourceBy')} options={RESOURCE_BY} />
          {form.resourceBy === 'external' && (
            <>
              <TextField id={fieldId('resourceType')} label={FIELD_LABELS.resourceType} required value={form.resourceType} onChange={set('resourceType')} error={errorOf('resourceType')} suggestions={suggest.resourceTypes} />
              <TextField
                id={fieldId('externalResourceId')}
                label={FIELD_LABELS.externalResourceId}
                required
                value={form.externalResourceId}
                onChange={set('externalResourceId')}
                error={errorOf('externalResourceId')}
                suggestions={suggest.externalResourceIds(form.resourceType)}
                hint="Suggested: resources owned by the scope."
              />
            </>
          )}
          {form.resourceBy === 'id' && (
            <TextField id={fieldId('resourceId')} label={FIELD_LABELS.resourceId} required value={form.resourceId} onChange={set('resourceId')} error={errorOf('resourceId')} suggestions={suggest.resourceIds} hint="Suggested: resources owned by the scope." />
          )}
        </div>
      </fieldset>
      <fieldset>
        <legend>Context and time</legend>
        <div className="field-row">
          <TextAreaField
            id={fieldId('context')}
            label={FIELD_LABELS.context}
            value={form.context}
            onChange={set('context')}
            error={errorOf('context')}
            placeholder='{"ip": "10.0.0.1"}'
            hint="A JSON object, read by policies' contextCondition; the server fills time when it is absent."
          />
          <TextField
            id={fieldId('atRevision')}
            label={FIELD_LABELS.atRevision}
            value={form.atRevision}
            onChange={set('atRevision')}
            error={errorOf('atRevision')}
            inputMode="numeric"
            hint="Empty: the tenant as it is now. A number: as it was at that revision."
          />
        </div>
      </fieldset>
      <SuggestionProblems queries={{ subjects: lists.queries.subjects, scopes: lists.queries.scopes, actions: lists.queries.permissions, 'resource types': lists.queries.types, resources: lists.queries.resources }} />
      {/* Never disabled while checking: a focused button that is disabled drops the keyboard focus. */}
      <button type="submit" className="primary">Check</button>
      {busy && <span className="muted"> Checking…</span>}
    </form>
  );
}
