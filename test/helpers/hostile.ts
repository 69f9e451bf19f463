/**
 * Shared table of the hostile-input suite (test/e2e/hostile/*.test.ts): the spec's endpoint table,
 * a fixture of real records, a valid request per operation, body field introspection from the zod
 * schemas, the spec 8 limits and a storage snapshot. Every table is checked for completeness
 * against `allOperations`, so a new endpoint fails the suite until it is described here.
 */
import { expect } from 'vitest';
import { allOperations as everyOperation } from '../../src/management/index.js';
import type { Operation } from '../../src/management/operation.js';
import { buildMetadata } from '../../src/clients/rules.js';
import { createClient as createClientRecord } from '../../src/clients/operations.js';
import type { RateClass } from '../../src/management/rate-limit.js';
import { api, type TestApp } from './app.js';
import { requestToken, type Credentials } from './oauth.js';

/**
 * The operations of a single-tenant service, which this suite starts. Platform operations (the
 * tenants resource: multi-tenant mode only, `_platforms` tokens only) answer 404 there before
 * anything else; test/e2e/multitenant.test.ts covers them.
 */
const allOperations = everyOperation.filter((o) => !o.platform);
export { allOperations };
export type { Operation };

const T = 'default';
export const MiB = 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// Spec section 4.3-4.8: method, path, scope and rate class of every Management API operation.
// Written from the spec, not from the code: a wrong class or scope in the code fails the suite.
// ---------------------------------------------------------------------------------------------
export interface SpecEndpoint {
  method: Operation['method'];
  path: string;
  scope: string;
  rateClass: RateClass;
}

const row = (method: SpecEndpoint['method'], path: string, scope: string, rateClass: RateClass): SpecEndpoint => ({ method, path, scope, rateClass });

