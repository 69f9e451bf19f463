/** `svc update` and `svc rollback`: the release pointers (symlinks) under the releases directory. */
import { existsSync, lstatSync, mkdirSync, readlinkSync, realpathSync, renameSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { fail, usageError } from './exit.js';

const POINTERS = ['current', 'previous'] as const;

/**
 * Release pointer: <releases>/current is a symlink; <releases>/previous remembers the one before.
 * `positionals`: how many arguments the command takes (update: the release; rollback: none).
 */
function releasesDir(args: string[], positionals: number): { dir: string; rest: string[] } {
  const parsed = parseArgs({ args, allowPositionals: true, options: { releases: { type: 'string', default: './releases' } } });
  const extra = parsed.positionals[positionals];
  if (extra !== undefined) usageError(`Unexpected argument '${extra}'`);
  return { dir: resolve(parsed.values.releases!), rest: parsed.positionals };
}

/**
 * A pointer that exists as anything but a symlink (a directory or file someone put there) cannot be
 * switched: refused before either pointer changes, so a failed command leaves both as they were.
 */
function requireLinks(dir: string): void {
  for (const name of POINTERS) {
    const link = join(dir, name);
    let isLink: boolean;
    try {
      isLink = lstatSync(link).isSymbolicLink();
    } catch {
      continue; // absent: created by the switch
    }
    if (!isLink) fail(`${link} is not a symlink (a release pointer): move it away, then run the command again`);
  }
}

function pointTo(dir: string, name: string, target: string): void {
  const link = join(dir, name);
  const tmp = `${link}.tmp-${process.pid}`;
  try {
    symlinkSync(target, tmp);
    renameSync(tmp, link); // atomic switch
  } catch (err) {
    // No temporary link left behind; the pointer is as it was.
    rmSync(tmp, { force: true });
    fail(`could not point ${link} at ${target}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

function currentTarget(dir: string, name: string): string | undefined {
  try {
    return readlinkSync(join(dir, name));
  } catch {
    return undefined;
  }
}

/** A link's target as a real path (as given when it no longer exists). */
function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/**
 * The real directory of a release (`path` resolved from `base`), or why it is none: it must exist,
 * be a directory and hold package.json. The real path, so a path through a symlink (`DIR/current`
 * itself, an alias, a chain back to a pointer) never makes `current` point at itself or at a link.
 */
function releaseDirectory(base: string, path: string): { dir: string } | { problem: string } {
  const given = resolve(base, path);
  let real: string;
  try {
    real = realpathSync(given);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { problem: code === 'ELOOP' ? `${given} is a symlink loop` : `${given} does not exist` };
  }
  if (!statSync(real).isDirectory() || !existsSync(join(real, 'package.json'))) return { problem: `${given} does not look like a release (no package.json)` };
  return { dir: real };
}

export function update(args: string[]): void {
  const { dir, rest } = releasesDir(args, 1);
  const release = rest[0];
  if (!release) usageError('update needs the release directory');
  const found = releaseDirectory(process.cwd(), release);
  if ('problem' in found) fail(found.problem);
  const target = found.dir;
  mkdirSync(dir, { recursive: true });
  requireLinks(dir);
  const current = currentTarget(dir, 'current');
  // Updating to the release already current keeps the rollback target (it would become itself).
  if (current && realOrSelf(resolve(dir, current)) !== target) pointTo(dir, 'previous', current);
  pointTo(dir, 'current', target);
  const previous = currentTarget(dir, 'previous');
  process.stdout.write(`current -> ${target}${previous ? ` (previous -> ${previous})` : ''}\nMigrations, backups, restart and health checks are the operator's: run 'svc migrate' and restart the service.\n`);
}

export function rollback(args: string[]): void {
  const { dir } = releasesDir(args, 0);
  const previous = currentTarget(dir, 'previous');
  const current = currentTarget(dir, 'current');
  if (!previous) fail(`no previous release recorded in ${dir}`);
  // The target as update checks it: a release that still exists, not a pointer of its own.
  const found = releaseDirectory(dir, previous);
  if ('problem' in found) fail(`cannot roll back to the previous release: ${found.problem}`);
  if (current && realOrSelf(resolve(dir, current)) === found.dir) fail(`the previous release (${previous}) is the current one: nothing to roll back to`);
  requireLinks(dir);
  pointTo(dir, 'current', found.dir);
  if (current) pointTo(dir, 'previous', current);
  process.stdout.write(`current -> ${found.dir}\nDatabase migrations are not reversed.\n`);
}
