/**
 * The administration console's files (built by Vite from admin/ into dist/admin), served by the
 * front door on every tenant's origin at /admin. The console is a single-page application on the
 * Management API: this module only hands out its files; it has no data route of its own.
 *
 * - /admin/assets/*: content-hashed names, cached for a year (`immutable`).
 * - every other /admin path: the HTML shell (client-side routes), `no-cache`, with the tenant's
 *   issuer and slug written into a meta element so the script knows where to sign in (the OIDC
 *   path is configurable, and a CSP of 'self' rules out an inline configuration script).
 * - a Content-Security-Policy of 'self' only on every answer.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { ProblemError } from '../http/problem.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';

export const CONSOLE_PATH = '/admin';

/**
 * Only the console's own origin. frame-src/frame-ancestors 'self': silent token renewal runs the
 * authorization request in a hidden same-origin iframe that lands on /admin/callback.
 */
export const CONSOLE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; font-src 'self'; connect-src 'self'; " +
  "frame-src 'self'; frame-ancestors 'self'; form-action 'self'; base-uri 'none'; object-src 'none'";

const SECURITY_HEADERS = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'SAMEORIGIN',
};

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

/** What the shell tells the script about the tenant it is served for. */
export interface ConsoleTenant {
  tenant: string;
  issuer: string;
  /** `_platforms` in multi-tenant mode: the Tenants section is offered. */
  platform: boolean;
  multiTenant: boolean;
}

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

const PLACEHOLDER = '__SVC_CONSOLE__';

function attr(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export class StaticConsole {
  private assets: Map<string, Asset> | undefined;
  private shell: string | undefined;

  constructor(private readonly dir: string) {}

  /** True when the build output exists (npm run build). */
  get built(): boolean {
    return existsSync(join(this.dir, 'index.html'));
  }

  handle(req: HttpRequest, tenant: ConsoleTenant): HttpResponse {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      throw new ProblemError(405, 'method-not-allowed', `${req.method} is not allowed on ${req.path}`, { headers: { allow: 'GET, HEAD' } });
    }
    if (!this.load()) {
      return {
        status: 503,
        headers: { ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' },
        body: '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Console not built</title></head><body><h1>The administration console is not built</h1><p>Run <code>npm run build</code> (npm start does it).</p></body></html>',
      };
    }
    const sub = req.path.slice(CONSOLE_PATH.length);
    if (sub.startsWith('/assets/')) {
      const asset = this.assets!.get(sub.slice('/assets/'.length));
      if (!asset) return { status: 404, headers: { ...SECURITY_HEADERS, 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' }, body: 'Not found' };
      const headers = { ...SECURITY_HEADERS, 'content-type': asset.type, 'cache-control': 'public, max-age=31536000, immutable', etag: asset.etag };
      if (req.headers['if-none-match'] === asset.etag) return { status: 304, headers };
      return { status: 200, headers, body: asset.body }; // HEAD: the front door writes the length, not the content
    }
    const body = this.shell!.replace(PLACEHOLDER, attr(JSON.stringify(tenant)));
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
    const headers = { ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache', etag };
    if (req.headers['if-none-match'] === etag) return { status: 304, headers };
    return { status: 200, headers, body }; // HEAD: the front door writes the length, not the content
  }

  /** Reads the build output once (a few hundred KB); false while it does not exist. */
  private load(): boolean {
    if (this.assets) return true;
    if (!this.built) return false;
    const assets = new Map<string, Asset>();
    const assetDir = join(this.dir, 'assets');
    if (existsSync(assetDir)) {
      for (const name of readdirSync(assetDir)) {
        const file = join(assetDir, name);
        if (!statSync(file).isFile()) continue;
        const body = readFileSync(file);
        assets.set(name, { body, type: TYPES[extname(name)] ?? 'application/octet-stream', etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` });
      }
    }
    this.shell = readFileSync(join(this.dir, 'index.html'), 'utf8');
    this.assets = assets;
    return true;
  }
}
