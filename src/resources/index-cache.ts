/**
 * A tenant's API resources as the token endpoint needs them: by identifier, and the set of every
 * scope name they define. Built from one storage read and kept by the tenant actor until a
 * resource changes (src/management/resources publishes the change; see the actor's reload).
 */
import type { ResourceRecord, ResourceRepository, TenantId } from '../storage/types.js';
import { MANAGEMENT_RESOURCE } from './management-api.js';

const audiences = (aud: unknown): unknown[] => (Array.isArray(aud) ? aud : aud === undefined || aud === null ? [] : [aud]);

/** No audience (oidc-provider's userinfo tokens) or only the Management API: live without a resource index. */
export function managementOnly(aud: unknown): boolean {
  return audiences(aud).every((a) => a === MANAGEMENT_RESOURCE);
}

export class ResourceIndex {
  private readonly byIdentifier: ReadonlyMap<string, ResourceRecord>;
  /** Every scope name any resource of the tenant defines. */
  readonly scopeNames: ReadonlySet<string>;

  constructor(readonly resources: readonly ResourceRecord[]) {
    this.byIdentifier = new Map(resources.map((r) => [r.identifier, r]));
    this.scopeNames = new Set(resources.flatMap((r) => r.scopes.map((s) => s.name)));
  }

  static async load(repo: ResourceRepository, tenant: TenantId): Promise<ResourceIndex> {
    return new ResourceIndex(await repo.all(tenant));
  }

  get(identifier: string): ResourceRecord | undefined {
    return this.byIdentifier.get(identifier);
  }

  /**
   * Whether a token with audience `aud`, issued at `iat` (seconds), is for resources the tenant has
   * now: the Management API, no audience (userinfo tokens), or a resource created no later than the
   * token. A deleted resource's tokens are inactive, and stay so when another resource later takes
   * its identifier (a token older than the resource was issued for its predecessor; only a token
   * issued within the second the new one was created is taken for the new one's).
   */
  tokenLive(aud: unknown, iat: unknown): boolean {
    return audiences(aud).every((a) => {
      if (a === MANAGEMENT_RESOURCE) return true;
      const record = typeof a === 'string' ? this.byIdentifier.get(a) : undefined;
      if (!record) return false;
      return typeof iat !== 'number' || iat >= Math.floor(Date.parse(record.created_at) / 1000);
    });
  }

  /** The scopes of `resource` a client holding `clientScope` may ask for. */
  allowedFor(resource: ResourceRecord, clientScope: string | undefined): string[] {
    const held = new Set((clientScope ?? '').split(' '));
    return resource.scopes.map((s) => s.name).filter((name) => held.has(name));
  }
}
