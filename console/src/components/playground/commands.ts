/**
 * The playground's check as commands a person pastes into a POSIX shell: `curl` against the REST
 * surface and the `authz check` CLI. The key is never written out: both read it from
 * `$AUTHZ_API_KEY` (the CLI by itself, curl through a double-quoted header the shell expands).
 */
import type { Check } from './check-state.js';
import { restBody } from './check-state.js';

/** Characters a shell word may hold without quoting. */
const PLAIN_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;

/**
 * `value` as one shell word: bare when it is plain, else single-quoted, a single quote inside
 * written as `'\''` (close, escaped quote, reopen), the one thing single quotes cannot hold.
 */
export function shellQuote(value: string): string {
  if (PLAIN_WORD.test(value)) return value;
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** Words joined as one command over several lines, continued with backslashes. */
function lines(first: string, rest: readonly string[]): string {
  return [first, ...rest].join(' \\\n  ');
}

/** `curl` posting the check to `origin`'s /evaluate, the key from `$AUTHZ_API_KEY`. */
export function curlCommand(origin: string, check: Check): string {
  return lines(`curl -sS -X POST ${shellQuote(`${origin}/evaluate`)}`, [
    '-H "x-api-key: $AUTHZ_API_KEY"',
    `-H ${shellQuote('content-type: application/json')}`,
    `-d ${shellQuote(JSON.stringify(restBody(check)))}`,
  ]);
}

/** `authz check` with the flags of cli/commands/check.ts; the scope goes by id (any key may use it). */
export function authzCheckCommand(origin: string, check: Check): string {
  const flags: string[] = [];
  if ('externalId' in check.actor) flags.push(`--subject ${shellQuote(check.actor.externalId)}`);
  else flags.push(`--subject-id ${shellQuote(check.actor.subjectId)}`);
  flags.push(`--scope-id ${shellQuote(check.scopeId)}`, `--action ${shellQuote(check.action)}`);
  if (check.resource && 'resourceId' in check.resource) flags.push(`--resource-id ${shellQuote(check.resource.resourceId)}`);
  else if (check.resource) flags.push(`--resource ${shellQuote(`${check.resource.resourceType}/${check.resource.externalResourceId}`)}`);
  if (check.context) flags.push(`--context ${shellQuote(JSON.stringify(check.context))}`);
  if (check.atRevision !== undefined) flags.push(`--at-revision ${check.atRevision}`);
  flags.push('--explain');
  return lines(`authz --url ${shellQuote(origin)} check`, flags);
}
