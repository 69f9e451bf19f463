/**
 * Issue 17 (idle RSS < 150 MB, restart to ready < 1.5 s): packages that only some requests or
 * some deployments need are loaded on first use, never by the service's start-up. This walks the
 * static value imports from src/main.ts and src/service.ts, which main.ts loads once it has decided
 * not to re-execute the process (an `import type`, a type-only re-export and a dynamic
 * `import()` are not loaded at start; every other import counts, even one the compiler would
 * elide, so the check errs on the strict side) and fails with the chain that reaches one of them.
 */
import { readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Loaded on first use: passkeys, SMTP, TOTP enrolment, Redis, PostgreSQL, the first hash, the first Management API answer. */
const LAZY_PACKAGES = ['@simplewebauthn/server', 'nodemailer', 'qrcode', 'ioredis', 'pg', 'piscina', 'fast-json-stringify'];

/** Module specifiers a file loads when it is evaluated (relative ones resolved to .ts files). */
function startUpImports(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, false);
  const out: string[] = [];
  for (const node of source.statements) {
    let spec: ts.Expression | undefined;
    if (ts.isImportDeclaration(node)) {
      const clause = node.importClause;
      const bindings = clause?.namedBindings;
      const onlyTypes =
        clause !== undefined &&
        (clause.isTypeOnly || (clause.name === undefined && bindings !== undefined && ts.isNamedImports(bindings) && bindings.elements.length > 0 && bindings.elements.every((e) => e.isTypeOnly)));
      if (!onlyTypes) spec = node.moduleSpecifier;
    } else if (ts.isExportDeclaration(node) && !node.isTypeOnly) {
      spec = node.moduleSpecifier;
    }
    if (spec && ts.isStringLiteral(spec)) out.push(spec.text.startsWith('.') ? resolve(dirname(file), spec.text.replace(/\.js$/, '.ts')) : spec.text);
  }
  return out;
}

/** The package a bare specifier names ('@scope/name/sub' -> '@scope/name'). */
const packageOf = (spec: string) => spec.split('/').slice(0, spec.startsWith('@') ? 2 : 1).join('/');

describe('start-up imports (issue 17)', () => {
  it('the service does not load the packages of rarely used features at start', () => {
    const entries = [resolve(ROOT, 'src/main.ts'), resolve(ROOT, 'src/service.ts')];
    const cameFrom = new Map<string, string | undefined>(entries.map((e) => [e, undefined]));
    const queue = [...entries];
    const reached: string[] = [];
    while (queue.length) {
      const file = queue.shift()!;
      for (const dep of startUpImports(file)) {
        if (!dep.startsWith('/')) {
          if (LAZY_PACKAGES.includes(packageOf(dep))) {
            const chain = [dep];
            for (let f: string | undefined = file; f; f = cameFrom.get(f)) chain.unshift(relative(ROOT, f));
            reached.push(chain.join(' -> '));
          }
          continue;
        }
        if (cameFrom.has(dep)) continue;
        cameFrom.set(dep, file);
        queue.push(dep);
      }
    }
    expect(cameFrom.size).toBeGreaterThan(100); // the walk really followed the service's imports
    expect(reached).toEqual([]);
  });

  it('counts value imports and skips type-only ones', () => {
    const deps = startUpImports(resolve(ROOT, 'src/users/passkeys.ts'));
    expect(deps).toContain('zod');
    expect(deps).not.toContain('@simplewebauthn/server');
  });
});
