/**
 * Parses the configuration once at start: JSON file (SVC_CONFIG_FILE) under environment variables.
 * Nothing else in the code base reads process.env, except the transport switch UWS_USE_FALLBACK
 * (http/server.ts), read before any configuration exists.
 */
import { parseCidrList } from '../http/client-ip.js';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { configSchema, type Config, type ParsedConfig } from './schema.js';
import { socialUrlProblems } from './social.js';
import { outboundPolicy, urlProblem } from '../outbound/policy.js';

export type { Config } from './schema.js';

/**
 * Paths the front door (app.ts `route`) gives to something else: the health probes, the Management
 * API, the platform routes (multi-tenant; refused in either mode, so switching modes cannot make a
 * working configuration hide them), the account pages, the console and the shared stylesheet. The
 * metrics route is matched before most of them, so a metrics path on or under one would hide that
 * route (a tenant's JWKS, `/platform/tenants`), and `/healthz` and `/readyz` are matched before it,
 * which would hide the metrics. `_ops`'s social relay lives under the OIDC path, refused apart.
 */
const ROUTED_PATHS = ['/healthz', '/readyz', '/api', '/platform', '/account', '/admin', '/assets'];

/** Why the metrics path cannot be served, or undefined when it can. */
function metricsPathClash(path: string, oidcPath: string): string | undefined {
  const on = (prefix: string) => path === prefix || path.startsWith(`${prefix}/`);
  if (on(oidcPath)) return `${path} is under the OIDC path ${oidcPath} (OIDC_PATH): choose a path outside it, such as /metrics`;
  const taken = ROUTED_PATHS.find(on);
  return taken ? `${path} is taken by the service's own ${taken} route: choose another path, such as /metrics` : undefined;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration: ${problems.join('; ')}`);
    this.name = 'ConfigError';
  }
}

type LeafKind = 'string' | 'number' | 'boolean' | 'array';
export interface SettingLeaf {
  path: string[];
  env: string;
  kind: LeafKind;
}

type AnySchema = z.ZodType;

function unwrap(schema: AnySchema): AnySchema {
  let s = schema;
  // default / prefault / optional / pipe wrappers all keep the real type inside.
  for (;;) {
    const def = s.def as { type: string; innerType?: AnySchema; in?: AnySchema };
    if (def.innerType && ['default', 'prefault', 'optional', 'nullable', 'catch', 'readonly'].includes(def.type)) s = def.innerType;
    else if (def.type === 'pipe' && def.in) s = def.in;
    else return s;
  }
}

/** Every leaf setting with its environment variable name, derived from the schema. */
export function settingLeaves(schema: AnySchema = configSchema, path: string[] = []): SettingLeaf[] {
  const inner = unwrap(schema);
  const type = inner.def.type;
  if (type === 'object') {
    const shape = (inner as z.ZodObject).shape as Record<string, AnySchema>;
    return Object.entries(shape).flatMap(([key, child]) => settingLeaves(child, [...path, key]));
  }
  const kind: LeafKind = type === 'number' || type === 'int' ? 'number' : type === 'boolean' ? 'boolean' : type === 'array' ? 'array' : 'string';
  return [{ path, env: path.join('_').toUpperCase(), kind }];
}

function coerce(raw: string, kind: LeafKind): unknown {
  switch (kind) {
    case 'number':
      return raw.trim() === '' ? Number.NaN : Number(raw);
    case 'boolean':
      if (/^(true|1|yes|on)$/i.test(raw)) return true;
      if (/^(false|0|no|off)$/i.test(raw)) return false;
      return raw; // let zod name the setting and say why
    case 'array':
      return raw.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
    default:
      return raw;
  }
}

function setPath(target: Record<string, unknown>, path: string[], value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1]!] = value;
}

function fromEnv(env: NodeJS.ProcessEnv, leaves: SettingLeaf[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const leaf of leaves) {
    const raw = env[leaf.env];
    if (raw !== undefined) setPath(out, leaf.path, coerce(raw, leaf.kind));
  }
  return out;
}

function deepMerge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    out[k] =
      v && typeof v === 'object' && !Array.isArray(v) && b && typeof b === 'object' && !Array.isArray(b)
        ? deepMerge(b as Record<string, unknown>, v as Record<string, unknown>)
        : v;
  }
  return out;
}

function readConfigFile(file: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError([`SVC_CONFIG_FILE: cannot read ${file} as JSON (${(err as Error).message})`]);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ConfigError([`SVC_CONFIG_FILE: ${file} must hold a JSON object`]);
  }
  return parsed as Record<string, unknown>;
}

/**
 * Keys of the settings file that are no setting (`security.rate_limit.reed`, a tenant-only section
 * such as `branding`), as dotted paths: zod's objects drop unknown keys, so a typo looked accepted
 * while nothing acted on it. Leaves and strict objects (a social provider) are left to zod, which
 * names their problems itself; a record's keys are names (providers), its values are walked.
 */
export function unknownFileKeys(value: unknown, schema: AnySchema = configSchema, path: string[] = []): string[] {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return [];
  const inner = unwrap(schema);
  const def = inner.def as { type: string; catchall?: AnySchema; valueType?: AnySchema };
  const entries = Object.entries(value as Record<string, unknown>);
  if (def.type === 'record' && def.valueType) return entries.flatMap(([k, v]) => unknownFileKeys(v, def.valueType!, [...path, k]));
  if (def.type !== 'object' || def.catchall) return [];
  const shape = (inner as z.ZodObject).shape as Record<string, AnySchema>;
  return entries.flatMap(([k, v]) => (Object.hasOwn(shape, k) ? unknownFileKeys(v, shape[k]!, [...path, k]) : [[...path, k].join('.')]));
}

/**
 * Multi-tenant mode needs PostgreSQL and Redis (spec 1.5, CONTRACT.md): the one-line reason it
 * cannot start, naming everything missing at once, or undefined.
 */
export function multiTenancyProblem(config: Pick<ParsedConfig, 'multi_tenancy' | 'storage' | 'redis'>): string | undefined {
  if (!config.multi_tenancy.enabled) return undefined;
  const missing: string[] = [];
  if (config.storage.adapter !== 'postgresql') missing.push('STORAGE_ADAPTER=postgresql (SQLite is single-tenant only)');
  if (!config.redis.url) missing.push('REDIS_URL');
  return missing.length ? `MULTI_TENANCY_ENABLED: multi-tenant mode requires ${missing.join(' and ')}` : undefined;
}

/** Parses and validates; throws ConfigError naming each bad setting (by env name) and the reason. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const leaves = settingLeaves();
  const envValues = fromEnv(env, leaves);
  const file = env.SVC_CONFIG_FILE;
  const fromFile = file ? readConfigFile(file) : {};
  const merged = deepMerge(fromFile, envValues);
  const unknown = unknownFileKeys(fromFile).map((key) => `SVC_CONFIG_FILE: ${key} is not a setting (unknown key in ${file})`);

  const result = configSchema.safeParse(merged);
  if (!result.success || unknown.length) {
    const issues = result.success ? [] : result.error.issues;
    const problems = issues.map((issue) => {
      const name = issue.path.length ? issue.path.map(String).filter((p) => !/^\d+$/.test(p)).join('_').toUpperCase() : 'config';
      return `${name}: ${issue.message}`;
    });
    throw new ConfigError([...unknown, ...problems]);
  }
  const parsed = result.data;
  const problems: string[] = [];
  const prodLike = parsed.node_env === 'production' || parsed.node_env === 'staging';
  if (prodLike && !parsed.svc.encryption_key) {
    problems.push(`SVC_ENCRYPTION_KEY: required when NODE_ENV=${parsed.node_env} (32 bytes, base64)`);
  }
  // Every route is served from the host's root (the OIDC endpoints under OIDC_PATH): a path here
  // would name an issuer whose endpoints are not where it says.
  const given = parsed.base_url ? new URL(parsed.base_url) : undefined;
  if (given && (given.pathname.replace(/\/+$/, '') !== '' || given.search || given.hash)) {
    problems.push(`BASE_URL: must be an origin without a path, query or fragment (e.g. ${given.origin}); the OIDC endpoints' path is OIDC_PATH`);
  }
  if (parsed.storage.adapter === 'postgresql' && !parsed.storage.postgresql.url) {
    problems.push('STORAGE_POSTGRESQL_URL: required when STORAGE_ADAPTER=postgresql');
  }
  const mtProblem = multiTenancyProblem(parsed);
  if (mtProblem) problems.push(mtProblem);
  if (Boolean(parsed.svc.bootstrap.client_id) !== Boolean(parsed.svc.bootstrap.client_secret)) {
    problems.push('SVC_BOOTSTRAP_CLIENT_ID: SVC_BOOTSTRAP_CLIENT_ID and SVC_BOOTSTRAP_CLIENT_SECRET must be set together');
  }
  if (Boolean(parsed.svc.bootstrap.admin_email) !== Boolean(parsed.svc.bootstrap.admin_password)) {
    problems.push('SVC_BOOTSTRAP_ADMIN_EMAIL: SVC_BOOTSTRAP_ADMIN_EMAIL and SVC_BOOTSTRAP_ADMIN_PASSWORD must be set together');
  }
  // The relay routes social callbacks through the `_ops` tenant, which exists only in multi-tenant
  // mode: accepted there and ignored here would break the act-or-refuse rule (docs/settings.md).
  if (parsed.features.social_login.relay && !parsed.multi_tenancy.enabled) {
    problems.push('FEATURES_SOCIAL_LOGIN_RELAY: not supported in single-tenant mode (the relay needs MULTI_TENANCY_ENABLED=true)');
  }
  // The URLs a social provider of the file makes the service fetch: the same rule as a tenant's (checked when saved).
  const outbound = outboundPolicy(parsed);
  for (const p of socialUrlProblems(parsed.features.social_login.providers, (url) => urlProblem(url, outbound))) {
    problems.push(`SVC_CONFIG_FILE: features.social_login.providers.${p.path.join('.')}: ${p.message}`);
  }
  const metricsClash = metricsPathClash(parsed.features.metrics.path, parsed.oidc.path);
  if (metricsClash) problems.push(`FEATURES_METRICS_PATH: ${metricsClash}`);
  try {
    parseCidrList(parsed.http.trusted_proxies);
  } catch (err) {
    problems.push(`HTTP_TRUSTED_PROXIES: ${(err as Error).message}`);
  }
  if (problems.length) throw new ConfigError(problems);

  const base = (parsed.base_url ?? `http://localhost:${parsed.port}`).replace(/\/+$/, '');
  return { ...parsed, base_url: base };
}