export const SPEC_ENDPOINTS: SpecEndpoint[] = [
  // 4.3 Clients
  row('GET', '/api/v1/clients', 'svc:clients:read', 'read'),
  row('POST', '/api/v1/clients', 'svc:clients:write', 'write'),
  row('GET', '/api/v1/clients/:client_id', 'svc:clients:read', 'read'),
  row('PUT', '/api/v1/clients/:client_id', 'svc:clients:write', 'write'),
  row('PATCH', '/api/v1/clients/:client_id', 'svc:clients:write', 'write'),
  row('DELETE', '/api/v1/clients/:client_id', 'svc:clients:delete', 'delete'),
  row('POST', '/api/v1/clients/:client_id/activate', 'svc:clients:write', 'write'),
  row('POST', '/api/v1/clients/:client_id/deactivate', 'svc:clients:write', 'write'),
  row('POST', '/api/v1/clients/:client_id/secret', 'svc:clients:delete', 'sensitive'),
  row('GET', '/api/v1/clients/:client_id/stats', 'svc:clients:read', 'read'),
  // 4.4 Users
  row('GET', '/api/v1/users', 'svc:users:read', 'read'),
  row('POST', '/api/v1/users', 'svc:users:write', 'write'),
  row('GET', '/api/v1/users/:user_id', 'svc:users:read', 'read'),
  row('PUT', '/api/v1/users/:user_id', 'svc:users:write', 'write'),
  row('PATCH', '/api/v1/users/:user_id', 'svc:users:write', 'write'),
  row('DELETE', '/api/v1/users/:user_id', 'svc:users:delete', 'delete'),
  row('POST', '/api/v1/users/:user_id/lock', 'svc:users:write', 'write'),
  row('DELETE', '/api/v1/users/:user_id/lock', 'svc:users:write', 'write'),
  row('POST', '/api/v1/users/:user_id/password-reset', 'svc:users:write', 'sensitive'),
  row('POST', '/api/v1/users/:user_id/mfa/reset', 'svc:users:write', 'sensitive'),
  row('GET', '/api/v1/users/:user_id/activities', 'svc:users:read', 'read'),
  row('GET', '/api/v1/users/:user_id/sessions', 'svc:sessions:read', 'read'),
  // 4.5 Sessions
  row('GET', '/api/v1/sessions', 'svc:sessions:read', 'read'),
  row('GET', '/api/v1/sessions/:jti', 'svc:sessions:read', 'read'),
  row('DELETE', '/api/v1/sessions/:jti', 'svc:sessions:revoke', 'delete'),
  row('DELETE', '/api/v1/sessions', 'svc:sessions:revoke', 'delete'),
  // 4.6 Signing keys
  row('GET', '/api/v1/jwks', 'svc:jwks:read', 'read'),
  row('GET', '/api/v1/jwks/:kid', 'svc:jwks:read', 'read'),
  row('POST', '/api/v1/jwks/rotate', 'svc:jwks:rotate', 'sensitive'),
  row('POST', '/api/v1/jwks/retire-expired', 'svc:jwks:rotate', 'sensitive'),
  row('DELETE', '/api/v1/jwks/:kid', 'svc:jwks:rotate', 'sensitive'),
  // 4.7 Audit and statistics
  row('GET', '/api/v1/audit', 'svc:audit:read', 'read'),
  row('GET', '/api/v1/audit/:id', 'svc:audit:read', 'read'),
  row('GET', '/api/v1/audit/types', 'svc:audit:read', 'read'),
  row('GET', '/api/v1/audit/stats', 'svc:stats:read', 'read'),
  row('GET', '/api/v1/stats', 'svc:stats:read', 'read'),
  row('GET', '/api/v1/stats/health', 'svc:stats:read', 'read'),
  // CSV export of the audit log (CONTRACT.md "Administration console", issue 16): the list's scope and class.
  row('GET', '/api/v1/audit/export', 'svc:audit:read', 'read'),
  // 4.8 Registration tokens
  row('GET', '/api/v1/registration-tokens', 'svc:registration-tokens:read', 'read'),
  row('POST', '/api/v1/registration-tokens', 'svc:registration-tokens:write', 'write'),
  row('GET', '/api/v1/registration-tokens/:jti', 'svc:registration-tokens:read', 'read'),
  row('DELETE', '/api/v1/registration-tokens/:jti', 'svc:registration-tokens:delete', 'delete'),
  // API resources and custom claims (CONTRACT.md "API resources", issue 19)
  row('GET', '/api/v1/resources', 'svc:resources:read', 'read'),
  row('POST', '/api/v1/resources', 'svc:resources:write', 'write'),
  row('GET', '/api/v1/resources/:id', 'svc:resources:read', 'read'),
  row('PATCH', '/api/v1/resources/:id', 'svc:resources:write', 'write'),
  row('DELETE', '/api/v1/resources/:id', 'svc:resources:delete', 'delete'),
  row('GET', '/api/v1/claims', 'svc:resources:read', 'read'),
  row('PUT', '/api/v1/claims', 'svc:resources:write', 'write'),
  // The addressed tenant's own configuration (issue 16 follow-up): reads and replaces a section.
  row('GET', '/api/v1/config', 'svc:config:read', 'read'),
  row('PUT', '/api/v1/config/:section', 'svc:config:write', 'write'),
  // The callback URL to register at each social provider (issue 15; shown by the console's Settings).
  row('GET', '/api/v1/config/social-callbacks', 'svc:config:read', 'read'),
];

/** `GET /api/v1/clients/:param`: parameter names do not matter when matching spec and code. */
export const shape = (method: string, path: string) => `${method} ${path.replace(/:[A-Za-z_]+/g, ':param')}`;
export const keyOf = (o: { method: string; path: string }) => `${o.method} ${o.path}`;
export const label = (o: Operation) => keyOf(o);

export function specOf(o: Operation): SpecEndpoint | undefined {
  return SPEC_ENDPOINTS.find((s) => shape(s.method, s.path) === shape(o.method, o.path));
}

/** Every scope some operation needs: the admin token of the suite holds them all. */
export const ALL_SCOPES = [...new Set(allOperations.map((o) => o.scope))].sort();
export const hasParams = (o: Operation) => o.path.includes(':');

// ---------------------------------------------------------------------------------------------
// Fixture: real records every operation can be pointed at.
// ---------------------------------------------------------------------------------------------
export interface Fixture {
  client: Credentials;
  userId: string;
  /** A second user, for cursors of another user's activity list. */
  otherUserId: string;
  registrationTokenJti: string;
  sessionJti: string;
  kid: string;
  auditId: string;
  /** An API resource (issue 19). */
  resourceId: string;
}

