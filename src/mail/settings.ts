/**
 * The SMTP server of a tenant: the global `integrations.smtp` with the tenant's override section
 * merged over it (a tenant that sets `host` uses its own server; its password is sealed at rest
 * and unsealed here, at the moment of use).
 */
import type { SmtpSettings } from './types.js';

export interface SmtpConfig {
  host?: string;
  port?: number;
  secure?: boolean;
  username?: string;
  password?: string;
  from?: string;
}

/**
 * `override.password` is sealed: `unseal` reveals it. Without a host there is no server.
 * Without `from`, mail comes from no-reply@<the service's host>.
 */
export function resolveSmtp(global: SmtpConfig, override: SmtpConfig | undefined, unseal: (sealed: string) => string, serviceHost: string): SmtpSettings | undefined {
  // A tenant with its own host uses its own credentials only (never the platform's password on another server).
  const own = Boolean(override?.host);
  const base: SmtpConfig = own ? {} : global;
  const host = override?.host ?? base.host;
  if (!host) return undefined;
  const password = own ? (override?.password ? unseal(override.password) : undefined) : global.password;
  return {
    host,
    port: override?.port ?? base.port ?? global.port ?? 587,
    secure: override?.secure ?? base.secure ?? false,
    username: own ? override?.username : (override?.username ?? global.username),
    password: own ? password : override?.password ? unseal(override.password) : global.password,
    from: override?.from ?? global.from ?? `no-reply@${serviceHost.replace(/:\d+$/, '')}`,
  };
}
