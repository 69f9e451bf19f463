/** `svc update` and `svc rollback`: the release pointers (symlinks) under the releases directory. */
import { existsSync, mkdirSync, readlinkSync, realpathSync, renameSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { fail } from './common.js';

/** Release pointer: <releases>/current is a symlink; <releases>/previous remembers the one before. */
function releasesDir(args: string[]): { dir: string; rest: string[] } {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { releases: { type: 'string', default: './releases' } } });
  return { dir: resolve(values.releases!), rest: positionals };
}

function pointTo(dir: string, name: string, target: string): void {
  const link = join(dir, name);
  const tmp = `${link}.tmp-${process.pid}`;
  symlinkSync(target, tmp);
  renameSync(tmp, link); // atomic switch
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

export function update(args: string[]): void {
  const { dir, rest } = releasesDir(args);
  const release = rest[0];
  if (!release) fail('update needs the release directory');
  if (!existsSync(join(resolve(release), 'package.json'))) fail(`${resolve(release)} does not look like a release (no package.json)`);
  // The real directory: a path through a symlink (`DIR/current` itself, an alias) must not make
  // `current` point at itself or at the link.
  const target = realpathSync(release);
  mkdirSync(dir, { recursive: true });
  const current = currentTarget(dir, 'current');
  // Updating to the release already current keeps the rollback target (it would become itself).
  if (current && realOrSelf(current) !== target) pointTo(dir, 'previous', current);
  pointTo(dir, 'current', target);
  const previous = currentTarget(dir, 'previous');
  process.stdout.write(`current -> ${target}${previous ? ` (previous -> ${previous})` : ''}\nMigrations, backups, restart and health checks are the operator's: run 'svc migrate' and restart the service.\n`);
}

export function rollback(args: string[]): void {
  const { dir } = releasesDir(args);
  const previous = currentTarget(dir, 'previous');
  const current = currentTarget(dir, 'current');
  if (!previous) fail(`no previous release recorded in ${dir}`);
  pointTo(dir, 'current', previous);
  if (current) pointTo(dir, 'previous', current);
  process.stdout.write(`current -> ${previous}\nDatabase migrations are not reversed.\n`);
}
