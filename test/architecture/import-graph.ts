/**
 * The import graph of the repository's TypeScript files, read with the compiler's own scanner
 * (ts.preProcessFile): static imports and re-exports, `import type`, and dynamic `import()` all
 * count, since a type-only cycle still ties modules together for every reader of the code.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve, dirname } from 'node:path';
import ts from 'typescript';

export type Graph = Map<string, string[]>;

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...tsFiles(path));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** Graph of the files under `dirs` (relative to root), keyed by root-relative path. */
export function importGraph(root: string, dirs: string[]): Graph {
  const files = dirs.flatMap((d) => tsFiles(resolve(root, d)));
  const known = new Set(files);
  const target = (from: string, spec: string): string | undefined => {
    if (!spec.startsWith('.')) return undefined;
    const base = resolve(dirname(from), spec);
    for (const candidate of [base, base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')]) {
      if (known.has(candidate)) return candidate;
    }
    return undefined;
  };
  const graph: Graph = new Map();
  for (const file of files) {
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const deps = new Set<string>();
    for (const ref of info.importedFiles) {
      const to = target(file, ref.fileName);
      if (to) deps.add(relative(root, to));
    }
    graph.set(relative(root, file), [...deps].sort());
  }
  return graph;
}

/** Strongly connected components of more than one file (or a file importing itself): the cycles. */
export function cycles(graph: Graph): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}