/** Which fixture id fills the path parameter of an operation, by the path prefix up to it. */
const PARAM_SOURCES: Array<[prefix: string, pick: (f: Fixture) => string]> = [
  ['/api/v1/clients/:', (f) => f.client.id],
  ['/api/v1/users/:', (f) => f.userId],
  ['/api/v1/sessions/:', (f) => f.sessionJti],
  ['/api/v1/registration-tokens/:', (f) => f.registrationTokenJti],
  ['/api/v1/jwks/:', (f) => f.kid],
  ['/api/v1/audit/:', (f) => f.auditId],
  ['/api/v1/resources/:', (f) => f.resourceId],
  // Not a record: a section name that exists (an unknown one is 404 like an unknown id).
  ['/api/v1/config/:', () => 'branding'],
];

/** The operation's path with its parameter set to `id` (already URL-encoded by the caller). */
export function pathWith(o: Operation, id: string): string {
  return o.path.replace(/:[A-Za-z_]+/, id);
}

/** The operation's path pointing at the fixture's real record. */
export function realPath(o: Operation, f: Fixture): string {
  if (!hasParams(o)) return o.path;
  const source = PARAM_SOURCES.find(([prefix]) => o.path.startsWith(prefix));
  if (!source) throw new Error(`hostile table: no fixture id for the parameter of ${label(o)} (add it to PARAM_SOURCES)`);
  return pathWith(o, encodeURIComponent(source[1](f)));
}

/** A query the operation needs to be valid (bulk revoke needs a filter). */
export const VALID_QUERIES: Record<string, string> = {
  'DELETE /api/v1/sessions': '?username=hostile-nobody',
};

let unique = 0;
/** A fresh suffix, so bodies that must be unique (e-mails, usernames) never clash. */
export const nextId = () => `${process.pid}-${Date.now().toString(36)}-${++unique}`;

/** A minimal valid body for every operation that has one. */
export const VALID_BODIES: Record<string, () => Record<string, unknown>> = {
  'POST /api/v1/clients': () => ({ client_name: `hostile ${nextId()}`, grant_types: ['client_credentials'], scope: 'svc:stats:read' }),
  'PUT /api/v1/clients/:client_id': () => ({ client_name: `hostile put ${nextId()}`, grant_types: ['client_credentials'], scope: 'svc:stats:read' }),
  'PATCH /api/v1/clients/:client_id': () => ({ description: `hostile patch ${nextId()}` }),
  'POST /api/v1/users': () => ({ email: `hostile-${nextId()}@example.com`, password: 'Correct-Horse-Battery-1' }),
  'PUT /api/v1/users/:user_id': () => ({ nickname: `put ${nextId()}` }),
  'PATCH /api/v1/users/:user_id': () => ({ nickname: `patch ${nextId()}` }),
  'POST /api/v1/users/:user_id/password-reset': () => ({ new_password: 'Another-Correct-Horse-2' }),
  'POST /api/v1/registration-tokens': () => ({ expires_in: 3600, max_usage_count: 1 }),
  'POST /api/v1/resources': () => ({ identifier: `https://hostile-${nextId()}.example/`, name: 'hostile api', scopes: [{ name: 'hostile:read' }] }),
  'PATCH /api/v1/resources/:id': () => ({ name: `hostile patch ${nextId()}` }),
  'PUT /api/v1/claims': () => ({ claims: [] }),
};

export function validBody(o: Operation): Record<string, unknown> | undefined {
  if (!o.body) return undefined;
  const make = VALID_BODIES[keyOf(o)];
  if (!make) throw new Error(`hostile table: no valid body for ${label(o)} (add it to VALID_BODIES)`);
  return make();
}

/** A request to the operation that is valid in every respect (real ids, valid body and query). */
export function validRequest(o: Operation, f: Fixture): { path: string; body?: Record<string, unknown> } {
  return { path: realPath(o, f) + (VALID_QUERIES[keyOf(o)] ?? ''), body: validBody(o) };
}

export async function send(
  t: TestApp,
  o: Pick<Operation, 'method'>,
  path: string,
  opts: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
) {
  return api(t, o.method, path, opts);
}

