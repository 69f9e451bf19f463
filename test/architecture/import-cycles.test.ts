/**
 * Architecture rules that a review would otherwise have to catch (docs/architecture.md):
 * no import cycle among src/, bench/ and workers/ (type-only imports included), and the floors
 * only call down: the OIDC surface never reaches into the Management API, domains never reach into
 * a surface.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { cycles, importGraph, type Graph } from './import-graph.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const graph = importGraph(ROOT, ['src', 'bench', 'workers']);

/** Imports from files under `from` into files under any of `into`. */
function crossings(g: Graph, from: string, into: string[]): string[] {
  const out: string[] = [];
  for (const [file, deps] of g) {
    if (!file.startsWith(from)) continue;
    for (const dep of deps) if (into.some((p) => dep.startsWith(p))) out.push(`${file} -> ${dep}`);
  }
  return out;
}

describe('import graph', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'svc-cycles-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('reads the whole tree', () => {
    // A broken reader would find no edges and so no cycles: make sure it sees the real imports.
    expect(graph.size).toBeGreaterThan(100);
    expect(graph.get('src/app.ts')).toContain('src/context.ts');
    expect(graph.get('src/management/api.ts')).toContain('src/management/authenticate.ts');
  });

  it('finds a cycle made of type-only imports, and a dynamic import closing one', () => {
    mkdirSync(join(scratch, 'src', 'a'), { recursive: true });
    writeFileSync(join(scratch, 'src', 'a', 'one.ts'), "import type { Two } from './two.js';\nexport type One = { two?: Two };\n");
    writeFileSync(join(scratch, 'src', 'a', 'two.ts'), "import type { One } from './one.js';\nexport type Two = { one?: One };\n");
    writeFileSync(join(scratch, 'src', 'three.ts'), "export const three = () => import('./four.js');\n");
    writeFileSync(join(scratch, 'src', 'four.ts'), "export { three } from './three.js';\n");
    writeFileSync(join(scratch, 'src', 'free.ts'), "import type { One } from './a/one.js';\nexport type Free = One;\n");
    const found = cycles(importGraph(scratch, ['src']));
    expect(found).toEqual(expect.arrayContaining([['src/a/one.ts', 'src/a/two.ts'], ['src/four.ts', 'src/three.ts']]));
    expect(found).toHaveLength(2);
  });

  it('has no import cycle in src, bench or workers', () => {
    expect(cycles(graph)).toEqual([]);
  });

  it('keeps the OIDC surface out of the Management API, and the domains out of every surface', () => {
    expect(crossings(graph, 'src/oidc/', ['src/management/'])).toEqual([]);
    for (const domain of ['src/clients/', 'src/users/', 'src/sessions/', 'src/tenants/', 'src/resources/']) {
      expect(crossings(graph, domain, ['src/management/', 'src/oidc/', 'src/ui/', 'src/tenancy/actor.ts', 'src/app.ts'])).toEqual([]);
    }
  });

  it('lets the domains throw only neutral errors: none of them builds an HTTP problem', () => {
    for (const domain of ['src/clients/', 'src/users/', 'src/sessions/', 'src/tenants/', 'src/resources/']) {
      expect(crossings(graph, domain, ['src/http/problem.ts'])).toEqual([]);
    }
  });
});
