/**
 * Apache httpd with mod_auth_openidc as an OAuth 2.0 resource server (a real third-party JWT
 * verifier, Debian's libapache2-mod-auth-openidc): `AuthType oauth20` validates the bearer JWT's
 * signature against the issuer's public keys and its expiry, and `Require claim` checks issuer,
 * audience and scope. The module only fetches JWKS over https, so the test hands it the issuer's
 * current public keys as PEM files (OIDCOAuthVerifyCertFiles kid#file), read from /jwks.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createPublicKey } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const APACHE = '/usr/sbin/apache2';
export const MODULES = '/usr/lib/apache2/modules';

export interface ApacheRs {
  call(token?: string): Promise<number>;
  close(): Promise<void>;
}

export function apacheAvailable(): boolean {
  return existsSync(APACHE) && existsSync(join(MODULES, 'mod_auth_openidc.so'));
}

export async function startApacheRs(opts: { port: number; issuer: string; jwks: { keys: Array<Record<string, unknown>> }; audience: string; scope: string }): Promise<ApacheRs> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-apache-'));
  mkdirSync(join(dir, 'htdocs'));
  writeFileSync(join(dir, 'htdocs', 'orders'), '{"orders":[]}');
  const certs: string[] = [];
  for (const jwk of opts.jwks.keys) {
    if (jwk.kty !== 'RSA' || typeof jwk.kid !== 'string') continue;
    const file = join(dir, `${jwk.kid.replace(/[^A-Za-z0-9_-]/g, '_')}.pem`);
    writeFileSync(file, createPublicKey({ key: jwk as never, format: 'jwk' }).export({ type: 'spki', format: 'pem' }));
    certs.push(`${jwk.kid}#${file}`);
  }
  writeFileSync(
    join(dir, 'httpd.conf'),
    `ServerRoot ${dir}
ServerName 127.0.0.1
Listen 127.0.0.1:${opts.port}
PidFile ${dir}/httpd.pid
ErrorLog ${dir}/error.log
LoadModule mpm_prefork_module ${MODULES}/mod_mpm_prefork.so
LoadModule authn_core_module ${MODULES}/mod_authn_core.so
LoadModule authz_core_module ${MODULES}/mod_authz_core.so
LoadModule authz_user_module ${MODULES}/mod_authz_user.so
LoadModule auth_openidc_module ${MODULES}/mod_auth_openidc.so
User www-data
Group www-data
DocumentRoot ${dir}/htdocs
OIDCCryptoPassphrase ${Math.random().toString(36).slice(2)}${Date.now()}
OIDCOAuthVerifyCertFiles ${certs.join(' ')}
OIDCOAuthRemoteUserClaim sub
<Location /orders>
  AuthType oauth20
  <RequireAll>
    Require claim iss:${opts.issuer}
    Require claim aud:${opts.audience}
    Require claim "scope~(^| )${opts.scope.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}( |$)"
  </RequireAll>
</Location>
`,
  );
  // Apache drops to www-data: the files must be readable by it.
  chmodSync(dir, 0o755);
  const child: ChildProcess = spawn(APACHE, ['-X', '-f', join(dir, 'httpd.conf')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const deadline = Date.now() + 15_000;
  while (!(await listening(opts.port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`apache did not start: ${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    async call(token) {
      const res = await fetch(`http://127.0.0.1:${opts.port}/orders`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
      await res.arrayBuffer();
      return res.status;
    },
    async close() {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}
