/** Where a model file comes in: chosen from disk or pasted, with the option to prune, then planned. */
import type { ChangeEvent, FormEvent } from 'react';
import type { ModelProblem } from './read-model.js';

export interface EditorProps {
  readonly text: string;
  readonly fileName: string;
  readonly prune: boolean;
  readonly problems: readonly ModelProblem[];
  readonly planning: boolean;
  onText(text: string): void;
  onFile(text: string, fileName: string): void;
  onPrune(prune: boolean): void;
  onPlan(): void;
}

export function ModelEditor(p: EditorProps) {
  const choose = async (e: ChangeEvent<HTMLInputElement>) => {
    const file = e.target.files?.[0];
    if (file) p.onFile(await file.text(), file.name);
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    p.onPlan();
  };
  const invalid = p.problems.length > 0;
  return (
    <form className="model-editor" onSubmit={submit}>
      <label htmlFor="model-file">Model file (YAML or JSON)</label>
      <input id="model-file" type="file" accept=".yaml,.yml,.json,application/yaml,application/json,text/yaml" onChange={(e) => void choose(e)} />
      <label htmlFor="model-text">Model text</label>
      <p id="model-text-help" className="help">
        Paste a model here, or edit the file you chose or the exported copy. Messages call it <code>{p.fileName || 'model.yaml'}</code>.
      </p>
      <textarea
        id="model-text" className="code" rows={16} spellCheck={false} autoComplete="off" wrap="off"
        value={p.text} onChange={(e) => p.onText(e.target.value)}
        aria-invalid={invalid || undefined} aria-describedby={invalid ? 'model-text-help model-problems' : 'model-text-help'}
      />
      <div className="checkbox">
        <input id="model-prune" type="checkbox" checked={p.prune} onChange={(e) => p.onPrune(e.target.checked)} />
        <label htmlFor="model-prune">Prune: delete what the file’s sections leave out (where the API can)</label>
      </div>
      {invalid && (
        <div id="model-problems" className="error" role="alert">
          <strong>The model cannot be read</strong>
          <ul>{p.problems.map((m, i) => <li key={i}><code>{m.text}</code></li>)}</ul>
        </div>
      )}
      <div className="button-row">
        <button type="submit" disabled={p.planning}>{p.planning ? 'Planning…' : 'Plan'}</button>
      </div>
    </form>
  );
}
