/**
 * Hostile input, part 3: query strings. Every operation with a query schema (allOperations)
 * answers out-of-range or wrongly typed values with 422 naming the parameter, tampered or foreign
 * `after` cursors with 422 on `after` (never 500), and treats SQL/LIKE/HTML injection strings in
 * search and filters as literal text (200). Storage is unchanged afterwards.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../../helpers/app.js';
import { expectValidation } from '../../helpers/problem.js';
import {
  ALL_SCOPES, QUERY_LIMITS, allOperations, expectUnchanged, keyOf, label, listOps, queryFields, resourceOf, seedFixture, send, snapshot,
  realPath, VALID_QUERIES, type Fixture, type Operation, type Snapshot,
} from '../../helpers/hostile.js';

const HIGH = '1000000';
let t: TestApp;
let fx: Fixture;
let admin: string;
let before: Snapshot;
/** A text holding every injection string below, stored in a client and a user. */
const LITERAL = "hostile literal ' OR 1=1 -- 100% a_b <script>alert(1)</script> \\ * '; DROP TABLE users; --";
let literalClient: string;
let literalUser: string;

const INJECTIONS = ["' OR 1=1 --", '%', '_', '<script>', '<script>alert(1)</script>', '\\', '%_%', "'; DROP TABLE users; --", '*', '.*', '{"$gt":""}', "') OR ('1'='1", '\u202e'];

beforeAll(async () => {
  t = await startTestApp({ SECURITY_RATE_LIMIT_READ: HIGH, SECURITY_RATE_LIMIT_WRITE: HIGH, SECURITY_RATE_LIMIT_DELETE: HIGH, SECURITY_RATE_LIMIT_SENSITIVE: HIGH });
  admin = await t.token(ALL_SCOPES);
  fx = await seedFixture(t, async () => admin);
  literalClient = (await api(t, 'POST', '/api/v1/clients', { token: admin, body: { client_name: LITERAL.slice(0, 255), description: LITERAL } })).json.data.client_id;
  literalUser = (await api(t, 'POST', '/api/v1/users', { token: admin, body: { email: `literal-${Date.now()}@example.com`, password: 'Correct-Horse-Battery-1', name: LITERAL } })).json.data.id;
  expect(literalClient && literalUser).toBeTruthy();
  before = await snapshot(t);
});
afterAll(async () => t?.close());

const byLabel = (list: Operation[]) => list.map((o) => [label(o), o] as [string, Operation]);
/** Path (with the fixture's ids) and the operation's required query, plus `extra`. */
function url(o: Operation, extra: Record<string, string>, f: Fixture = fx): string {
  const base = realPath(o, f);
  const params = new URLSearchParams(VALID_QUERIES[keyOf(o)]?.slice(1) ?? '');
  for (const [k, v] of Object.entries(extra)) params.set(k, v);
  const qs = params.toString();
  return qs ? `${base}?${qs}` : base;
}
const get = (o: Operation, extra: Record<string, string>, f?: Fixture) => send(t, o, url(o, extra, f), { token: admin });
const queryOps = allOperations.filter((o) => o.query !== undefined);

/** How each string filter matches: literal substring (search) or literal equality. */
const ci = (s: unknown, v: string) => typeof s === 'string' && s.toLowerCase().includes(v.toLowerCase());
const MATCHERS: Record<string, Record<string, (item: any, v: string) => boolean>> = {
  'GET /api/v1/clients': { q: (c, v) => ci(c.client_name, v) || ci(c.client_id, v) || ci(c.description, v) },
  'GET /api/v1/users': { q: (u, v) => ci(u.email, v) || ci(u.username, v) || ci(u.name, v), role: (u, v) => u.role === v, auth_provider: (u, v) => u.auth_provider === v },
  'GET /api/v1/sessions': { username: (s, v) => s.account_id === v, client_id: (s, v) => s.client_ids.includes(v) },
  'GET /api/v1/audit': { type: (e, v) => e.type === v, username: (e, v) => e.username === v, client_id: (e, v) => e.client_id === v },
  // CSV (issue 16): the same filter as the list; no entry holds these strings, so only the header row.
  'GET /api/v1/audit/export': { type: () => false, username: () => false, client_id: () => false },
  // Not a list: nothing matches, so nothing is revoked.
  'DELETE /api/v1/sessions': { username: () => false, client_id: () => false },
};
/** Free-text filters: every string query parameter that is not the cursor or a date bound. */
// `ip_address` (an address, 422 otherwise) and `tenant` (a tenant name, checked against the caller's
// rights) are typed parameters like the date bounds, not free text.
const textFilters = (o: Operation) => queryFields(o).filter((f) => f.type === 'string' && !['after', 'from', 'to', 'limit', 'ip_address', 'tenant'].includes(f.name));

