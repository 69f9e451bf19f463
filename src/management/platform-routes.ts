/**
 * `/platform/*` of the `_platforms` tenant (spec 1.5): cross-tenant management for people, not
 * machines. Authorised (issue 12, hole 1) by a Management API access token (JWT, audience
 * urn:svc:api:v1) the `_platforms` issuer gave an end user through a FIRST-PARTY client, whose
 * account holds the role `platform_admin` — or `superadmin`, the higher role (the bootstrap
 * administrator has it), which includes it — AND the route's scope below (after narrowing to the
 * role the user holds now: TenantActor.accessTokenOwner). A third-party client a superadmin signed
 * in to therefore gets nothing here. JSON in and out, the same envelopes and problems as the
 * Management API.
 *
 *   GET   /platform/tenants                 list (limit, after, status, q)     svc:tenants:read
 *   POST  /platform/tenants                 create                             svc:tenants:write
 *   GET   /platform/tenants/:slug           one tenant                         svc:tenants:read
 *   PATCH /platform/tenants/:slug           status, display_name, domain       svc:tenants:write
 *   GET   /platform/tenants/:slug/users     the tenant's users                 svc:tenants:read + svc:cross-tenant:read
 */
import type { AppContext } from '../context.js';
import { bearerToken } from '../http/bearer.js';
import { ProblemError, insufficientScope, notFound, unauthorized } from '../http/problem.js';
import { Router, pathParam } from '../http/router.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import type { Cursors } from './pagination.js';
import { dataEnvelope, listEnvelope, sendJson, serializer } from './respond.js';
import { tenantCreateSchema, tenantListQuery, tenantPatchSchema, tenantResponse } from './tenants/schema.js';
import { presentUser } from '../users/operations.js';
import { userListQuery, userResponse } from './users/schema.js';
import { parseBody, parseQuery } from './validation.js';
import type { TokenUser } from '../oidc/token-verification.js';
import { PLATFORM_ADMIN_ROLES } from '../users/roles.js';
import type { TenantHandle } from '../tenancy/handle.js';
import { PLATFORM_TENANT } from '../tenancy/resolver.js';
import { createTenant, getTenant, presentTenant, updateTenant } from '../tenants/operations.js';

/** The platform administrator behind a request, and the client they act through (audit). */
interface PlatformAdmin {
  user: TokenUser;
  clientId: string;
}

const oneTenant = serializer(dataEnvelope(tenantResponse));
const manyTenants = serializer(listEnvelope(tenantResponse));
const manyUsers = serializer(listEnvelope(userResponse));

export interface PlatformDeps {
  ctx: AppContext;
  platformActor: () => Promise<TenantHandle>;
  cursors: Cursors;
}

type Handler = (req: HttpRequest, admin: PlatformAdmin) => Promise<HttpResponse>;

const READ = ['svc:tenants:read'];
const WRITE = ['svc:tenants:write'];

export class PlatformRoutes {
  private readonly router = new Router();

  constructor(private readonly deps: PlatformDeps) {
    this.add('GET', '/platform/tenants', READ, (req) => this.list(req));
    this.add('POST', '/platform/tenants', WRITE, (req, admin) => this.create(req, admin));
    this.add('GET', '/platform/tenants/:slug', READ, async (req) => sendJson(200, oneTenant({ data: presentTenant(await getTenant(this.deps.ctx, pathParam(req, 'slug'))) })));
    this.add('PATCH', '/platform/tenants/:slug', WRITE, (req, admin) => this.update(req, admin));
    this.add('GET', '/platform/tenants/:slug/users', [...READ, 'svc:cross-tenant:read'], (req) => this.users(req));
  }

  private add(method: string, path: string, scopes: readonly string[], handler: Handler): void {
    // Authorisation first, for every route: nothing is looked up for an anonymous caller.
    this.router.add(method, path, async (req) => handler(req, await this.authorise(req, scopes)));
  }

  handle(req: HttpRequest): Promise<HttpResponse> {
    return this.router.dispatch(req, 'platform');
  }

  /** The signed-in platform administrator the Bearer token belongs to; 401 or 403 otherwise. */
  private async authorise(req: HttpRequest, scopes: readonly string[]): Promise<PlatformAdmin> {
    const token = bearerToken(req);
    if (!token) throw unauthorized('A Bearer access token of a platform administrator is required');
    const actor = await this.deps.platformActor();
    // The role first (a clear 403 for an ordinary user), then client and scope.
    const owner = await actor.accessTokenOwner(token, { scopes: [], firstParty: true });
    if (!owner.ok) {
      if (owner.status === 401) throw unauthorized(`The access token is not a valid user token of the ${PLATFORM_TENANT} issuer: ${owner.reason}`);
      throw new ProblemError(403, 'forbidden', `The platform routes refuse this token: ${owner.reason}`);
    }
    if (!PLATFORM_ADMIN_ROLES.has(owner.user.role)) throw new ProblemError(403, 'forbidden', 'The platform routes require the role platform_admin');
    const held = new Set(owner.scope.split(' '));
    const missing = scopes.filter((s) => !held.has(s));
    if (missing.length) throw insufficientScope(missing);
    return { user: owner.user, clientId: owner.clientId };
  }

  private audit(req: HttpRequest, admin: PlatformAdmin, type: string, details: Record<string, unknown>): Promise<unknown> {
    return this.deps.ctx.audit.recordOrFail(PLATFORM_TENANT, {
      type,
      user_id: admin.user.id,
      username: admin.user.email,
      client_id: admin.clientId,
      ip_address: req.ip,
      user_agent: req.headers['user-agent'] ?? null,
      details: { ...details, via: 'platform' },
    });
  }

  private async list(req: HttpRequest): Promise<HttpResponse> {
    const { status, q, ...pq } = parseQuery(tenantListQuery, req);
    const cursors = this.deps.cursors.of(PLATFORM_TENANT);
    const page = await this.deps.ctx.storage.tenants.list({ status, q }, cursors.request('tenants', pq));
    return sendJson(200, manyTenants(cursors.envelope('tenants', page, (t) => [t.created_at, t.id], presentTenant)));
  }

  private async create(req: HttpRequest, admin: PlatformAdmin): Promise<HttpResponse> {
    const record = await createTenant(this.deps.ctx, parseBody(tenantCreateSchema, req));
    await this.audit(req, admin, 'tenant.created', { tenant_id: record.id, slug: record.slug });
    return sendJson(201, oneTenant({ data: presentTenant(record) }));
  }

  private async update(req: HttpRequest, admin: PlatformAdmin): Promise<HttpResponse> {
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
    const page = await this.deps.ctx.storage.users.list(slug, { account_enabled, role, auth_provider, q }, this.deps.cursors.of(slug).request('users', pq));
    const now = new Date().toISOString();
    return sendJson(200, manyUsers(this.deps.cursors.of(slug).envelope('users', page, (u) => [u.created_at, u.id], (u) => presentUser(u, now))));
  }
}
