/**
 * Labelled form fields of the decision forms: each input has its label, its suggestions (a
 * `<datalist>`), and its error tied to it by `aria-describedby`, so a screen reader says what is
 * wrong on reaching the field.
 */
import type { ReactNode } from 'react';
import { describeError } from '../../api/transport.js';
import type { Suggestion } from './tenant-lists.js';

export function Suggestions({ id, options }: { id: string; options: readonly Suggestion[] }) {
  return (
    <datalist id={id}>
      {options.map((o) => <option key={o.value} value={o.value}>{o.label}</option>)}
    </datalist>
  );
}

export interface TextFieldProps {
  id: string;
  label: string;
  value: string;
  onChange: (value: string) => void;
  error?: string;
  hint?: ReactNode;
  suggestions?: readonly Suggestion[];
  required?: boolean;
  inputMode?: 'numeric' | 'text';
  placeholder?: string;
}

export function TextField({ id, label, value, onChange, error, hint, suggestions, required, inputMode, placeholder }: TextFieldProps) {
  const listId = suggestions ? `${id}-options` : undefined;
  const described = [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined;
  return (
    <div className="field">
      <label htmlFor={id}>{label}{required && <span className="muted"> (required)</span>}</label>
      <input
        id={id}
        type="text"
        value={value}
        list={listId}
        onChange={(e) => onChange(e.target.value)}
        aria-invalid={error ? true : undefined}
        aria-describedby={described}
        inputMode={inputMode}
        placeholder={placeholder}
        autoComplete="off"
        spellCheck={false}
      />
      {hint && <p className="help" id={`${id}-hint`}>{hint}</p>}
      {error && <p className="field-error" id={`${id}-error`}>{error}</p>}
      {suggestions && listId && <Suggestions id={listId} options={suggestions} />}
    </div>
  );
}

export function TextAreaField({ id, label, value, onChange, error, hint, placeholder }: Omit<TextFieldProps, 'suggestions' | 'required' | 'inputMode'>) {
  const described = [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined;
  return (
    <div className="field field-wide">
      <label htmlFor={id}>{label}</label>
      <textarea
        id={id}
        className="code"
        rows={3}
        value={value}
        onChange={(e) => onChange(e.target.value)}
        aria-invalid={error ? true : undefined}
        aria-describedby={described}
        placeholder={placeholder}
        spellCheck={false}
      />
      {hint && <p className="help" id={`${id}-hint`}>{hint}</p>}
      {error && <p className="field-error" id={`${id}-error`}>{error}</p>}
    </div>
  );
}

export function SelectField<T extends string>({ id, label, value, onChange, options }: {
  id: string; label: string; value: T; onChange: (value: T) => void; options: readonly { value: T; label: string }[];
}) {
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <select id={id} value={value} onChange={(e) => onChange(e.target.value as T)}>
        {options.map((o) => <option key={o.value} value={o.value}>{o.label}</option>)}
      </select>
    </div>
  );
}

/** The problems of a form, listed before it with links to the fields, read out when they appear. */
export function ErrorSummary({ errors }: { errors: readonly { id: string; message: string }[] }) {
  if (errors.length === 0) return null;
  return (
    <div className="error" role="alert">
      <strong>Fix {errors.length === 1 ? 'this field' : `these ${errors.length} fields`} first:</strong>
      <ul>
        {errors.map((e) => (
          <li key={e.id}>
            {/* Focus the field itself: following a fragment only scrolls to it. */}
            <a href={`#${e.id}`} onClick={(ev) => { ev.preventDefault(); document.getElementById(e.id)?.focus(); }}>{e.message}</a>
          </li>
        ))}
      </ul>
    </div>
  );
}

/** Suggestion listings that failed: the form still works (values can be typed), and says why it suggests less. */
export function SuggestionProblems({ queries }: { queries: Record<string, { error: unknown; isError: boolean }> }) {
  const failed = Object.entries(queries).filter(([, q]) => q.isError);
  if (failed.length === 0) return null;
  return (
    <ul className="help suggestion-problems">
      {failed.map(([what, q]) => <li key={what}>No suggestions of {what}: {describeError(q.error).detail}</li>)}
    </ul>
  );
}
