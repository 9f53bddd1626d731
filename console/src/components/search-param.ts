/** A view's selection kept in the URL's query, so that a link reopens it and Back steps back through it. */
import { useSearchParams } from 'wouter';

/** One query parameter as state: setting it to undefined removes it; `drop` removes others with it. */
export function useSearchParam(name: string): [string | undefined, (value: string | undefined, drop?: readonly string[]) => void] {
  const [params, setParams] = useSearchParams();
  const set = (value: string | undefined, drop: readonly string[] = []) =>
    setParams((prev) => {
      const next = new URLSearchParams(prev);
      if (value === undefined) next.delete(name);
      else next.set(name, value);
      for (const d of drop) next.delete(d);
      return next;
    });
  return [params.get(name) ?? undefined, set];
}
