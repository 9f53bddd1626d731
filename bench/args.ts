/**
 * A benchmark's command-line options: `--name value`, or `--name` alone (then `'true'`), as a
 * map by name.
 */
export function benchArgs(argv: readonly string[] = process.argv.slice(2)): Map<string, string> {
  const args = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i].replace(/^--/, '');
    const value = argv[i + 1];
    if (value === undefined || value.startsWith('--')) args.set(name, 'true');
    else args.set(name, value), i++;
  }
  return args;
}
