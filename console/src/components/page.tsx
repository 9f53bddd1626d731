import { useEffect, useRef, type ReactNode } from 'react';

/**
 * A view's frame: its heading, which takes the focus when the view opens (so that a keyboard or
 * screen-reader user lands on the new content, not on the link they followed), and the title.
 */
export function Page({ title, actions, children }: { title: string; actions?: ReactNode; children: ReactNode }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · authz console`;
    heading.current?.focus();
  }, [title]);
  return (
    <section className="page" aria-labelledby="page-title">
      <div className="page-head">
        <h1 id="page-title" tabIndex={-1} ref={heading}>{title}</h1>
        {actions}
      </div>
      {children}
    </section>
  );
}
