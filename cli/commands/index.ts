/**
 * Every subcommand of `authz`, in the order `authz --help` lists them. A subcommand is a module
 * exporting a CliCommand (cli/command.ts): its `register(program, cli)` adds the command with
 * commander and wraps its action with `cli.action`, which gives it the context (connection,
 * client, output) and takes its exit code. Adding one is a file here and a line below.
 */
import type { CliCommand } from '../command.js';
import { checkCommand } from './check.js';
import { exportCommand } from './export.js';
import { historyCommand } from './history.js';
import { importCommand } from './import.js';
import { loginCommand } from './login.js';
import { lookupCommand } from './lookup.js';
import { planCommands } from './plan.js';
import { planResourcesCommand } from './plan-resources.js';
import { statusCommands } from './status.js';
import { testCommand } from './test.js';
import { validateCommands } from './validate.js';
import { versionCommand } from './version.js';

export const COMMANDS: readonly CliCommand[] = [
  checkCommand, lookupCommand, planResourcesCommand, testCommand, validateCommands, planCommands, exportCommand, importCommand, historyCommand, loginCommand, statusCommands, versionCommand,
];
