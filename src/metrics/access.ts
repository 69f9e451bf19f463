/**
 * Who may read the metrics endpoint (issue 12 item 12). Metrics name tenants, clients and traffic,
 * so in a multi-tenant production they are not served on tenant hosts:
 * - with `features.metrics.bearer_token` set, every scrape must bring `Authorization: Bearer <it>`
 *   (any host, any mode);
 * - otherwise, multi-tenant mode outside development/test serves them only on the `_ops` host
 *   (`_ops.<base host>`, never the tenant header: any client can send a header through a public
 *   host); other hosts answer as if there were no such route;
 * - otherwise (single-tenant, or development/test) they are public as before.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Config } from '../config/index.js';
import type { HttpRequest } from '../http/types.js';

export type MetricsAccess = 'allow' | 'unauthorized' | 'not-found';

const digest = (value: string) => createHash('sha256').update(value).digest();

export function metricsAccessCheck(config: Config, subdomainOf: (req: Pick<HttpRequest, 'headers'>) => string | undefined): (req: Pick<HttpRequest, 'headers'>) => MetricsAccess {
  const bearer = config.features.metrics.bearer_token;
  const expected = bearer ? digest(bearer) : undefined;
  const hostOnly = config.multi_tenancy.enabled && config.node_env !== 'development' && config.node_env !== 'test';
  return (req) => {
    if (expected) {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
      // Digests compared in constant time (equal length whatever was sent).
      return m && timingSafeEqual(digest(m[1]!), expected) ? 'allow' : 'unauthorized';
    }
    if (hostOnly && subdomainOf(req) !== '_ops') return 'not-found';
    return 'allow';
  };
}