describe('the query tables cover every operation', () => {
  it('each text filter has a literal matcher', () => {
    for (const o of queryOps) for (const f of textFilters(o)) expect(MATCHERS[keyOf(o)]?.[f.name], `${label(o)} ${f.name}`).toBeTypeOf('function');
  });
  it('every query limit of spec 8 applies to some operation', () => {
    for (const l of QUERY_LIMITS) {
      expect(queryOps.some((o) => queryFields(o).some((f) => f.name === l.param) && (!l.resources || l.resources.includes(resourceOf(o)))), l.param).toBe(true);
    }
  });
  it('the lists are the paginated operations of spec 4', () => {
    expect(listOps.map(label).sort()).toEqual([
      'GET /api/v1/audit', 'GET /api/v1/clients', 'GET /api/v1/registration-tokens', 'GET /api/v1/resources', 'GET /api/v1/sessions', 'GET /api/v1/users', 'GET /api/v1/users/:user_id/activities',
    ]);
  });
});

describe('list parameters', () => {
  describe.each(byLabel(listOps))('%s', (_name, o) => {
    it.each(['0', '101', '-1', 'abc', '1.5', '', '1e2', '0x10', ' 5', '99999999999999999999'])('limit=%j: 422 on limit', async (limit) => {
      expectValidation(await get(o, { limit }), realPath(o, fx), 'limit');
    });

    it('limit=1 and limit=100 are accepted', async () => {
      const one = await get(o, { limit: '1' });
      expect(one.status, one.text).toBe(200);
      expect(one.json.data).toHaveLength(1);
      expect((await get(o, { limit: '100' })).status).toBe(200);
    });

    it('include_count of the wrong type: 422 on include_count', async () => {
      for (const v of ['1', 'yes', 'TRUE', '']) expectValidation(await get(o, { include_count: v }), realPath(o, fx), 'include_count');
    });

    it('a tampered, garbage or over-long cursor: 422 on after, never 500', async () => {
      const first = await get(o, { limit: '1' });
      const cursor = first.json.pagination.next_cursor as string;
      expect(typeof cursor, 'the fixture gives every list a second page').toBe('string');
      expect((await get(o, { limit: '1', after: cursor })).status).toBe(200);
      const [body, sig] = cursor.split('.') as [string, string];
      const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
      const bad = [
        `${flip(body, 0)}.${sig}`,
        `${flip(body, Math.floor(body.length / 2))}.${sig}`,
        `${body}.${flip(sig, 0)}`,
        `${body}.${flip(sig, sig.length - 1)}`,
        `${body}.${sig.slice(0, -1)}`,
        `${cursor}x`,
        `${cursor}.${sig}`,
        body,
        `.${sig}`,
        '.',
        'garbage',
        `${Buffer.from('["2020-01-01T00:00:00.000Z","x"]').toString('base64url')}.${'A'.repeat(22)}`,
        `${Buffer.from('{"created_at":1}').toString('base64url')}.${sig}`,
        randomBytes(48).toString('base64'),
        `${randomBytes(30).toString('base64url')}.${randomBytes(16).toString('base64url')}`,
        "' OR 1=1 --",
        '\u0000',
        'a'.repeat(513),
      ];
      for (const after of bad) {
        const res = await get(o, { after });
        expect(res.status, `after=${JSON.stringify(after.slice(0, 40))}: ${res.text}`).toBe(422);
        expectValidation(res, realPath(o, fx), 'after');
      }
    });

    it('a cursor from another list: 422 on after', async () => {
      const others = listOps.filter((x) => x !== o);
      for (const other of others) {
        const cursor = (await get(other, { limit: '1' })).json.pagination.next_cursor as string;
        const res = await get(o, { after: cursor });
        expect(res.status, `cursor of ${label(other)}: ${res.text}`).toBe(422);
        expectValidation(res, realPath(o, fx), 'after');
      }
      if (o.path.includes(':user_id')) {
        // Another user's activity log is another list.
        const otherUser = { ...fx, userId: fx.otherUserId };
        const cursor = (await get(o, { limit: '1' }, otherUser)).json.pagination.next_cursor as string;
        expectValidation(await get(o, { after: cursor }), realPath(o, fx), 'after');
      }
    });
  });
});

