/**
 * Tenant resolution (spec 1.5): single-tenant mode is always `default`; multi-tenant mode tries
 * the configured strategies in order (header, subdomain). Reserved tenants `_platforms` and `_ops`
 * resolve although they fail the slug pattern.
 *
 * The subdomain-wins rule (spec 1.5 rule 5): when the host names a tenant and the header names
 * another one, the host wins whatever the configured order, and the resolution reports the
 * conflict so the front door drops the request's authentication state (its cookies). A browser
 * session is bound to the host it was set on; a header must not be able to lift it into another
 * tenant.
 */
import type { Config } from '../config/index.js';
import { badRequest, ProblemError } from '../http/problem.js';
import type { HttpRequest } from '../http/types.js';

export const DEFAULT_TENANT = 'default';
export const PLATFORM_TENANT = '_platforms';
export const OPS_TENANT = '_ops';
export const RESERVED_TENANTS = new Set([DEFAULT_TENANT, PLATFORM_TENANT, OPS_TENANT]);
export const SLUG_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/**
 * `default` exists only in single-tenant mode and, for convenience, in development/test. In a
 * multi-tenant production it is an unknown tenant (404): it would otherwise serve the bare issuer
 * and generate keys for a tenant nobody created (issue 12 item 12).
 */
export function defaultTenantServes(config: Pick<Config, 'multi_tenancy' | 'node_env'>): boolean {
  return !config.multi_tenancy.enabled || config.node_env === 'development' || config.node_env === 'test';
}

export interface Resolution {
  tenant: string;
  via: 'single' | 'header' | 'subdomain' | 'fallback';
  /** The tenant the header named when the subdomain overruled it. */
  conflict?: string;
}

export function isValidTenantName(name: string): boolean {
  return name === PLATFORM_TENANT || name === OPS_TENANT || SLUG_PATTERN.test(name);
}

/** Resolution reads the headers only (the front door's synchronous path has no full request). */
type RequestHeaders = Pick<HttpRequest, 'headers'>;

function hostName(req: RequestHeaders): string {
  const host = (req.headers.host ?? '').toLowerCase();
  return host.startsWith('[') ? host : host.replace(/:\d+$/, '');
}

/** `host[:port]`: a DNS name (a trailing dot allowed), an IPv4 address or a bracketed IPv6 literal. */
const VALID_HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::[0-9]{1,5})?$/;

/** Issuers remembered per tenant; past this many the memo starts over (it is only a cache). */
const ISSUER_MEMO_MAX = 20_000;

export class TenantResolver {
  private readonly baseHost: string;
  /**
   * issuerOf's answers: a URL parse per call was most of what building a tenant actor costs on a
   * pool miss (issue 17 item 6), and the answer never changes for a tenant.
   */
  private readonly issuers = new Map<string, string>();

  constructor(private readonly config: Config) {
    this.baseHost = new URL(config.base_url).hostname.toLowerCase();
  }

  /**
   * The tenant named by the host's left-most label when the host is `<tenant>.<base host>`. A
   * trailing dot is the absolute form of the same name (`acme.localhost.`); an empty label
   * (`acme..localhost`) is a malformed host, returned whole so that it fails the slug pattern (400).
   */
  subdomainOf(req: RequestHeaders): string | undefined {
    const host = hostName(req).replace(/\.$/, '');
    if (!host.endsWith(`.${this.baseHost}`)) return undefined;
    const labels = host.slice(0, -(this.baseHost.length + 1)).split('.');
    return labels.includes('') ? host : labels[0];
  }

  resolve(req: RequestHeaders): Resolution {
    const host = req.headers.host;
    // One host name or address with an optional port (RFC 9112 3.2: a repeated Host, joined with
    // ", " by the server, or any other value is a 400), so that no proxy, firewall or log reading
    // the header another way can disagree with this service about which tenant it names.
    if (host && !VALID_HOST.test(host)) throw badRequest('The Host header must be one host name or address with an optional port');
    const mt = this.config.multi_tenancy;
    if (!mt.enabled) return { tenant: DEFAULT_TENANT, via: 'single' };
    for (const strategy of mt.extraction_priority) {
      const name = this.candidate(req, strategy);
      if (name === undefined) continue;
      if (strategy === 'header' && mt.extraction_priority.includes('subdomain')) {
        const sub = this.validSubdomain(req);
        if (sub !== undefined && sub !== name) return { tenant: sub, via: 'subdomain', conflict: name };
      }
      return { tenant: name, via: strategy };
    }
    if (this.config.node_env === 'development' || this.config.node_env === 'test') {
      return { tenant: DEFAULT_TENANT, via: 'fallback' };
    }
    throw new ProblemError(400, 'tenant-unresolved', `No tenant in the ${mt.tenant_header} header or the host name`);
  }

  /**
   * The tenant a strategy names, undefined when it names none; 400 when malformed. A host name is
   * case-insensitive (subdomainOf lower-cases it); the header is taken as sent, so `ACME` is a
   * malformed slug (spec 1.5 rule 4), not `acme`. Only HTTP's optional whitespace (space, tab)
   * around the value is dropped: String.prototype.trim also removes Unicode spaces (no-break space,
   * U+3000, BOM), which would turn `acme` plus one of them into `acme`.
   */
  private candidate(req: RequestHeaders, strategy: 'header' | 'subdomain'): string | undefined {
    const raw = strategy === 'header' ? req.headers[this.config.multi_tenancy.tenant_header] : this.subdomainOf(req);
    if (raw === undefined) return undefined;
    const name = raw.replace(/^[ \t]+|[ \t]+$/g, '');
    if (name === '') return undefined;
    if (!isValidTenantName(name)) {
      throw new ProblemError(400, 'invalid-tenant', `'${raw.slice(0, 80)}' is not a valid tenant name`);
    }
    return name;
  }

  /** The host's tenant label when it is a well-formed name (a malformed one cannot overrule the header). */
  private validSubdomain(req: RequestHeaders): string | undefined {
    const label = this.subdomainOf(req);
    return label && isValidTenantName(label) ? label : undefined;
  }

  /** Issuer of a tenant (CONTRACT.md): the base URL for `default`, its host prefixed by `<tenant>.` otherwise. */
  issuerOf(tenant: string): string {
    let issuer = this.issuers.get(tenant);
    if (issuer === undefined) {
      const url = new URL(this.config.base_url);
      if (tenant !== DEFAULT_TENANT) url.hostname = `${tenant}.${url.hostname}`;
      issuer = `${url.origin}${this.config.oidc.path}`; // BASE_URL is an origin (config/index.ts)
      if (this.issuers.size >= ISSUER_MEMO_MAX) this.issuers.clear();
      this.issuers.set(tenant, issuer);
    }
    return issuer;
  }
}