/**
 * A confidential client allowed `scopes`, written straight to storage so creating it costs no
 * Management API rate budget, and a token for it.
 */
export async function newCaller(t: TestApp, scopes: string[] = ALL_SCOPES): Promise<Credentials & { token: string }> {
  const metadata = buildMetadata(
    { client_name: `hostile caller ${nextId()}`, grant_types: ['client_credentials'], scope: scopes.join(' ') },
    undefined,
    t.app.ctx.config,
  );
  const { record, secret } = await createClientRecord({ ctx: t.app.ctx, tenant: T }, metadata);
  const res = await requestToken(t, { id: record.client_id, secret: secret! }, scopes.join(' '));
  if (res.status !== 200) throw new Error(`token for a new caller failed: ${res.status} ${JSON.stringify(res.json)}`);
  return { id: record.client_id, secret: secret!, token: res.json.access_token as string };
}

/**
 * Seeds the records the suite points at, through the API. `token` gives the admin token of each
 * call (the rate-limit file hands out a fresh caller per call to keep its small budgets intact).
 */
export async function seedFixture(t: TestApp, token: () => Promise<string>): Promise<Fixture> {
  const call = async (method: string, path: string, body?: unknown, expected = [200, 201]) => {
    const res = await api(t, method, path, { token: await token(), body });
    if (!expected.includes(res.status)) throw new Error(`seeding ${method} ${path} failed: ${res.status} ${res.text}`);
    return res.json;
  };
  const client = (await call('POST', '/api/v1/clients', { client_name: 'hostile target', grant_types: ['client_credentials'], scope: 'svc:stats:read' })).data;
  const users: string[] = [];
  for (const who of ['one', 'two']) {
    const u = (await call('POST', '/api/v1/users', { email: `hostile-${who}-${nextId()}@example.com`, password: 'Correct-Horse-Battery-1', username: `hostile_${who}_${nextId()}`, name: `Hostile ${who}` })).data;
    users.push(u.id);
    // Two more entries in each user's activity log, so it has a second page.
    await call('POST', `/api/v1/users/${u.id}/lock`);
    await call('DELETE', `/api/v1/users/${u.id}/lock`);
  }
  // Two API resources, so the resources list has a second page.
  const resources: string[] = [];
  for (let i = 0; i < 2; i++) resources.push((await call('POST', '/api/v1/resources', { identifier: `https://hostile-${i}-${nextId()}.example/`, name: `hostile ${i}`, scopes: [{ name: `hostile${i}:read` }] })).data.id);
  const tokens: string[] = [];
  for (let i = 0; i < 2; i++) tokens.push((await call('POST', '/api/v1/registration-tokens', { expires_in: 86400, max_usage_count: 5, note: `hostile ${i}` })).data.jti);

  // Sessions as oidc-provider stores them (see test/e2e/sessions-api.test.ts).
  const oidc = t.app.ctx.storage.oidc;
  const now = Math.floor(Date.now() / 1000);
  const sessions: string[] = [];
  for (let i = 0; i < 2; i++) {
    const jti = `hostile-session-${i}-${nextId()}`;
    const grantId = `grant-${jti}`;
    await oidc.upsert(T, 'Grant', grantId, { jti: grantId, kind: 'Grant', accountId: users[0], clientId: client.client_id, exp: now + 3600 }, now + 3600);
    await oidc.upsert(T, 'Session', jti, {
      jti, kind: 'Session', uid: `uid-${jti}`, iat: now - 60 + i, exp: now + 3600, accountId: users[0], loginTs: now - 60,
      authorizations: { [client.client_id]: { sid: `sid-${jti}`, grantId } },
    }, now + 3600);
    sessions.push(jti);
  }
  const keys = await t.app.ctx.storage.keys.list(T);
  const audit = await t.app.ctx.storage.audit.list(T, {}, { limit: 1, include_count: false });
  return {
    client: { id: client.client_id, secret: client.client_secret },
    userId: users[0]!,
    otherUserId: users[1]!,
    registrationTokenJti: tokens[0]!,
    sessionJti: sessions[0]!,
    kid: keys.find((k) => k.status === 'active')!.kid,
    auditId: audit.items[0]!.id,
    resourceId: resources[0]!,
  };
}

