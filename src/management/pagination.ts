/**
 * Opaque cursors (spec 2.1): the last row's sort key, HMAC-signed so a tampered cursor is a 422
 * on `after` and never reaches SQL.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { validation } from '../http/problem.js';
import type { Page, PageRequest } from '../storage/types.js';
import { queryBool, queryInt } from './validation.js';

export const pageQuery = {
  limit: queryInt(1, 100).optional(),
  after: z.string().max(512).optional(),
  include_count: queryBool.optional(),
};

export class Cursors {
  /** `within`: the tenant whose lists these cursors walk (signed into each), '' for platform-wide lists. */
  constructor(
    private readonly key: Buffer,
    private readonly within = '',
  ) {}

  /**
   * The cursors of one tenant's lists: a cursor another tenant's list handed out is a 422 there,
   * not a position read in this tenant's rows (it would end or skip the walk silently).
   */
  of(tenant: string): Cursors {
    return new Cursors(this.key, tenant);
  }

  encode(scope: string, created_at: string, id: string): string {
    const body = Buffer.from(JSON.stringify([created_at, id])).toString('base64url');
    return `${body}.${this.sign(scope, body)}`;
  }

  decode(scope: string, cursor: string): { created_at: string; id: string } {
    const parts = cursor.split('.');
    const [body, sig] = parts;
    const bad = () => validation([{ field: 'after', message: 'Invalid cursor' }]);
    // Exactly `body.signature`: anything appended to a genuine cursor makes it another string.
    if (parts.length !== 2 || !body || !sig) throw bad();
    const expected = Buffer.from(this.sign(scope, body));
    const given = Buffer.from(sig);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw bad();
    try {
      const [created_at, id] = JSON.parse(Buffer.from(body, 'base64url').toString()) as [unknown, unknown];
      if (typeof created_at !== 'string' || typeof id !== 'string') throw new Error('shape');
      return { created_at, id };
    } catch {
      throw bad();
    }
  }

  /** PageRequest from the parsed standard list query. */
  request(scope: string, q: { limit?: number; after?: string; include_count?: boolean }): PageRequest {
    return { limit: q.limit ?? 25, after: q.after ? this.decode(scope, q.after) : undefined, include_count: q.include_count ?? false };
  }

  /** The spec 2.1 envelope. */
  envelope<T, O>(scope: string, page: Page<T>, key: (item: T) => [string, string], present: (item: T) => O) {
    const last = page.items[page.items.length - 1];
    const pagination: { has_more: boolean; next_cursor: string | null; total_count?: number } = {
      has_more: page.has_more,
      next_cursor: page.has_more && last ? this.encode(scope, ...key(last)) : null,
    };
    if (page.total_count !== undefined) pagination.total_count = page.total_count;
    return { data: page.items.map(present), pagination };
  }

  private sign(scope: string, body: string): string {
    return createHmac('sha256', this.key).update(`${this.within}|${scope}|${body}`).digest('base64url').slice(0, 22);
  }
}
