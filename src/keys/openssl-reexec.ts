/**
 * Follows the RSA routine advice (openssl-dispatch.ts) without the operator's help (issue 17).
 *
 * OpenSSL reads `OPENSSL_ia32cap` once, when the binary is loaded, so the only way for the service to
 * run with it is to start again with the variable set. Node 20 has no `process.execve`; the project's
 * addon native/reexec calls execve(2): the process image is replaced in place, keeping its pid, its
 * parent, its standard streams and its arguments, before any module of the service is loaded (main.ts
 * calls this first). A supervising parent would have done it too, at the cost of a second Node.js
 * process's memory and of a pid that is not the service's.
 *
 * It happens only where the advice was measured (AMD Zen 3), and never when `OPENSSL_ia32cap` is
 * already in the environment: an operator who wants OpenSSL's own choice starts the service with
 * `OPENSSL_ia32cap=':~0x0'` (masks nothing). Nor when the process has an IPC channel to its parent
 * (its descriptor would not survive the way Node set it up), nor when the addon was not built (no C
 * compiler): the start-up line then keeps the advice, as before.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../paths.js';
import { opensslNote, rsaDispatchAdvice } from './openssl-dispatch.js';

/** Set in the re-executed process's environment: the variable was the service's choice, not the operator's. */
export const AUTO_MARK = 'SVC_OPENSSL_IA32CAP_AUTO';

const ADDON_FILE = join(PROJECT_ROOT, 'native', 'reexec', 'build', 'Release', 'reexec.node');

interface ReexecAddon {
  execve(file: string, argv: string[], env: string[]): never;
}

export interface ProcessFacts {
  env: NodeJS.ProcessEnv;
  cpuinfo: string;
  execPath: string;
  /**
   * The command line as the kernel started it (/proc/self/cmdline): argv[0], Node's options, the
   * script and its arguments. Not process.argv: a runner such as vite-node rewrites that one.
   */
  cmdline: readonly string[];
}

export interface ReexecPlan {
  file: string;
  argv: string[];
  env: string[];
}

/** The execve to run, or undefined when this process should go on as it is. */
export function reexecPlan(facts: ProcessFacts): ReexecPlan | undefined {
  const { env, cmdline } = facts;
  if (env.OPENSSL_ia32cap !== undefined || env[AUTO_MARK] !== undefined || env.NODE_CHANNEL_FD !== undefined) return undefined;
  const advice = rsaDispatchAdvice(facts.cpuinfo);
  if (advice === undefined || cmdline.length === 0) return undefined;
  const entries = Object.entries({ ...env, OPENSSL_ia32cap: advice, [AUTO_MARK]: '1' }).flatMap(([name, value]) => (value === undefined ? [] : [`${name}=${value}`]));
  // Bytes that were not UTF-8 read back as U+FFFD: passing them on would change an argument or a
  // variable, so such a process goes on as it is.
  if ([...cmdline, ...entries].some((text) => text.includes('\uFFFD'))) return undefined;
  return { file: facts.execPath, argv: [...cmdline], env: entries };
}

/** Why reexecForOpenssl() went on without re-executing although the advice applied, if it did. */
let failure: string | undefined;

function loadAddon(): ReexecAddon | undefined {
  if (!existsSync(ADDON_FILE)) return undefined;
  try {
    return createRequire(import.meta.url)(ADDON_FILE) as ReexecAddon;
  } catch {
    return undefined;
  }
}

/**
 * Re-executes this process with the advised `OPENSSL_ia32cap` where the advice applies. Does not
 * return then; returns when there is nothing to do or it could not (opensslStartNote() says why).
 */
export function reexecForOpenssl(): void {
  // The re-executed process, and any the operator tuned: decided without reading a file.
  if (process.env.OPENSSL_ia32cap !== undefined) return;
  let cpuinfo: string;
  let cmdline: string[];
  try {
    cpuinfo = readFileSync('/proc/cpuinfo', 'latin1');
    // NUL-separated, with a NUL after the last argument.
    cmdline = readFileSync('/proc/self/cmdline', 'utf8').split('\0').slice(0, -1);
  } catch {
    return; // Not Linux, or no procfs: no advice either.
  }
  const plan = reexecPlan({ env: process.env, cpuinfo, execPath: process.execPath, cmdline });
  if (plan === undefined) return;
  const addon = loadAddon();
  if (addon === undefined) {
    failure = 'native/reexec is not built';
    return;
  }
  try {
    addon.execve(plan.file, plan.argv, plan.env);
  } catch (err) {
    failure = `execve failed: ${(err as { code?: unknown }).code ?? 'unknown'}`;
  }
}

/** The start-up line's `openssl_rsa` for this process: what it runs with, and who chose it. */
export function opensslStartNote(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return opensslNote(env, { auto: setByService(env), unapplied: failure });
}

/** Whether this environment's `OPENSSL_ia32cap` is the service's own choice (the re-execution's mark). */
export function setByService(env: NodeJS.ProcessEnv): boolean {
  return env[AUTO_MARK] === '1';
}
