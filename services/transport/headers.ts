import type { NodeServerRequest } from './node-types.js';

/**
 * A request header by its lower-case name, without making Node's `req.headers`: an HTTP/1.1
 * request holds its headers as sent (`rawHeaders`, name and value by turns) and builds the
 * object from them on first use, which costs more than the rest of routing a decision. Of a
 * repeated header the first value is given (what `req.headers` keeps of `content-type` and
 * `content-length`; a caller reading a header that Node joins when repeated must check
 * `req.headers` when this finds one). HTTP/2 requests have the object already.
 */
export function headerOf(req: NodeServerRequest, name: string): string | undefined {
  if (req.httpVersionMajor !== 1) {
    const v = req.headers[name];
    return Array.isArray(v) ? v[0] : v;
  }
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const n = raw[i];
    if (n.length === name.length && (n === name || n.toLowerCase() === name)) return raw[i + 1];
  }
  return undefined;
}
