/** A command to paste elsewhere, with a Copy button that says in a live region what it did. */
import { useState } from 'react';

export function CopyCommand({ id, title, command }: { id: string; title: string; command: string }) {
  const [said, setSaid] = useState('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(command);
      setSaid(`Copied the ${title} command.`);
    } catch (err) {
      // A page without clipboard access (an insecure origin, a refusal) still leaves the text to select.
      setSaid(`Could not copy (${(err as Error).message}): select the text and copy it.`);
    }
  };
  return (
    <div className="command">
      <div className="command-head">
        <h3 id={`${id}-title`}>{title}</h3>
        <button type="button" onClick={() => void copy()} aria-label={`Copy the ${title} command`}>Copy</button>
      </div>
      <pre id={id} tabIndex={0}><code>{command}</code></pre>
      <p className="help copy-status" role="status" aria-live="polite">{said}</p>
    </div>
  );
}
