/** Light and dark themes: the system preference unless the user picked one (kept in localStorage). */
export type Theme = 'light' | 'dark' | 'system';
const KEY = 'svc-admin-theme';

export function storedTheme(): Theme {
  const v = localStorage.getItem(KEY);
  return v === 'light' || v === 'dark' ? v : 'system';
}

export function applyTheme(theme: Theme = storedTheme()): void {
  if (theme === 'system') {
    localStorage.removeItem(KEY);
    delete document.documentElement.dataset.theme;
  } else {
    localStorage.setItem(KEY, theme);
    document.documentElement.dataset.theme = theme;
  }
}
