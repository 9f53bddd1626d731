/**
 * The `authz` command line (bin/authz.js runs it). docs/cli.md describes it.
 */
import { runCli } from './program.js';

process.exitCode = await runCli(process.argv.slice(2));
