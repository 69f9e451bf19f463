/**
 * Headless Debian Chromium through playwright-core (no browser download).
 *
 * One Chromium per test process and set of launch arguments, lent to each file: a test fork runs
 * many files one after another (vitest.config.ts, isolate: false), and starting Chromium costs
 * about a second of CPU each time (more while the other fork is busy). What a file gets behaves as
 * a browser of its own: its `close()` closes the contexts and pages the file opened, not the
 * browser, and every context is as separate from the others (cookies, storage, cache) as it would
 * be in a browser of its own. Playwright stops the shared Chromium when the process exits.
 */
import { chromium, type Browser, type BrowserContext } from 'playwright-core';

/** Chromium resolving every tenant subdomain of localhost to the loopback address (multi-tenant walks). */
export const TENANT_SUBDOMAINS = '--host-resolver-rules=MAP *.localhost 127.0.0.1';

const running = new Map<string, Promise<Browser>>();

function start(extraArgs: readonly string[]): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage', ...extraArgs],
  });
}

async function shared(extraArgs: readonly string[]): Promise<Browser> {
  const key = extraArgs.join('\n');
  const existing = running.get(key);
  if (existing) {
    const browser = await existing.catch(() => undefined);
    if (browser?.isConnected()) return browser;
  }
  const launching = start(extraArgs);
  running.set(key, launching);
  launching.catch(() => running.delete(key));
  const browser = await launching;
  browser.on('disconnected', () => {
    if (running.get(key) === launching) running.delete(key);
  });
  return browser;
}

/** The shared Chromium as one file's browser: `close()` closes what this file opened. */
function lent(browser: Browser): Browser {
  const opened = new Set<BrowserContext>();
  const track = (context: BrowserContext) => {
    opened.add(context);
    context.on('close', () => opened.delete(context));
    return context;
  };
  return new Proxy(browser, {
    get(target, prop) {
      if (prop === 'close') return async () => void (await Promise.all([...opened].map((c) => c.close().catch(() => undefined))));
      if (prop === 'newContext') return async (...args: Parameters<Browser['newContext']>) => track(await target.newContext(...args));
      if (prop === 'newPage') {
        return async (...args: Parameters<Browser['newPage']>) => {
          const page = await target.newPage(...args);
          track(page.context());
          return page;
        };
      }
      if (prop === 'contexts') return () => target.contexts().filter((c) => opened.has(c));
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

export async function launchBrowser(extraArgs: readonly string[] = []): Promise<Browser> {
  return lent(await shared(extraArgs));
}
