/**
 * Host names as a browser resolves them, for the listeners' `Host` allowlist and the settings
 * that feed it: one canonical spelling per host, so that `LOCALHOST.`, `0x7f.1` and
 * `[0:0::1]` compare equal to what they name (`localhost`, `127.0.0.1`, `[::1]`).
 */
import { isIPv6 } from 'node:net';

const NAME = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.?$/;

/**
 * The canonical form of a host without a port: lower case, without a trailing dot, an IPv4
 * address in dotted decimal (the WHATWG URL parser's reading of `0x7f.1` or `2130706433`),
 * an IPv6 address compressed and in brackets (`::1` and `[::1]` both give `[::1]`). Undefined
 * for anything else (a port, a scheme, a path, user info, a zone id, an empty label).
 */
export function canonicalHost(text: string): string | undefined {
  const inner = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  let url: URL;
  try {
    if (isIPv6(inner)) url = new URL(`http://[${inner}]/`);
    else if (inner === text && text.length <= 254 && NAME.test(text)) url = new URL(`http://${text}/`);
    else return undefined;
  } catch {
    // A name the URL parser refuses, such as `1.2.3.4.5` (a number as last label must be an IPv4 address).
    return undefined;
  }
  const host = url.hostname;
  return host.endsWith('.') ? host.slice(0, -1) : host;
}

/**
 * Whether a canonical host (canonicalHost) is a loopback one: `localhost` and the names under
 * it (RFC 6761: browsers resolve them to loopback themselves, so no DNS answer can make a web
 * page's name one of them), `127.0.0.0/8`, `[::1]` and the IPv4-mapped `[::ffff:127.x.y.z]`.
 */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host.endsWith('.localhost') || /^127\.\d+\.\d+\.\d+$/.test(host)
    || host === '[::1]' || /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(host);
}

/** Whether a canonical host is the unspecified address (`0.0.0.0`, `[::]`): a listener on every address. */
export function isUnspecifiedHost(host: string): boolean {
  return host === '0.0.0.0' || host === '[::]';
}
