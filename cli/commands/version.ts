/**
 * `authz version`: this command line's version (the package's) and the Node.js running it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import type { CliContext } from '../context.js';
import { keyValueTable } from '../output.js';
import type { CliCommand } from '../command.js';

const PACKAGE_NAME = 'authz-service';

/** The version in the package's package.json, found above this file (from the sources or from dist/). */
export function cliVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === PACKAGE_NAME && pkg.version) return pkg.version;
    }
    const up = dirname(dir);
    if (up === dir) return 'unknown';
    dir = up;
  }
}

async function version(ctx: CliContext): Promise<void> {
  const data = { version: cliVersion(), node: process.versions.node };
  ctx.emit(data, () => keyValueTable([['authz', data.version], ['node', data.node]], ctx.styles));
}

export const versionCommand: CliCommand = {
  register(program: Command, cli) {
    program.command('version').summary('the version of this command line').description('Prints the version of this command line and of the Node.js running it.').action(cli.action(version));
  },
};
