/**
 * The `authz` program: global options, the subcommands of commands/index.ts, and one place that
 * turns every outcome into output and an exit code (0 ok, 1 failed or error, 2 usage).
 */
import { Command, CommanderError, Option } from 'commander';
import { AuthzError } from '../client/errors.js';
import { positiveInteger, type Action, type Cli } from './command.js';
import { COMMANDS } from './commands/index.js';
import { CliContext, type CliGlobals } from './context.js';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, UsageError } from './exit.js';
import { CliIo, processStreams, type CliStreams } from './io.js';
import { OUTPUT_FORMATS } from './output.js';
import { DEFAULT_URL } from './settings.js';

/** The program, writing to `io`; `exitCode.value` receives the action's exit code. */
export function buildProgram(io: CliIo, exitCode: { value: number }): Command {
  const program = new Command('authz')
    .description('Command line of the authz service: decisions, tenant model files (validate, plan, apply, export), bulk import, login and status.')
    .option('--url <url>', `the control plane (env AUTHZ_URL; default ${DEFAULT_URL})`)
    .option('--api-key <key>', 'API key (env AUTHZ_API_KEY, or authz login); on the command line it shows in the process list and shell history')
    .option('--tenant <id>', 'tenant id for names that need one (env AUTHZ_TENANT)')
    .option('--ca-file <path>', 'PEM file of CAs to trust for an https:// URL, besides the default roots (env AUTHZ_CA_FILE)')
    .option('--config <path>', 'the login file (env AUTHZ_CONFIG; default ~/.config/authz/config.json)')
    .addOption(new Option('-o, --output <format>', 'output format').choices(OUTPUT_FORMATS).default('table'))
    .option('--timeout <ms>', 'deadline of each call to the service, in milliseconds', positiveInteger('--timeout'), 10_000)
    .showHelpAfterError('(add --help for usage)')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) });

  const cli: Cli = {
    action: <O>(action: Action<O>) => async (...args: unknown[]) => {
      const command = args.at(-1) as Command;
      const options = args.at(-2) as O;
      const globals = command.optsWithGlobals() as CliGlobals;
      if (globals.apiKey !== undefined) {
        io.addSecret(globals.apiKey);
        io.warn('--api-key puts the key in the process list and the shell history: prefer AUTHZ_API_KEY or authz login');
      }
      exitCode.value = (await action(new CliContext(io, globals), options, command)) ?? EXIT_OK;
    },
  };
  for (const c of COMMANDS) c.register(program, cli);
  // Every subcommand reports usage errors and help the same way as the program.
  for (const sub of program.commands) sub.exitOverride().configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) }).showHelpAfterError('(add --help for usage)');
  return program;
}

/** The API-key value in `argv`, if one is passed there, so that even usage errors cannot print it. */
function apiKeyInArgv(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--api-key') return argv[i + 1];
    if (argv[i].startsWith('--api-key=')) return argv[i].slice('--api-key='.length);
  }
  return undefined;
}

/** How an error reads on stderr, with what to do about it where that is known. */
function errorText(err: unknown): string {
  if (err instanceof AuthzError) {
    const facts = [err.codeName, err.reason && `reason ${err.reason}`, err.field && `field ${err.field}`].filter(Boolean).join(', ');
    let text = `error: ${err.message} (${facts})`;
    if (err.codeName === 'unauthenticated') text += '\nhint: the service refused the API key: check AUTHZ_API_KEY, --api-key or authz login';
    if (err.codeName === 'unavailable' && !err.reason) text += '\nhint: is the service running at that URL? (--url, AUTHZ_URL, authz login)';
    return text;
  }
  return `error: ${err instanceof Error ? err.message : String(err)}`;
}

/** Runs `authz` with `argv` (without node and the script); resolves with the exit code. */
export async function runCli(argv: readonly string[], streams: CliStreams = processStreams()): Promise<number> {
  const io = new CliIo(streams);
  io.addSecret(streams.env.AUTHZ_API_KEY);
  io.addSecret(apiKeyInArgv(argv));
  const exitCode = { value: EXIT_OK };
  const program = buildProgram(io, exitCode);
  try {
    if (argv.length === 0) {
      io.err(program.helpInformation());
      return EXIT_USAGE;
    }
    await program.parseAsync([...argv], { from: 'user' });
    return exitCode.value;
  } catch (err) {
    if (err instanceof CommanderError) {
      // commander printed the message (or the help) already.
      return err.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
    }
    if (err instanceof UsageError) {
      io.err(`error: ${err.message}\n(add --help for usage)\n`);
      return EXIT_USAGE;
    }
    // AuthzError, MissingKeyError, ConfigFileError, a CA file that cannot be read, …
    io.err(`${errorText(err)}\n`);
    return EXIT_FAILED;
  }
}
