/**
 * Exit codes of `authz` (docs/cli.md#exit-codes): 0 success (for `check`, allowed), 1 a failed
 * check or any error, 2 a usage error (unknown command or option, missing or malformed value).
 */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/** The command line was used wrongly: exits 2 with the message. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
