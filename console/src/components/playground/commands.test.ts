/**
 * The commands are checked by a real shell: `sh` runs each with `curl` and `authz` replaced by
 * functions that print their arguments, so quoting is tested as a shell reads it.
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import type { Check } from './check-state.js';
import { authzCheckCommand, curlCommand, shellQuote } from './commands.js';

/** The words `sh` hands to `program` when it runs `command`. */
function argsOf(program: 'curl' | 'authz', command: string): string[] {
  const out = execFileSync('sh', ['-c', `${program}() { for a in "$@"; do printf '%s\\0' "$a"; done; }\n${command}`], {
    env: { PATH: process.env.PATH ?? '', AUTHZ_API_KEY: 'azk_from_the_environment' },
    encoding: 'utf8',
  });
  return out.split('\0').slice(0, -1);
}

const tricky: Check = {
  actor: { externalId: "o'brien $HOME" },
  scopeId: 'scope_01',
  action: 'read',
  resource: { resourceType: 'document', externalResourceId: 'q3 "plan"; rm -rf /' },
  context: { note: "it's `whoami` and $(id)", ip: '10.0.0.1', nested: { n: 1 } },
  atRevision: 7,
};

describe('shellQuote', () => {
  it('leaves plain words bare and single-quotes the rest', () => {
    expect(shellQuote('scope_01a2-33')).toBe('scope_01a2-33');
    expect(shellQuote('http://127.0.0.1:8080/evaluate')).toBe('http://127.0.0.1:8080/evaluate');
    expect(shellQuote('two words')).toBe("'two words'");
    expect(shellQuote("it's")).toBe("'it'\\''s'");
    expect(shellQuote('')).toBe("''");
  });
});

describe('curlCommand', () => {
  it('posts the REST body to /evaluate, the JSON context intact through the shell, the key from the environment', () => {
    const command = curlCommand('https://authz.example.com', tricky);
    expect(command).toContain('"x-api-key: $AUTHZ_API_KEY"');
    const args = argsOf('curl', command);
    expect(args.slice(0, 4)).toEqual(['-sS', '-X', 'POST', 'https://authz.example.com/evaluate']);
    expect(args[args.indexOf('-H') + 1]).toBe('x-api-key: azk_from_the_environment');
    expect(args).toContain('content-type: application/json');
    expect(JSON.parse(args[args.indexOf('-d') + 1])).toEqual({
      actor: { externalId: "o'brien $HOME" },
      scopeId: 'scope_01',
      action: 'read',
      resource: { resourceType: 'document', externalResourceId: 'q3 "plan"; rm -rf /' },
      context: { note: "it's `whoami` and $(id)", ip: '10.0.0.1', nested: { n: 1 } },
      explain: true,
      consistency: { atRevision: 7 },
    });
  });
});

describe('authzCheckCommand', () => {
  it('gives cli/commands/check.ts its flags, each value one word', () => {
    const args = argsOf('authz', authzCheckCommand('http://127.0.0.1:8080', tricky));
    expect(args).toEqual([
      '--url', 'http://127.0.0.1:8080', 'check',
      '--subject', "o'brien $HOME",
      '--scope-id', 'scope_01',
      '--action', 'read',
      '--resource', 'document/q3 "plan"; rm -rf /',
      '--context', '{"note":"it\'s `whoami` and $(id)","ip":"10.0.0.1","nested":{"n":1}}',
      '--at-revision', '7',
      '--explain',
    ]);
  });

  it('names a subject and a resource by id when the check does', () => {
    const args = argsOf('authz', authzCheckCommand('http://h', { actor: { subjectId: 'subject_9' }, scopeId: 's', action: 'write', resource: { resourceId: 'resource_3' } }));
    expect(args).toEqual(['--url', 'http://h', 'check', '--subject-id', 'subject_9', '--scope-id', 's', '--action', 'write', '--resource-id', 'resource_3', '--explain']);
  });
});
