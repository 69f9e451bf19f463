/**
 * The console's only way to the data: the Management API (and the platform routes in
 * `_platforms`), with the signed-in user's access token. Problems (RFC 9457) become ApiError with
 * their words and per-field errors for the forms.
 */
import type { Auth } from './auth';

export interface FieldError {
  field: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string,
    readonly type: string,
    readonly errors: FieldError[] = [],
  ) {
    super(detail || title);
  }

  /** Errors of one form field ("redirect_uris.0" belongs to "redirect_uris"). */
  forField(name: string): string | undefined {
    const hits = this.errors.filter((e) => e.field === name || e.field.startsWith(`${name}.`));
    return hits.length ? hits.map((e) => e.message).join('; ') : undefined;
  }
}

export interface Page<T> {
  data: T[];
  pagination: { has_more: boolean; next_cursor: string | null; total_count?: number };
}

type Query = Record<string, string | number | boolean | undefined | null>;

export function queryString(q: Query = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  const s = params.toString();
  return s ? `?${s}` : '';
}

const SIGNED_IN_AFTER_401 = 'svc-console:signed-in-after-401';

/**
 * A 401 is taken for an ended session and answered with a new sign-in, unless one was started for a
 * 401 in the last 30 seconds: a token refused right after a fresh sign-in is refused for what it is,
 * and signing in again would loop for ever. The error is then shown instead.
 */
function refusedRightAfterSignIn(): boolean {
  const last = Number(sessionStorage.getItem(SIGNED_IN_AFTER_401) ?? 0);
  if (Date.now() - last < 30_000) return true;
  sessionStorage.setItem(SIGNED_IN_AFTER_401, String(Date.now()));
  return false;
}

export class Api {
  constructor(private readonly auth: Auth, private readonly onSignedOut: () => void) {}

  async raw(method: string, path: string, opts: { query?: Query; body?: unknown } = {}): Promise<Response> {
    const send = () => {
      const headers: Record<string, string> = { accept: 'application/json' };
      const token = this.auth.accessToken;
      if (token) headers.authorization = `Bearer ${token}`;
      let body: string | undefined;
      if (opts.body !== undefined) {
        headers['content-type'] = 'application/json';
        body = JSON.stringify(opts.body);
      }
      return fetch(`${path}${queryString(opts.query)}`, { method, headers, body, credentials: 'omit', cache: 'no-store' });
    };
    let res = await send();
    if (res.status === 401) {
      if (await this.auth.renew()) res = await send();
      if (res.status === 401 && !refusedRightAfterSignIn()) this.onSignedOut();
    }
    if (!res.ok) {
      const err = await toError(res);
      // A missing scope may be a role changed since sign-in (the API narrows a user's token to the
      // role at every use): a renewal brings the scopes granted now, and one without any
      // administration scope shows the 403 page (Auth.whenNotAdmin). Otherwise the error stands.
      if (res.status === 403 && err.type === 'urn:svc:error:insufficient-scope') await this.auth.renew();
      throw err;
    }
    return res;
  }

  async json<T>(method: string, path: string, opts: { query?: Query; body?: unknown } = {}): Promise<T> {
    const res = await this.raw(method, path, opts);
    if (res.status === 204) return undefined as T;
    return (await res.json()) as T;
  }

  get<T>(path: string, query?: Query): Promise<T> {
    return this.json<T>('GET', path, { query });
  }
}

async function toError(res: Response): Promise<ApiError> {
  let problem: { title?: string; detail?: string; type?: string; errors?: FieldError[] } = {};
  try {
    problem = (await res.json()) as typeof problem;
  } catch {
    // Not problem+json (a proxy's page): the status says enough.
  }
  return new ApiError(res.status, problem.title ?? res.statusText, problem.detail ?? '', problem.type ?? '', Array.isArray(problem.errors) ? problem.errors : []);
}
