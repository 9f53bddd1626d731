/**
 * The shape of a subcommand module (commands/index.ts lists them) and the option parsers they share.
 */
import { InvalidArgumentError, type Command } from 'commander';
import type { CliContext } from './context.js';

/** A command's action: returns its exit code (nothing means 0). */
export type Action<O> = (ctx: CliContext, options: O, command: Command) => Promise<number | void>;

/** What a command module registers its commands with. */
export interface Cli {
  /** A commander action handler running `action` with the command's context; its exit code is the program's. */
  action<O>(action: Action<O>): (...args: unknown[]) => Promise<void>;
}

export interface CliCommand {
  /** Adds the command to `program` (`program.command(...)`), its actions wrapped by `cli.action`. */
  register(program: Command, cli: Cli): void;
}

/** A positive integer option value; a usage error naming `name` otherwise. */
export function positiveInteger(name: string): (raw: string) => number {
  return (raw) => {
    if (!/^\d+$/.test(raw) || Number(raw) <= 0 || !Number.isSafeInteger(Number(raw))) throw new InvalidArgumentError(`${name} must be a positive integer`);
    return Number(raw);
  };
}
