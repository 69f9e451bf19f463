/** HTML building blocks for the end-user pages: escaping, the page layout, security headers. */
import { createHash } from 'node:crypto';
import type { PageUi } from './page-ui.js';

import { Html, esc } from './escape.js';

export { Html, esc, html } from './escape.js';

export interface PageOptions {
  title: string;
  ui: PageUi;
  /** Path of a same-origin script (the passkey pages only); the page's headers must allow it. */
  script?: string;
}

/** The language switcher: plain links (no script), each language named in itself. */
function languageSwitcher(ui: PageUi): string {
  if (!ui.languages.length) return '';
  const items = ui.languages
    .map((l) => `<li><a href="${esc(l.href)}" hreflang="${l.lang}" lang="${l.lang}"${l.current ? ' aria-current="true"' : ''}>${esc(l.name)}</a></li>`)
    .join('');
  return `<nav class="languages" aria-label="${esc(ui.t('lang.label'))}"><ul>${items}</ul></nav>\n`;
}

/** The brand's header: the logo (light and dark variants) with the company name as alt text, or the name. */
function brandHeader(ui: PageUi): string {
  const b = ui.brand;
  if (!b?.name && !b?.logoLight && !b?.description) return '';
  const name = b.name ?? '';
  const description = b.description ? `<p class="brand-description">${esc(b.description)}</p>` : '';
  if (!b.logoLight) return `<header class="brand">${name ? `<p class="brand-name">${esc(name)}</p>` : ''}${description}</header>\n`;
  const dark = b.logoDark && b.logoDark !== b.logoLight ? `<img class="logo logo-dark" src="${esc(b.logoDark)}" alt="${esc(name)}">` : '';
  return `<header class="brand"><img class="logo logo-light" src="${esc(b.logoLight)}" alt="${esc(name)}">${dark}${description}</header>\n`;
}

/** The organisation's links (`integrations.urls`): its website (named by its host), privacy policy and terms. */
function brandFooter(ui: PageUi): string {
  const links = ui.brand?.links;
  if (!links) return '';
  const items: string[] = [];
  if (links.website) items.push(`<li><a href="${esc(links.website)}" rel="noopener noreferrer">${esc(hostOf(links.website))}</a></li>`);
  if (links.privacy_policy) items.push(`<li><a href="${esc(links.privacy_policy)}" rel="noopener noreferrer">${esc(ui.t('footer.privacy_policy'))}</a></li>`);
  if (links.terms) items.push(`<li><a href="${esc(links.terms)}" rel="noopener noreferrer">${esc(ui.t('footer.terms'))}</a></li>`);
  return items.length ? `<footer class="legal"><ul>${items.join('')}</ul></footer>\n` : '';
}

const hostOf = (url: string): string => {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
};

/**
 * The default icon (a padlock on the accent colour) as a data: URI, used when the tenant's branding
 * names no favicon, so browsers never ask for /favicon.ico (a 404 in the console and the log).
 */
export const DEFAULT_FAVICON =
  "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'%3E%3Crect width='32' height='32' rx='7' fill='%232456d3'/%3E%3Cpath d='M16 6a5.5 5.5 0 0 0-5.5 5.5V15H9v11h14V15h-1.5v-3.5A5.5 5.5 0 0 0 16 6zm-3 9v-3.5a3 3 0 0 1 6 0V15z' fill='%23fff'/%3E%3C/svg%3E";

export function layout(opts: PageOptions, body: Html): string {
  const { ui } = opts;
  const title = ui.brand?.title ? `${opts.title} - ${ui.brand.title}` : opts.title;
  return `<!DOCTYPE html>
<html lang="${esc(ui.t.lang)}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${esc(title)}</title>
<link rel="stylesheet" href="${esc(ui.stylesheet)}">${opts.script ? `\n<script src="${esc(opts.script)}" defer></script>` : ''}
${ui.brandStylesheet ? `<link rel="stylesheet" href="${esc(ui.brandStylesheet)}">\n` : ''}<link rel="icon" href="${esc(ui.brand?.favicon ?? DEFAULT_FAVICON)}">
</head>
<body>
<main class="card">
${brandHeader(ui)}${body.value}
</main>
${brandFooter(ui)}${languageSwitcher(ui)}</body>
</html>`;
}

/**
 * Headers of every end-user page: no caching, no framing, a CSP without scripts. `formTargets`
 * lists where a form on the page may lead (Chrome checks form-action on the redirects that follow
 * a submission, so the client's redirect origin must be allowed).
 */
export function pageHeaders(formTargets: string[] = [], opts: { script?: boolean; imgSources?: string[] } = {}): Record<string, string> {
  const formAction = ["'self'", ...new Set(formTargets)].join(' ');
  // Pages running a passkey ceremony load the service's own script and fetch its options, nothing else.
  const script = opts.script ? "; script-src 'self'; connect-src 'self'" : '';
  // Images from elsewhere the page shows (the client's https logo_uri): named even where the
  // schemes below already cover them, so narrowing those stays safe for the logo.
  const imgs = opts.imgSources?.length ? ` ${[...new Set(opts.imgSources)].join(' ')}` : '';
  return {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    pragma: 'no-cache',
    'content-security-policy': `default-src 'none'; style-src 'self'; img-src 'self' data: https: http:${imgs}; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'${script}`,
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  };
}

/** CSP source for a redirect URI: its origin, or its scheme for native custom-scheme URIs. */
export function formTargetOf(uri: string | undefined): string[] {
  if (!uri) return [];
  try {
    const u = new URL(uri);
    return u.protocol === 'http:' || u.protocol === 'https:' ? [u.origin] : [u.protocol];
  } catch {
    return [];
  }
}

/**
 * Headers of an auto-submitting form page oidc-provider drew (the form_post response mode, a logout
 * without a session): the page headers with form-action allowing the form's own target and
 * `extraTargets` (where the answer to the submission redirects), its one inline script by hash.
 */
export function autoSubmitHeaders(body: string, extraTargets: readonly string[] = []): Record<string, string> {
  const action = /<form method="post" action="([^"]+)"/.exec(body)?.[1]?.replace(/&amp;/g, '&');
  const headers = pageHeaders([...formTargetOf(action), ...extraTargets]);
  const script = /<script>([\s\S]*?)<\/script>/.exec(body)?.[1];
  if (script !== undefined) {
    headers['content-security-policy'] += `; script-src 'sha256-${createHash('sha256').update(script).digest('base64')}'`;
  }
  return headers;
}
