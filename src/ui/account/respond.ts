/** Responses of the self-service pages: HTML with the page headers, cookies attached. */
import type { HttpResponse } from '../../http/types.js';
import { pageHeaders } from '../html.js';
import { withCookie } from '../page-ui.js';

export function htmlPage(status: number, body: string, cookies: Array<string | undefined> = [], formTargets: string[] = []): HttpResponse {
  let res: HttpResponse = { status, headers: pageHeaders(formTargets), body };
  for (const c of cookies) res = withCookie(res, c);
  return res;
}

export function seeOther(location: string, cookies: Array<string | undefined> = []): HttpResponse {
  let res: HttpResponse = { status: 303, headers: { location, 'cache-control': 'no-store' } };
  for (const c of cookies) res = withCookie(res, c);
  return res;
}