describe('query values of the wrong type or out of range', () => {
  describe.each(byLabel(queryOps))('%s', (_name, o) => {
    const typed = queryFields(o).filter((f) => f.type === 'enum' || f.type === 'boolean');
    if (typed.length) {
      it.each(typed.map((f) => [f.name] as const))('%s not one of its values: 422 naming it', async (name) => {
        for (const v of ['bogus', '', '1', "' OR 1=1 --"]) expectValidation(await get(o, { [name]: v }), realPath(o, fx), name);
      });
    }

    const limits = QUERY_LIMITS.filter((l) => queryFields(o).some((f) => f.name === l.param) && (!l.resources || l.resources.includes(resourceOf(o))));
    if (limits.length) {
      it.each(limits.map((l) => [l.param, l.max] as const))('%s longer than %i characters: 422 naming it; at the limit: 200', async (param, max) => {
        expectValidation(await get(o, { [param]: 'q'.repeat(max + 1) }), realPath(o, fx), param);
        const ok = await get(o, { [param]: 'q'.repeat(max) });
        expect(ok.status, ok.text).toBe(200);
      });
    }

    const dates = queryFields(o).filter((f) => f.name === 'from' || f.name === 'to');
    if (dates.length) {
      it.each(dates.map((f) => [f.name] as const))('%s that is not an ISO 8601 instant: 422 naming it', async (name) => {
        for (const v of ['not-a-date', '2024-13-45', '2024-05-01T25:00:00Z', "' OR 1=1 --", '1714557600', '']) {
          expectValidation(await get(o, { [name]: v }), realPath(o, fx), name);
        }
      });
      it('from later than to: 422 on from', async () => {
        expectValidation(await get(o, { from: '2024-05-02T00:00:00Z', to: '2024-05-01T00:00:00Z' }), realPath(o, fx), 'from');
      });
    }

    const filters = textFilters(o);
    if (filters.length) {
      it.each(filters.map((f) => [f.name] as const))('injection strings in %s are literal text: 200', async (name) => {
        const match = MATCHERS[keyOf(o)]![name]!;
        for (const v of INJECTIONS) {
          const res = await get(o, { [name]: v, ...(listOps.includes(o) ? { limit: '100' } : {}) });
          expect(res.status, `${name}=${JSON.stringify(v)}: ${res.text}`).toBe(200);
          if (o.path.endsWith('/export')) {
            expect(res.text.split('\r\n').filter(Boolean), `${name}=${JSON.stringify(v)}`).toHaveLength(1);
            continue;
          }
          if (!listOps.includes(o)) {
            expect(res.json.data).toEqual({ revoked_count: 0 });
            continue;
          }
          for (const item of res.json.data) expect(match(item, v), `${name}=${JSON.stringify(v)} returned ${JSON.stringify(item)}`).toBe(true);
          // Search finds the record that holds the text literally.
          if (name === 'q' && LITERAL.includes(v)) {
            const ids = res.json.data.map((x: any) => x.client_id ?? x.id);
            expect(ids, `${name}=${JSON.stringify(v)}`).toContain(o.path.includes('clients') ? literalClient : literalUser);
          }
        }
      });

      it.each(filters.map((f) => [f.name] as const))('a NUL character in %s, which storage cannot match literally: 422 naming it', async (name) => {
        for (const v of ['\u0000', 'a\u0000b']) expectValidation(await get(o, { [name]: v }), realPath(o, fx), name);
      });
    }
  });
});

describe('storage after every refused or read-only request', () => {
  it('is unchanged: records, counts, keys, sessions and admin audit entries', async () => {
    expect(before.counts).toMatchObject({ clients: 3, users: 3, registrationTokens: 2, sessions: 2 });
    expectUnchanged(before, await snapshot(t));
  });
});
