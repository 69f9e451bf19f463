/**
 * src/quiet-runtime-notice.ts drops oidc-provider's "Unsupported runtime" warning while the CLI's
 * modules load, also when it is coloured: on a terminal oidc-provider wraps it in ANSI escapes
 * (lib/helpers/attention.js), which the plain prefix did not match. On a real terminal:
 * test/process/cli-commands.test.ts.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';

const NOTICE = 'oidc-provider WARNING: Unsupported runtime. Use Node.js v22.x LTS, or a later LTS release.';
const saved = console.warn;
afterEach(() => {
  console.warn = saved;
});

describe('quiet runtime notice', () => {
  it('drops the notice, plain or coloured, and passes every other warning through', async () => {
    const seen: unknown[][] = [];
    console.warn = (...args: unknown[]) => void seen.push(args);
    vi.resetModules();
    const { restoreWarnings } = await import('../../src/quiet-runtime-notice.js');
    console.warn(NOTICE);
    console.warn(`\x1b[31;1m${NOTICE}\x1b[0m`);
    console.warn('\x1b[33;1moidc-provider WARNING: something else\x1b[0m');
    console.warn('unrelated', 1);
    restoreWarnings();
    console.warn(NOTICE);
    expect(seen).toEqual([['\x1b[33;1moidc-provider WARNING: something else\x1b[0m'], ['unrelated', 1], [NOTICE]]);
  });
});