// ---------------------------------------------------------------------------------------------
// Body and query fields, read from the operation's zod schemas.
// ---------------------------------------------------------------------------------------------
export interface FieldInfo {
  name: string;
  /** zod base type after unwrapping optional/default/nullable/pipe: string, number, enum, ... */
  type: string;
  nullable: boolean;
  /** May be left out (optional or defaulted). */
  optional: boolean;
}

function unwrap(schema: any): Omit<FieldInfo, 'name'> {
  let s = schema;
  let nullable = false;
  let optional = false;
  for (;;) {
    const def = s._zod.def;
    if (def.type === 'optional' || def.type === 'default' || def.type === 'prefault') {
      optional = true;
      s = def.innerType;
    } else if (def.type === 'readonly') s = def.innerType;
    else if (def.type === 'nullable') {
      nullable = true;
      s = def.innerType;
    } else if (def.type === 'pipe') s = def.in;
    else return { type: def.type, nullable, optional };
  }
}

function fieldsOf(schema: unknown): FieldInfo[] {
  if (!schema) return [];
  const s = schema as { shape?: Record<string, unknown> };
  if (!s.shape) throw new Error('hostile table: request schemas are expected to be zod objects');
  return Object.entries(s.shape).map(([name, field]) => ({ name, ...unwrap(field) }));
}

export const bodyFields = (o: Operation) => fieldsOf(o.body);
export const queryFields = (o: Operation) => fieldsOf(o.query);

export const bodyOps = allOperations.filter((o) => o.body !== undefined);
export const paramOps = allOperations.filter(hasParams);
/**
 * Path parameters that name no tenant record: a configuration section name is the same in every
 * tenant, so "another tenant's id" means nothing for it (the isolation matrix skips it there; its
 * other tenant case is the token, which every operation gets).
 */
const NON_RECORD_PARAMS = new Set(['PUT /api/v1/config/:section']);
/** Operations whose path parameter is a record of the tenant (a client id, a user id, ...). */
export const recordParamOps = paramOps.filter((o) => !NON_RECORD_PARAMS.has(keyOf(o)));
/** Paginated lists: operations whose query takes `limit` (spec 2.1). */
export const listOps = allOperations.filter((o) => queryFields(o).some((f) => f.name === 'limit'));
/** Methods that may carry a body: the 1 MiB limit applies to all of them. */
export const bodyMethodOps = allOperations.filter((o) => o.method !== 'GET');

/** Values of the wrong JSON type for each zod base type (null is added for non-nullable fields). */
const WRONG_VALUES: Record<string, unknown[]> = {
  string: [42, true, ['x'], { x: 1 }],
  enum: [42, false, ['web'], { x: 1 }, 'not-one-of-the-values'],
  number: ['42', true, [42], { x: 1 }],
  boolean: ['true', 1, [true], { x: 1 }],
  array: ['x', 42, true, { x: 1 }],
  object: ['x', 42, true, [{ x: 1 }]],
};

/** Fields of type unknown are read-only echoes (GET then PUT): accepted and ignored (CONTRACT.md). */
export const isReadOnly = (f: FieldInfo) => f.type === 'unknown';

export function wrongValues(f: FieldInfo): unknown[] {
  const values = WRONG_VALUES[f.type];
  if (!values) throw new Error(`hostile table: no wrong values for a field of type ${f.type} (${f.name})`);
  return f.nullable ? values : [...values, null];
}

/**
 * Read-only fields with a value of the right shape that differs from anything the service would
 * store, so "not stored" is observable.
 */
export const READ_ONLY_SENTINELS: Record<string, unknown> = {
  client_id: 'hostile-client-id',
  client_secret: 'hostile-client-secret-0123456789abcdef',
  active: false,
  created_at: '2000-01-01T00:00:00.000Z',
  updated_at: '2000-01-01T00:00:00.000Z',
  id: 'hostile-user-id',
  locked: true,
  auth_provider: 'hostile-provider',
  mfa: { enabled: true, methods: ['totp'] },
  last_login_at: '2000-01-01T00:00:00.000Z',
};

// ---------------------------------------------------------------------------------------------
// Spec section 8 limits, per resource and body field.
// ---------------------------------------------------------------------------------------------
export interface Limit {
  kind: 'string' | 'number' | 'array';
  min?: number;
  max: number;
}

