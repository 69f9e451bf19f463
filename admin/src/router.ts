/** Client-side routes under /admin with the filters in the query string (bookmarkable, shareable). */
import { useEffect, useState } from 'preact/hooks';
import { BASE } from './config';

export interface Route {
  /** Path below /admin, '' for the overview ("/clients", "/users/abc"). */
  path: string;
  query: URLSearchParams;
}

const listeners = new Set<() => void>();

function current(): Route {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length).replace(/\/$/, '') : '';
  return { path, query: new URLSearchParams(location.search) };
}

export function href(path: string, query?: Record<string, string | undefined>): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v) params.set(k, v);
  const qs = params.toString();
  return `${BASE}${path}${qs ? `?${qs}` : ''}`;
}

export function navigate(to: string, replace = false): void {
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  for (const l of listeners) l();
  if (!replace) window.scrollTo(0, 0);
}

/** Sets or clears query parameters of the current route (a new filter resets the cursor). */
export function setQuery(changes: Record<string, string | undefined>, replace = false): void {
  const r = current();
  for (const [k, v] of Object.entries(changes)) {
    if (v) r.query.set(k, v);
    else r.query.delete(k);
  }
  const qs = r.query.toString();
  navigate(`${BASE}${r.path}${qs ? `?${qs}` : ''}`, replace);
}

export function useRoute(): Route {
  const [route, setRoute] = useState(current);
  useEffect(() => {
    const update = () => setRoute(current());
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return route;
}

/** Same-origin links inside the console navigate without a reload. */
export function onLinkClick(e: MouseEvent): void {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = (e.target as Element | null)?.closest?.('a');
  // In-page anchors (the skip link) keep the browser's own behaviour: scroll and focus the target.
  if (!a || a.target || a.hasAttribute('download') || a.getAttribute('href')?.startsWith('#')) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith(BASE)) return;
  e.preventDefault();
  navigate(url.pathname + url.search);
}
