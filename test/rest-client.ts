/**
 * JSON over HTTP as an outside client sends it, for the end-to-end tests: `restClient(key)` gives
 * `call` (any status, the body parsed) and `ok` (a 200, else the test fails with the body).
 */
export interface Reply {
  status: number;
  headers: Headers;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export function restClient(defaultKey: string) {
  /** `key` null sends no key; undefined sends the default one. */
  async function call(base: string, method: string, path: string, body?: unknown, key: string | null = defaultKey): Promise<Reply> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (key) headers['x-api-key'] = key;
    const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  }
  async function ok(p: Promise<Reply>): Promise<Reply> {
    const r = await p;
    if (r.status !== 200) throw new Error(`${r.status} ${JSON.stringify(r.body)}`);
    return r;
  }
  return { call, ok };
}

/** The tenant revision a write answered with (its `x-revision` header). */
export const revisionOf = (r: Reply) => Number(r.headers.get('x-revision'));
