/**
 * The relying party's `logo_uri` on the sign-in and consent pages (issue 18, item 17). Only an
 * https URL, or a raster/SVG image as a data: URI, is ever shown: an http logo would be mixed
 * content and a tracking pixel in clear text, and anything else (javascript:, file:, ...) is not
 * an image. The page's CSP `img-src` then names exactly the logo's origin (logoImgSources), so
 * the image loads and nothing else from that host can.
 */
import { Html, html } from './escape.js';
import type { PageUi } from './page-ui.js';

const DATA_IMAGE = /^data:image\/(png|gif|jpeg|webp|svg\+xml);base64,[A-Za-z0-9+/=]+$/;

/** The logo address if it may be shown, else undefined. */
export function safeLogoUri(uri: unknown): string | undefined {
  if (typeof uri !== 'string' || uri.length > 8192) return undefined;
  if (DATA_IMAGE.test(uri)) return uri;
  try {
    const u = new URL(uri);
    return u.protocol === 'https:' && !u.username && !u.password ? u.href : undefined;
  } catch {
    return undefined;
  }
}

/** CSP img-src sources the logo needs (data: is allowed on every page already). */
export function logoImgSources(uri: unknown): string[] {
  const safe = safeLogoUri(uri);
  return safe && safe.startsWith('https:') ? [new URL(safe).origin] : [];
}

/** The logo, with the application's name as its alt text; nothing when there is no usable logo. */
export function clientLogo(ui: PageUi, uri: unknown, clientName: string): Html {
  const safe = safeLogoUri(uri);
  return safe ? html`<p class="client-logo"><img src="${safe}" alt="${ui.t('client.logo_alt', { client: clientName })}"></p>` : html``;
}
