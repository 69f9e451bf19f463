// Build of the administration console (issue 16): admin/ -> dist/admin, served at /admin by the
// front door (src/admin/static-console.ts). Preact with the automatic JSX runtime, no plugins.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  base: '/admin/',
  publicDir: false,
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/admin', import.meta.url)),
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    sourcemap: false,
    // One script and one stylesheet: the console is small, and the CSP allows only 'self'.
    modulePreload: { polyfill: false },
  },
});
