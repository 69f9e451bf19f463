/** HTML building blocks for the end-user pages: escaping, the page layout, security headers. */

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function esc(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** Marks trusted markup built from escaped parts. */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

/** Tagged template: interpolated values are escaped unless they are Html. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]!;
  values.forEach((v, i) => {
    const part = Array.isArray(v) ? v.map((x) => (x instanceof Html ? x.value : esc(x))).join('') : v instanceof Html ? v.value : esc(v);
    out += part + strings[i + 1]!;
  });
  return new Html(out);
}

export interface PageOptions {
  title: string;
  /** Path of the stylesheet served by the actor (same origin). */
  stylesheet: string;
  lang?: string;
  /** Path of a same-origin script (the passkey pages only); the page's headers must allow it. */
  script?: string;
}

export function layout(opts: PageOptions, body: Html): string {
  return `<!DOCTYPE html>
<html lang="${esc(opts.lang ?? 'en')}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${esc(opts.title)}</title>
<link rel="stylesheet" href="${esc(opts.stylesheet)}">${opts.script ? `\n<script src="${esc(opts.script)}" defer></script>` : ''}
</head>
<body>
<main class="card">
${body.value}
</main>
</body>
</html>`;
}

/**
 * Headers of every end-user page: no caching, no framing, a CSP without scripts. `formTargets`
 * lists where a form on the page may lead (Chrome checks form-action on the redirects that follow
 * a submission, so the client's redirect origin must be allowed).
 */
export function pageHeaders(formTargets: string[] = [], opts: { script?: boolean } = {}): Record<string, string> {
  const formAction = ["'self'", ...new Set(formTargets)].join(' ');
  // Pages running a passkey ceremony load the service's own script and fetch its options, nothing else.
  const script = opts.script ? "; script-src 'self'; connect-src 'self'" : '';
  return {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    pragma: 'no-cache',
    'content-security-policy': `default-src 'none'; style-src 'self'; img-src 'self' data:; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'${script}`,
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
