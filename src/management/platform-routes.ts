/**
 * `/platform/*` of the `_platforms` tenant (spec 1.5): cross-tenant management for people, not
 * machines. Authorised by a Bearer access token the `_platforms` issuer gave an end user
 * (authorization code or device flow; opaque or JWT), whose account holds the role
 * `platform_admin` — or `superadmin`, the higher role (the bootstrap administrator has it), which
 * includes it. JSON in and out, the same envelopes and problems as the Management API.
 *
 *   GET   /platform/tenants                 list (limit, after, status)
 *   POST  /platform/tenants                 create
 *   GET   /platform/tenants/:slug           one tenant
 *   PATCH /platform/tenants/:slug           status, display_name, domain
 *   GET   /platform/tenants/:slug/users     the tenant's users (same filters as GET /api/v1/users)
 */
import type { AppContext } from '../context.js';
import { bearerToken } from '../http/bearer.js';
import { ProblemError, notFound, unauthorized } from '../http/problem.js';
import { Router, pathParam } from '../http/router.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import type { Cursors } from './pagination.js';
import { dataEnvelope, listEnvelope, sendJson, serializer } from './respond.js';
import { tenantCreateSchema, tenantListQuery, tenantPatchSchema, tenantResponse } from './tenants/schema.js';
import { presentUser } from '../users/operations.js';
import { userListQuery, userResponse } from './users/schema.js';
import { parseBody, parseQuery } from './validation.js';
import { canSignIn } from '../oidc/accounts.js';
import type { UserRecord } from '../storage/types.js';
import type { TenantHandle } from '../tenancy/handle.js';
import { PLATFORM_TENANT } from '../tenancy/resolver.js';
import { createTenant, getTenant, presentTenant, updateTenant } from '../tenants/operations.js';

/** Roles that may use the platform routes: platform_admin, and superadmin which includes it. */
export const PLATFORM_ADMIN_ROLES: ReadonlySet<string> = new Set(['platform_admin', 'superadmin']);

const oneTenant = serializer(dataEnvelope(tenantResponse));
const manyTenants = serializer(listEnvelope(tenantResponse));
const manyUsers = serializer(listEnvelope(userResponse));

export interface PlatformDeps {
  ctx: AppContext;
  platformActor: () => Promise<TenantHandle>;
  cursors: Cursors;
}

type Handler = (req: HttpRequest, admin: UserRecord) => Promise<HttpResponse>;

export class PlatformRoutes {
  private readonly router = new Router();

  constructor(private readonly deps: PlatformDeps) {
    this.add('GET', '/platform/tenants', (req) => this.list(req));
    this.add('POST', '/platform/tenants', (req, admin) => this.create(req, admin));
    this.add('GET', '/platform/tenants/:slug', async (req) => sendJson(200, oneTenant({ data: presentTenant(await getTenant(this.deps.ctx, pathParam(req, 'slug'))) })));
    this.add('PATCH', '/platform/tenants/:slug', (req, admin) => this.update(req, admin));
    this.add('GET', '/platform/tenants/:slug/users', (req) => this.users(req));
  }

  private add(method: string, path: string, handler: Handler): void {
    // Authorisation first, for every route: nothing is looked up for an anonymous caller.
    this.router.add(method, path, async (req) => handler(req, await this.authorise(req)));
  }

  handle(req: HttpRequest): Promise<HttpResponse> {
    return this.router.dispatch(req, 'platform');
  }

  /** The signed-in platform administrator the Bearer token belongs to; 401 or 403 otherwise. */
  private async authorise(req: HttpRequest): Promise<UserRecord> {
    const token = bearerToken(req);
    if (!token) throw unauthorized('A Bearer access token of a platform administrator is required');
    const actor = await this.deps.platformActor();
    const owner = await actor.accessTokenOwner(token);
    if (!owner) throw unauthorized(`The access token is not a valid user token of the ${PLATFORM_TENANT} issuer`);
    const user = await this.deps.ctx.storage.users.get(PLATFORM_TENANT, owner.accountId);
    if (!user || !canSignIn(user)) throw unauthorized('The account of the access token can no longer sign in');
    if (!PLATFORM_ADMIN_ROLES.has(user.role)) throw new ProblemError(403, 'forbidden', 'The platform routes require the role platform_admin');
    return user;
  }

  private audit(req: HttpRequest, admin: UserRecord, type: string, details: Record<string, unknown>): Promise<unknown> {
    return this.deps.ctx.audit.record(PLATFORM_TENANT, {
      type,
      user_id: admin.id,
      username: admin.email,
      ip_address: req.ip,
      user_agent: req.headers['user-agent'] ?? null,
      details: { ...details, via: 'platform' },
    });
  }

  private async list(req: HttpRequest): Promise<HttpResponse> {
    const { status, ...pq } = parseQuery(tenantListQuery, req);
    const page = await this.deps.ctx.storage.tenants.list({ status }, this.deps.cursors.request('tenants', pq));
    return sendJson(200, manyTenants(this.deps.cursors.envelope('tenants', page, (t) => [t.created_at, t.id], presentTenant)));
  }

  private async create(req: HttpRequest, admin: UserRecord): Promise<HttpResponse> {
    const record = await createTenant(this.deps.ctx, parseBody(tenantCreateSchema, req));
    await this.audit(req, admin, 'tenant.created', { tenant_id: record.id, slug: record.slug });
    return sendJson(201, oneTenant({ data: presentTenant(record) }));
  }

  private async update(req: HttpRequest, admin: UserRecord): Promise<HttpResponse> {
    const body = parseBody(tenantPatchSchema, req);
    const record = await updateTenant(this.deps.ctx, pathParam(req, 'slug'), body);
    await this.audit(req, admin, 'tenant.updated', { tenant_id: record.id, slug: record.slug, fields: Object.keys(body), status: record.status });
    return sendJson(200, oneTenant({ data: presentTenant(record) }));
  }

  private async users(req: HttpRequest): Promise<HttpResponse> {
    const slug = pathParam(req, 'slug');
    const { account_enabled, role, auth_provider, q, ...pq } = parseQuery(userListQuery, req);
    // Any tenant that resolves has users, `default` included (the registry knows it hard-coded).
    if (!(await this.deps.ctx.registry.find(slug))) throw notFound(`Tenant ${slug} not found`);
    const page = await this.deps.ctx.storage.users.list(slug, { account_enabled, role, auth_provider, q }, this.deps.cursors.request('users', pq));
    const now = new Date().toISOString();
    return sendJson(200, manyUsers(this.deps.cursors.envelope('users', page, (u) => [u.created_at, u.id], (u) => presentUser(u, now))));
  }
}
