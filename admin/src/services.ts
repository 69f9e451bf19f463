/**
 * What every section reaches through the context: the Management API, the signed-in user, the
 * console's configuration and the status line; and the two hooks built on them (loading data,
 * running an action). The visible building blocks live in components/.
 */
import { createContext } from 'preact';
import { useCallback, useContext, useEffect, useRef, useState } from 'preact/hooks';
import type { Api } from './api';
import type { Auth } from './auth';
import { errorText } from './components/error-box';
import type { ConsoleConfig } from './config';

export interface AppServices {
  api: Api;
  auth: Auth;
  config: ConsoleConfig;
  notify(message: string, kind?: 'ok' | 'error'): void;
}

export const Services = createContext<AppServices>(null as unknown as AppServices);
export const useServices = () => useContext(Services);

export interface Async<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload(): void;
}

/** Runs `load` when `key` changes (and on reload()); the last answer wins. */
export function useAsync<T>(load: () => Promise<T>, key: string): Async<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  const latest = useRef(0);
  useEffect(() => {
    const run = ++latest.current;
    setState((s) => ({ ...s, loading: true, error: undefined }));
    load().then(
      (data) => run === latest.current && setState({ data, loading: false }),
      (error: unknown) => run === latest.current && setState({ error, loading: false }),
    );
  }, [key, tick]);
  return { ...state, error: state.error, data: state.data, reload: useCallback(() => setTick((n) => n + 1), []) };
}

/** Runs an action, then reports success or the problem in words. */
export function useAction() {
  const { notify } = useServices();
  return async (work: () => Promise<unknown>, done: string): Promise<boolean> => {
    try {
      await work();
      notify(done, 'ok');
      return true;
    } catch (err) {
      notify(errorText(err), 'error');
      return false;
    }
  };
}
