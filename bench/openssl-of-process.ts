/**
 * Which OpenSSL RSA routine a running server uses, read off its environment (/proc/<pid>/environ):
 * the product sets OPENSSL_ia32cap itself on AMD Zen 3 (src/keys/openssl-reexec.ts), so what the
 * bench passed it is not the whole story. The same wording as the product's start-up line.
 */
import { readFileSync } from 'node:fs';
import { opensslNote } from '../src/keys/openssl-dispatch.js';
import { setByService } from '../src/keys/openssl-reexec.js';

export function opensslOfProcess(pid: number): string | undefined {
  let environ: string;
  try {
    environ = readFileSync(`/proc/${pid}/environ`, 'utf8');
  } catch {
    return undefined; // not Linux, or the process is gone
  }
  const env: NodeJS.ProcessEnv = {};
  for (const entry of environ.split('\0')) {
    const eq = entry.indexOf('=');
    if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  return opensslNote(env, { auto: setByService(env) });
}