/** Keyed by `<resource>.<field>`; the resource is the third path segment. */
export const SPEC_LIMITS: Record<string, Limit> = {
  'clients.client_name': { kind: 'string', min: 1, max: 255 },
  'clients.description': { kind: 'string', max: 1000 },
  'users.password': { kind: 'string', min: 8, max: 128 },
  'users.new_password': { kind: 'string', min: 8, max: 128 },
  'users.username': { kind: 'string', min: 1, max: 100 },
  'users.given_name': { kind: 'string', max: 100 },
  'users.family_name': { kind: 'string', max: 100 },
  'users.nickname': { kind: 'string', max: 100 },
  'users.name': { kind: 'string', max: 200 },
  'registration-tokens.expires_in': { kind: 'number', min: 300, max: 2_592_000 },
  'registration-tokens.max_usage_count': { kind: 'number', min: 1, max: 1000 },
  'registration-tokens.policies': { kind: 'array', min: 1, max: 10 },
  'registration-tokens.note': { kind: 'string', max: 500 },
};

export const resourceOf = (o: Operation) => o.path.split('/')[3]!;

/** The limits that apply to an operation's body, by its schema's field names. */
export function limitsOf(o: Operation): Array<[string, Limit]> {
  return bodyFields(o)
    .map((f) => [f.name, SPEC_LIMITS[`${resourceOf(o)}.${f.name}`]] as const)
    .filter((e): e is [string, Limit] => e[1] !== undefined);
}

/** List query limits of spec 8 (plus 2.1 for limit), by query parameter and resource. */
export const QUERY_LIMITS: Array<{ param: string; max: number; resources?: string[] }> = [
  { param: 'q', max: 200 },
  { param: 'role', max: 50 },
  { param: 'auth_provider', max: 50 },
  { param: 'username', max: 255, resources: ['sessions'] },
  { param: 'client_id', max: 255, resources: ['sessions'] },
];

// ---------------------------------------------------------------------------------------------
// Storage snapshot: what a refused request must leave exactly as it was.
// ---------------------------------------------------------------------------------------------
const ADMIN_TYPE = (type: string) => type.includes('.') || type === 'password_reset';

export async function snapshot(t: TestApp) {
  const s = t.app.ctx.storage;
  const all = { limit: 100, include_count: true } as const;
  const clients = await s.clients.list(T, {}, all);
  const users = await s.users.list(T, {}, all);
  const tokens = await s.registrationTokens.list(T, all, new Date(0).toISOString());
  const audit: Record<string, number> = {};
  for (const type of (await s.audit.types(T)).filter(ADMIN_TYPE)) {
    audit[type] = (await s.audit.list(T, { type }, { limit: 1, include_count: true })).total_count!;
  }
  const keys = await s.keys.list(T);
  const sessions = await s.oidc.listByModel(T, 'Session');
  return {
    counts: {
      clients: await s.clients.count(T),
      users: await s.users.count(T),
      registrationTokens: tokens.total_count,
      keys: keys.length,
      sessions: sessions.length,
    },
    audit,
    // Whole records too (usage counters aside: token requests of the suite move them).
    clients: clients.items.map(({ tokens_issued: _n, last_used_at: _l, ...c }) => c),
    users: users.items,
    registrationTokens: tokens.items,
    keys: keys.map(({ private_sealed: _p, ...k }) => k),
    sessions: sessions.map((x) => ({ id: x.id, payload: x.payload })).sort((a, b) => a.id.localeCompare(b.id)),
  };
}

export type Snapshot = Awaited<ReturnType<typeof snapshot>>;

export function expectUnchanged(before: Snapshot, after: Snapshot): void {
  expect(after.counts, 'record counts').toEqual(before.counts);
  expect(after.audit, 'audit entries of admin types').toEqual(before.audit);
  expect(after.clients, 'client records').toEqual(before.clients);
  expect(after.users, 'user records').toEqual(before.users);
  expect(after.registrationTokens, 'registration tokens').toEqual(before.registrationTokens);
  expect(after.keys, 'signing keys').toEqual(before.keys);
  expect(after.sessions, 'sessions').toEqual(before.sessions);
}
