/**
 * Imported first by the CLI: oidc-provider prints "Unsupported runtime" on import under Node 20
 * (it prefers 22; the product ships on 20, see README), which would open every command's output
 * with a warning that is not about the command. Only that exact notice is dropped, and only while
 * the modules load; `restoreWarnings()` puts console.warn back.
 */
const NOTICE = 'oidc-provider WARNING: Unsupported runtime';
// On a terminal oidc-provider colours its warning (an SGR escape before and after the text).
const ANSI_ESCAPE = /\x1b\[[0-9;]*m/g;

const original = console.warn;
console.warn = (...args: unknown[]) => {
  if (typeof args[0] === 'string' && args[0].replace(ANSI_ESCAPE, '').startsWith(NOTICE)) return;
  original(...args);
};

export function restoreWarnings(): void {
  console.warn = original;
}
