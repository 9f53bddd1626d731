/**
 * The message of a Connect unary GET (`?connect=v1&encoding=json|proto&message=…[&base64=1]
 * [&compression=gzip|br]`), checked before connect-node decodes it, as POST bodies are: its
 * decoder reports malformed base64 as an internal error and a JSON field it does not know
 * without naming it. The message arrives in the URL, so it is small (headers are bounded).
 */
import type { DescMessage } from '@bufbuild/protobuf';
import { base64Decode } from '@bufbuild/protobuf/wire';
import { checkBinaryRequest } from './binary-scan.js';
import { encodingOf, inflate } from './compression.js';
import { checkMessage, invalidField } from './gateway/json.js';
import { parseJsonBody } from './json-scan.js';

/** Throws `invalid_argument` naming the field when the GET's message is malformed or does not fit `desc`. */
export async function checkConnectGet(desc: DescMessage, url: string, maxBytes: number): Promise<void> {
  const q = url.indexOf('?');
  const params = new URLSearchParams(q === -1 ? '' : url.slice(q + 1));
  const encoding = params.get('encoding');
  // Anything else connect-node refuses itself, in the protocol's words.
  if (encoding !== 'json' && encoding !== 'proto') return;
  const raw = params.get('message') ?? '';
  let bytes: Uint8Array;
  if (params.get('base64') === '1') {
    try {
      bytes = base64Decode(raw);
    } catch {
      throw invalidField('', 'the message query parameter is not valid base64');
    }
  } else {
    bytes = new TextEncoder().encode(raw);
  }
  const compression = params.get('compression');
  if (compression !== null && compression !== 'identity') {
    const algorithm = encodingOf(compression);
    if (algorithm === undefined || algorithm === 'identity') return;
    bytes = await inflate(algorithm, Buffer.from(bytes), maxBytes);
  }
  if (encoding === 'json') checkMessage(desc, parseJsonBody(bytes, { desc }) ?? {});
  else checkBinaryRequest(desc, bytes);
}
