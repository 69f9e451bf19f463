/** Locations inside the installed package (works from src/ under vitest and from dist/src/ when compiled). */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(start: string): string {
  let dir = start;
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('package.json not found above ' + start);
    dir = up;
  }
  return dir;
}

export const PROJECT_ROOT = findRoot(dirname(fileURLToPath(import.meta.url)));
export const MIGRATIONS_DIR = join(PROJECT_ROOT, 'migrations');
/** The compiled worker-thread task files (workers/*.ts); absent in a checkout that has not been built. */
export const WORKERS_DIR = join(PROJECT_ROOT, 'dist', 'workers');
