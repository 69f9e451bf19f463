/**
 * A small routing table: exact paths hit a Map, patterns (`/api/v1/clients/:client_id`) are matched
 * segment by segment. Knows which methods a path has, so it can answer 405 instead of 404.
 */
import { ProblemError, notFound } from './problem.js';
import type { Handler, HttpRequest, HttpResponse } from './types.js';

interface Route {
  method: string;
  segments: string[];
  handler: Handler;
  pattern: string;
}

export interface Match {
  handler: Handler;
  params: Record<string, string>;
  pattern: string;
}

export class Router {
  private exact = new Map<string, Map<string, Route>>();
  private patterns: Route[] = [];
  readonly routes: Array<{ method: string; pattern: string }> = [];

  add(method: string, pattern: string, handler: Handler): this {
    const route: Route = { method: method.toUpperCase(), segments: pattern.split('/'), handler, pattern };
    this.routes.push({ method: route.method, pattern });
    if (!pattern.includes(':') && !pattern.includes('*')) {
      let byMethod = this.exact.get(pattern);
      if (!byMethod) this.exact.set(pattern, (byMethod = new Map()));
      byMethod.set(route.method, route);
    } else {
      this.patterns.push(route);
    }
    return this;
  }

  /** Methods the path answers (HEAD wherever GET is), for the Allow header of a 405. */
  allowedMethods(path: string): string[] {
    const exact = this.exact.get(path);
    const methods = new Set<string>(exact?.keys() ?? []);
    const parts = path.split('/');
    if (!exact) for (const r of this.patterns) if (matchSegments(r.segments, parts)) methods.add(r.method);
    if (methods.has('GET')) methods.add('HEAD');
    return [...methods].sort();
  }

  /**
   * The one dispatch of the JSON surfaces (Management API, platform routes): the route's handler
   * with its path parameters, 404 problem+json for an unknown path, 405 with Allow for a known
   * path and another method. `surface` names them in the 404 detail.
   */
  async dispatch(req: HttpRequest, surface: string): Promise<HttpResponse> {
    const match = this.match(req.method, req.path);
    if (match === undefined) throw notFound(`No ${surface} route ${req.method} ${req.path}`);
    if (match === 'method') {
      throw new ProblemError(405, 'method-not-allowed', `${req.method} is not allowed on ${req.path}`, { headers: { allow: this.allowedMethods(req.path).join(', ') } });
    }
    req.params = match.params;
    return match.handler(req);
  }

  /** Returns the match, 'method' when the path exists under another method, or undefined. */
  match(method: string, path: string): Match | 'method' | undefined {
    const exact = this.exact.get(path);
    if (exact) {
      const r = exact.get(method) ?? (method === 'HEAD' ? exact.get('GET') : undefined);
      if (r) return { handler: r.handler, params: {}, pattern: r.pattern };
      // A path registered as itself is that resource under every method: POST /jwks/rotate is not
      // the key `rotate` to a GET or DELETE (which would read, or retire, by that name).
      return 'method';
    }
    const parts = path.split('/');
    let pathKnown = false;
    for (const r of this.patterns) {
      const params = matchSegments(r.segments, parts);
      if (!params) continue;
      if (r.method === method || (method === 'HEAD' && r.method === 'GET')) return { handler: r.handler, params, pattern: r.pattern };
      pathKnown = true;
    }
    return pathKnown ? 'method' : undefined;
  }
}

function matchSegments(segments: string[], parts: string[]): Record<string, string> | undefined {
  const params: Record<string, string> = {};
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    if (seg === '*') {
      params['*'] = parts.slice(i).join('/');
      return params;
    }
    const part = parts[i];
    if (part === undefined) return undefined;
    if (seg.startsWith(':')) {
      if (part === '') return undefined;
      try {
        params[seg.slice(1)] = decodeURIComponent(part);
      } catch {
        return undefined;
      }
    } else if (seg !== part) return undefined;
  }
  return segments.length === parts.length ? params : undefined;
}

export type { HttpRequest };

/**
 * A path parameter of the matched route. A route pattern names its parameters, so a missing one
 * means the handler asked for a name its pattern lacks: 404 rather than an undefined slipping on.
 */
export function pathParam(req: Pick<HttpRequest, 'params' | 'path'>, name: string): string {
  const value = req.params[name];
  if (value === undefined) throw notFound(`No ${name} in ${req.path}`);
  return value;
}
