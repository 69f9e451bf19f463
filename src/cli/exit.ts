/** How every `svc` command ends when it refuses: a message on stderr and a sysexits-style status. */
export function fail(message: string, code = 1): never {
  process.stderr.write(`svc: ${message}\n`);
  process.exit(code);
}

/** EX_USAGE (sysexits.h): the command line itself is wrong (unknown command or option, missing argument). */
export const EX_USAGE = 64;

/** A command line that cannot be run as given: the message, exit 64. */
export function usageError(message: string): never {
  fail(message, EX_USAGE);
}
