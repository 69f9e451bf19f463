/**
 * Small marks for the built-in providers on the "Continue with <name>" links: our own simple
 * drawings in the providers' colours, not the vendors' logo files (none is shipped). Inline SVG,
 * so no request and nothing for the CSP to allow: shapes and presentation attributes only (the
 * page CSP has no 'unsafe-inline' for style, so no style attribute), no script. Each is
 * aria-hidden and not focusable: the link's text stays its accessible name. A mark follows the
 * preset, not the display name (a tenant renaming "Google" to "Workspace" keeps the G); generic
 * OpenID Connect providers have none. Marks drawn in `currentColor` follow the page's text colour
 * (light and dark palettes).
 */
import { Html } from './escape.js';

const SHAPES: Record<string, string> = {
  // A "G": four arcs in Google's colours and the crossbar.
  google:
    '<path d="M21 12a9 9 0 0 0-.2-2H12v4h5" fill="none" stroke="#4285F4" stroke-width="3"/>' +
    '<path d="M18.4 18.3A9 9 0 0 1 4.2 16.5" fill="none" stroke="#34A853" stroke-width="3"/>' +
    '<path d="M4.2 16.5a9 9 0 0 1 0-9" fill="none" stroke="#FBBC05" stroke-width="3"/>' +
    '<path d="M4.2 7.5a9 9 0 0 1 13.9-2.2" fill="none" stroke="#EA4335" stroke-width="3"/>' +
    '<path d="M21 12a9 9 0 0 1-2.6 6.3" fill="none" stroke="#4285F4" stroke-width="3"/>',
  // Four squares.
  microsoft:
    '<rect x="2" y="2" width="9.5" height="9.5" fill="#F25022"/><rect x="12.5" y="2" width="9.5" height="9.5" fill="#7FBA00"/>' +
    '<rect x="2" y="12.5" width="9.5" height="9.5" fill="#00A4EF"/><rect x="12.5" y="12.5" width="9.5" height="9.5" fill="#FFB900"/>',
  // A round head with two ears, the cat's face cut out.
  github:
    '<path d="M12 3.5a8.5 8.5 0 0 0-8.5 8.5c0 3.8 2.5 7 5.9 8.1v-2.9c-2.1.4-2.7-1-2.9-1.6M14.6 20.1v-3.1c0-.9-.3-1.5-.8-1.9 2.6-.3 4.9-1.3 4.9-5.2a4 4 0 0 0-1.1-2.8 3.7 3.7 0 0 0-.1-2.8s-.9-.3-2.9 1a10 10 0 0 0-5.2 0c-2-1.3-2.9-1-2.9-1a3.7 3.7 0 0 0-.1 2.8A4 4 0 0 0 5.3 9.9c0 3.9 2.3 4.9 4.9 5.2-.4.3-.7.8-.8 1.5A8.5 8.5 0 0 0 12 20.5a8.5 8.5 0 0 0 2.6-.4z" fill="none" stroke="currentColor" stroke-width="1.6" stroke-linejoin="round"/>',
  // A fox's head: two ears and a folded face, in oranges.
  gitlab:
    '<path d="M12 21 2.5 13.5 4.8 3.5l3 7h8.4l3-7 2.3 10z" fill="#FC6D26"/><path d="M12 21 7.8 10.5h8.4z" fill="#E24329"/>' +
    '<path d="M12 21 2.5 13.5l5.3-3zM12 21l9.5-7.5-5.3-3z" fill="#FCA326"/>',
  // An apple with a bite and a leaf.
  apple:
    '<path d="M16.4 12.6c0-2 1.6-2.9 1.7-3a3.8 3.8 0 0 0-3-1.6c-1.3-.1-2.5.8-3.1.8-.7 0-1.6-.8-2.7-.7A4 4 0 0 0 6 10.2c-1.4 2.5-.4 6.2 1 8.2.7 1 1.5 2.1 2.5 2 1-.1 1.4-.6 2.6-.6s1.5.6 2.6.6 1.7-1 2.4-2a8 8 0 0 0 1.1-2.2 3.4 3.4 0 0 1-1.8-3.6z" fill="currentColor"/>' +
    '<path d="M14.4 6.2A3.4 3.4 0 0 0 15.2 3.5a3.5 3.5 0 0 0-2.3 1.2 3.2 3.2 0 0 0-.8 2.6 2.9 2.9 0 0 0 2.3-1.1z" fill="currentColor"/>',
  // A white "f" on a blue disc.
  facebook:
    '<circle cx="12" cy="12" r="10" fill="#1877F2"/>' +
    '<path d="M13.4 22v-7h2.3l.4-2.8h-2.7v-1.8c0-.8.3-1.4 1.4-1.4h1.4V6.5a19 19 0 0 0-2.1-.1c-2.1 0-3.5 1.3-3.5 3.6v2.2H8.3V15h2.3v7z" fill="#fff"/>',
};

/** The mark of a preset, or nothing. */
export function socialMark(preset: string | undefined): Html {
  // Own keys only: a name like `__proto__` must not reach Object.prototype.
  const shapes = preset && Object.hasOwn(SHAPES, preset) ? SHAPES[preset] : undefined;
  if (!shapes) return new Html('');
  return new Html(`<svg class="social-mark" viewBox="0 0 24 24" width="20" height="20" aria-hidden="true" focusable="false">${shapes}</svg>`);
}

/** Presets that have a mark (tests, docs). */
export const MARKED_PRESETS = Object.keys(SHAPES);
