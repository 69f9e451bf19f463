/** The users resource (spec 4.4) against the real server: uWS, SQLite, the Argon2 worker pool. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';

const ALL = ['svc:users:read', 'svc:users:write', 'svc:users:delete', 'svc:sessions:read'];
const x = (n: number) => 'x'.repeat(n);

describe('users API', () => {
  let t: TestApp;
  let token: string;
  /** Every user object the API returned, as raw text: checked for secrets at the end. */
  const userTexts: string[] = [];
  const allTexts: string[] = [];
  const passwordsUsed = new Set<string>();

  async function call(method: string, path: string, body?: unknown, tok = token) {
    if (body && typeof body === 'object' && body !== null) {
      for (const k of ['password', 'new_password'] as const) {
        const v = (body as Record<string, unknown>)[k];
        // Only distinctive values: the 'xxx…' limit probes also appear as legitimate names.
        if (typeof v === 'string' && v.length >= 8 && !/^x+$/.test(v)) passwordsUsed.add(v);
      }
    }
    const res = await api(t, method, path, { token: tok, body });
    allTexts.push(res.text);
    if (res.status < 300 && res.json?.data && (path.startsWith('/api/v1/users') && !/activities|password-reset|mfa|sessions/.test(path))) userTexts.push(res.text);
    return res;
  }

  let n = 0;
  const email = (tag = 'u') => `${tag}.${++n}@example.com`;
  async function create(body: Record<string, unknown> = {}) {
    const res = await call('POST', '/api/v1/users', { email: email(), password: 'initial-password-1', ...body });
    expect(res.status, res.text).toBe(201);
    return res.json.data as Record<string, any>;
  }
  const expectValidation = (res: { status: number; json: any; headers: Headers }, field: string) => {
    expect(res.status, JSON.stringify(res.json)).toBe(422);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.json).toMatchObject({ type: 'urn:svc:error:validation', title: 'Validation Error', status: 422 });
    expect(res.json.errors.map((e: { field: string }) => e.field)).toContain(field);
  };

  beforeAll(async () => {
    t = await startTestApp({
      SECURITY_RATE_LIMIT_WRITE: '10000',
      SECURITY_RATE_LIMIT_SENSITIVE: '10000',
      SECURITY_RATE_LIMIT_DELETE: '10000',
      SECURITY_RATE_LIMIT_READ: '10000',
    });
    token = await t.token(ALL);
  });
  afterAll(async () => t?.close());

  describe('create', () => {
    it('creates a local user with defaults and returns the public object only', async () => {
      const res = await call('POST', '/api/v1/users', { email: 'Jane.Doe@Example.com', password: 'a-good-password', given_name: 'Jane', family_name: 'Doe' });
      expect(res.status).toBe(201);
      const u = res.json.data;
      expect(u).toEqual({
        id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
        email: 'Jane.Doe@Example.com',
        username: null,
        given_name: 'Jane',
        family_name: 'Doe',
        name: null,
        nickname: null,
        role: 'user',
        account_enabled: true,
        email_verified: false,
        locked: false,
        auth_provider: 'local',
        mfa: { enabled: false, methods: [] },
        created_at: expect.stringMatching(/Z$/),
        updated_at: u.created_at,
        last_login_at: null,
      });
      // Stored with an Argon2id hash of the password, checked through the same worker pool.
      const stored = await t.app.ctx.storage.users.get('default', u.id);
      expect(stored?.password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
      expect(await t.app.ctx.passwords.verify(stored!.password_hash!, 'a-good-password')).toBe(true);
    });

    it('requires a valid e-mail and a password', async () => {
      expectValidation(await call('POST', '/api/v1/users', { password: 'long-enough' }), 'email');
      expectValidation(await call('POST', '/api/v1/users', { email: 'not-an-email', password: 'long-enough' }), 'email');
      expectValidation(await call('POST', '/api/v1/users', { email: email() }), 'password');
    });

    it('enforces the password length 8-128 at each limit', async () => {
      expectValidation(await call('POST', '/api/v1/users', { email: email(), password: x(7) }), 'password');
      await create({ password: x(8) });
      await create({ password: x(128) });
      expectValidation(await call('POST', '/api/v1/users', { email: email(), password: x(129) }), 'password');
    });

    it('enforces the profile field limits at each limit', async () => {
      const limits: Array<[string, number, number]> = [
        ['username', 1, 100],
        ['given_name', 0, 100],
        ['family_name', 0, 100],
        ['nickname', 0, 100],
        ['name', 0, 200],
      ];
      for (const [field, min, max] of limits) {
        const atMax = await create({ [field]: x(max) });
        expect(atMax[field]).toBe(x(max));
        expectValidation(await call('POST', '/api/v1/users', { email: email(), password: 'long-enough', [field]: x(max + 1) }), field);
        if (min === 1) {
          expect((await create({ [field]: 'y' }))[field]).toBe('y');
          expectValidation(await call('POST', '/api/v1/users', { email: email(), password: 'long-enough', [field]: '' }), field);
        }
      }
    });

    it('gives role user by default, accepts admin, and keeps platform roles to _platforms', async () => {
      expect((await create()).role).toBe('user');
      expect((await create({ role: 'admin' })).role).toBe('admin');
      for (const role of ['superadmin', 'platform_admin']) {
        const res = await call('POST', '/api/v1/users', { email: email(), password: 'long-enough', role });
        expectValidation(res, 'role');
        expect(res.json.errors[0].message).toContain('_platforms');
      }
      expectValidation(await call('POST', '/api/v1/users', { email: email(), password: 'long-enough', role: 'root' }), 'role');
    });

    it('rejects a duplicate e-mail in any case with 409, and unknown fields with 422', async () => {
      const first = await create({ email: 'taken@example.com' });
      const dup = await call('POST', '/api/v1/users', { email: 'TAKEN@example.com', password: 'long-enough' });
      expect(dup.status).toBe(409);
      expect(dup.json).toMatchObject({ type: 'urn:svc:error:conflict', status: 409 });
      const list = await call('GET', `/api/v1/users?q=taken%40example.com&include_count=true`);
      expect(list.json.data.map((u: { id: string }) => u.id)).toEqual([first.id]);

      expectValidation(await call('POST', '/api/v1/users', { email: email(), password: 'long-enough', hashedPassword: 'x' }), 'hashedPassword');
      expectValidation(await call('POST', '/api/v1/users', { email: email(), password: 'long-enough', account_enabled: 'yes' }), 'account_enabled');
    });

    it('rejects a second user with the same username with 409', async () => {
      await create({ username: 'unique-name' });
      const res = await call('POST', '/api/v1/users', { email: email(), password: 'long-enough', username: 'Unique-Name' });
      expect(res.status).toBe(409);
    });
  });

  describe('read', () => {
    it('gets a user by id and answers 404 for an unknown one', async () => {
      const u = await create({ nickname: 'nick' });
      const res = await call('GET', `/api/v1/users/${u.id}`);
      expect(res.status).toBe(200);
      expect(res.json.data).toEqual(u);
      const missing = await call('GET', '/api/v1/users/00000000-0000-4000-8000-000000000000');
      expect(missing.status).toBe(404);
      expect(missing.json).toMatchObject({ type: 'urn:svc:error:not-found', instance: '/api/v1/users/00000000-0000-4000-8000-000000000000' });
    });

    it('checks the scope before looking anything up', async () => {
      const readOnly = await t.token('svc:users:read');
      for (const [method, path] of [
        ['POST', '/api/v1/users'],
        ['DELETE', '/api/v1/users/unknown'],
        ['POST', '/api/v1/users/unknown/lock'],
        ['GET', '/api/v1/users/unknown/sessions'],
      ] as const) {
        const res = await api(t, method, path, { token: readOnly, body: method === 'POST' ? {} : undefined });
        expect(res.status, `${method} ${path}`).toBe(403);
      }
      expect((await api(t, 'GET', '/api/v1/users')).status).toBe(401);
    });

    it('lists with filters, search and cursor pagination', async () => {
      const tag = `lst${Date.now()}`;
      const a = await create({ email: `${tag}.a@example.com`, name: 'Zed 50% Alpha' });
      const b = await create({ email: `${tag}_b@example.com`, role: 'admin', username: `${tag}-bee` });
      const c = await create({ email: `${tag}xc@example.com`, account_enabled: false });

      const q = (s: string) => call('GET', `/api/v1/users?${s}`);
      const ids = (res: { json: any }) => res.json.data.map((u: { id: string }) => u.id);
      expect(ids(await q(`q=${tag}`))).toEqual([a.id, b.id, c.id]);
      expect(ids(await q(`q=${tag}_`))).toEqual([b.id]); // `_` is literal, not "any character"
      expect(ids(await q(`q=50%25`))).toEqual([a.id]);
      expect(ids(await q(`q=${tag}-BEE`))).toEqual([b.id]); // username, case-insensitive
      expect(ids(await q(`q=${tag}&role=admin`))).toEqual([b.id]);
      expect(ids(await q(`q=${tag}&account_enabled=false`))).toEqual([c.id]);
      expect(ids(await q(`q=${tag}&auth_provider=google`))).toEqual([]);
      expect(ids(await q(`q=${tag}&auth_provider=local`))).toHaveLength(3);

      const p1 = await q(`q=${tag}&limit=2&include_count=true`);
      expect(p1.json.pagination).toEqual({ has_more: true, next_cursor: expect.any(String), total_count: 3 });
      expect(ids(p1)).toEqual([a.id, b.id]);
      const p2 = await q(`q=${tag}&limit=2&after=${encodeURIComponent(p1.json.pagination.next_cursor)}`);
      expect(ids(p2)).toEqual([c.id]);
      expect(p2.json.pagination).toEqual({ has_more: false, next_cursor: null });
    });

    it('validates the list query at its limits', async () => {
      const ok = (s: string) => call('GET', `/api/v1/users?${s}`).then((r) => expect(r.status, `${s}: ${r.text}`).toBe(200));
      const bad = (s: string, field: string) => call('GET', `/api/v1/users?${s}`).then((r) => expectValidation(r, field));
      await ok(`q=${x(200)}`);
      await bad(`q=${x(201)}`, 'q');
      await ok(`role=${x(50)}`);
      await bad(`role=${x(51)}`, 'role');
      await ok(`auth_provider=${x(50)}`);
      await bad(`auth_provider=${x(51)}`, 'auth_provider');
      await ok('limit=1');
      await ok('limit=100');
      await bad('limit=0', 'limit');
      await bad('limit=101', 'limit');
      await bad('account_enabled=yes', 'account_enabled');
      await bad('after=forged.cursor', 'after');
    });
  });

  describe('update', () => {
    it('PATCH changes only the supplied fields; null clears', async () => {
      const u = await create({ given_name: 'Ann', family_name: 'Lee', nickname: 'al' });
      const res = await call('PATCH', `/api/v1/users/${u.id}`, { family_name: 'Kim', nickname: null });
      expect(res.status).toBe(200);
      expect(res.json.data).toMatchObject({ given_name: 'Ann', family_name: 'Kim', nickname: null, email: u.email, role: 'user' });
      expect(res.json.data.updated_at >= u.updated_at).toBe(true);
    });

    it('PUT replaces every mutable field: omitted ones return to defaults, the e-mail stays', async () => {
      const u = await create({ given_name: 'Ann', username: `put-${n}`, role: 'admin', email_verified: true });
      const res = await call('PUT', `/api/v1/users/${u.id}`, { nickname: 'only-this' });
      expect(res.status).toBe(200);
      expect(res.json.data).toMatchObject({
        email: u.email, nickname: 'only-this', given_name: null, username: null, role: 'user', account_enabled: true, email_verified: false,
      });
      // GET then PUT back round-trips (read-only fields are accepted and ignored).
      const again = await call('PUT', `/api/v1/users/${u.id}`, { ...res.json.data, given_name: 'Back' });
      expect(again.status, again.text).toBe(200);
      expect(again.json.data).toMatchObject({ id: u.id, given_name: 'Back', nickname: 'only-this', created_at: u.created_at });
    });

    it('a read-only field that asks for a change is refused, naming the endpoint that makes it; a lock, kept, round-trips', async () => {
      const u = await create({ given_name: 'Ann' });
      const tries: Array<[string, Record<string, unknown>, string, RegExp]> = [
        ['PATCH', { locked: true, given_name: 'Changed' }, 'locked', new RegExp(`POST /api/v1/users/${u.id}/lock`)],
        ['PUT', { ...u, mfa: { enabled: true, methods: ['totp'] }, given_name: 'Changed' }, 'mfa', /mfa\/reset/],
        ['PATCH', { id: 'someone-else', given_name: 'Changed' }, 'id', /cannot be changed/],
        ['PATCH', { auth_provider: 'github' }, 'auth_provider', /cannot be changed/],
      ];
      for (const [method, body, field, message] of tries) {
        const res = await call(method, `/api/v1/users/${u.id}`, body);
        expect(res.status, res.text).toBe(422);
        expect(res.json.errors).toEqual([{ field, message: expect.stringMatching(message) }]);
      }
      expect((await call('GET', `/api/v1/users/${u.id}`)).json.data).toEqual(u);
      // Locked through its endpoint, the GET sent back (locked: true) is a round trip; unlocked: DELETE named.
      expect((await call('POST', `/api/v1/users/${u.id}/lock`)).status).toBe(200);
      const locked = (await call('GET', `/api/v1/users/${u.id}`)).json.data;
      const back = await call('PUT', `/api/v1/users/${u.id}`, { ...locked, given_name: 'Back' });
      expect(back.status, back.text).toBe(200);
      expect(back.json.data).toMatchObject({ locked: true, given_name: 'Back' });
      const unlock = await call('PATCH', `/api/v1/users/${u.id}`, { locked: false });
      expect(unlock.json.errors).toEqual([{ field: 'locked', message: expect.stringContaining(`DELETE /api/v1/users/${u.id}/lock`) }]);
    });

    it('the user.updated entry names every field whose stored value changed: a PUT\'s cleared ones too, never a value', async () => {
      /** The one user.updated entry of a user (one change each, so no same-millisecond ordering question). */
      const updatedEntry = async (id: string) => {
        const res = await call('GET', `/api/v1/users/${id}/activities`);
        const updates = res.json.data.filter((e: { type: string }) => e.type === 'user.updated');
        expect(updates).toHaveLength(1);
        return updates[0] as { details: Record<string, unknown> };
      };
      // A PUT naming the e-mail only re-enables a disabled admin and demotes it: the entry says so.
      const admin = await create({ account_enabled: false, role: 'admin', name: 'Full Name', nickname: 'nick', given_name: 'Given', email_verified: true });
      const put = await call('PUT', `/api/v1/users/${admin.id}`, { email: admin.email });
      expect(put.status, put.text).toBe(200);
      expect(put.json.data).toMatchObject({ account_enabled: true, role: 'user', name: null, nickname: null, given_name: null, email_verified: false });
      const putEntry = await updatedEntry(admin.id);
      expect(putEntry.details).toEqual({ user_id: admin.id, method: 'PUT', fields: ['given_name', 'name', 'nickname', 'role', 'account_enabled', 'email_verified'] });
      expect(JSON.stringify(putEntry)).not.toMatch(/Full Name|nick"|Given/);

      // PATCH: what changed, not what was sent (a value sent again, a null over nothing, are no change).
      const same = await create({ family_name: 'Lee', role: 'admin' });
      const patch = await call('PATCH', `/api/v1/users/${same.id}`, { family_name: 'Lee', role: 'admin', nickname: null, given_name: 'Ann' });
      expect(patch.status, patch.text).toBe(200);
      expect((await updatedEntry(same.id)).details).toEqual({ user_id: same.id, method: 'PATCH', fields: ['given_name'] });

      // A new address loses its verification: both are named.
      const verified = await create({ email_verified: true });
      expect((await call('PATCH', `/api/v1/users/${verified.id}`, { email: email('new') })).json.data.email_verified).toBe(false);
      expect((await updatedEntry(verified.id)).details).toMatchObject({ method: 'PATCH', fields: ['email', 'email_verified'] });

      // A PUT that changes nothing is still recorded, naming no field.
      const plain = await create();
      expect((await call('PUT', `/api/v1/users/${plain.id}`, { email: plain.email })).status).toBe(200);
      expect((await updatedEntry(plain.id)).details).toEqual({ user_id: plain.id, method: 'PUT', fields: [] });
    });

    it('never accepts a password on PUT or PATCH', async () => {
      const u = await create();
      for (const method of ['PUT', 'PATCH']) {
        const res = await call(method, `/api/v1/users/${u.id}`, { password: 'new-password-123' });
        expectValidation(res, 'password');
        expect(res.json.errors[0].message).toBe('Unknown field');
      }
    });

    it('validates, refuses taken e-mails and platform roles, and answers 404 for unknown users', async () => {
      const a = await create();
      const b = await create();
      const taken = await call('PATCH', `/api/v1/users/${b.id}`, { email: a.email.toUpperCase() });
      expect(taken.status).toBe(409);
      // Changing one's own address only in case is no conflict; a new address is unverified.
      expect((await call('PATCH', `/api/v1/users/${a.id}`, { email: a.email.toUpperCase() })).status).toBe(200);
      const moved = await call('PATCH', `/api/v1/users/${a.id}`, { email: email('moved'), email_verified: true });
      expect(moved.json.data.email_verified).toBe(true);
      const moved2 = await call('PATCH', `/api/v1/users/${a.id}`, { email: email('moved') });
      expect(moved2.json.data.email_verified).toBe(false);

      expectValidation(await call('PATCH', `/api/v1/users/${a.id}`, { role: 'superadmin' }), 'role');
      expectValidation(await call('PUT', `/api/v1/users/${a.id}`, { role: 'platform_admin' }), 'role');
      expectValidation(await call('PATCH', `/api/v1/users/${a.id}`, { name: x(201) }), 'name');
      expect((await call('PATCH', `/api/v1/users/${a.id}`, { name: x(200) })).status).toBe(200);
      expectValidation(await call('PATCH', `/api/v1/users/${a.id}`, { username: x(101) }), 'username');
      expectValidation(await call('PATCH', `/api/v1/users/${a.id}`, { email: 'nope' }), 'email');
      expect((await call('PATCH', '/api/v1/users/unknown-id', { nickname: 'x' })).status).toBe(404);
      expect((await call('PUT', '/api/v1/users/unknown-id', { nickname: 'x' })).status).toBe(404);
    });
  });

  describe('lock, password and MFA', () => {
    it('locks and unlocks, returning the user', async () => {
      const u = await create();
      const locked = await call('POST', `/api/v1/users/${u.id}/lock`);
      expect(locked.status).toBe(200);
      expect(locked.json.data).toMatchObject({ id: u.id, locked: true });
      expect((await call('GET', `/api/v1/users/${u.id}`)).json.data.locked).toBe(true);
      await t.app.ctx.storage.loginAttempts.recordFailure('default', `account:${u.id}`, new Date().toISOString(), '2000-01-01T00:00:00.000Z');
      const unlocked = await call('DELETE', `/api/v1/users/${u.id}/lock`);
      expect(unlocked.status).toBe(200);
      expect(unlocked.json.data).toMatchObject({ id: u.id, locked: false });
      // Earlier failures are forgotten with the unlock: the next failure counts from one.
      expect(await t.app.ctx.storage.loginAttempts.recordFailure('default', `account:${u.id}`, new Date().toISOString(), '2000-01-01T00:00:00.000Z')).toBe(1);
      expect((await call('POST', '/api/v1/users/unknown-id/lock')).status).toBe(404);
      expect((await call('DELETE', '/api/v1/users/unknown-id/lock')).status).toBe(404);
    });

    it('resets the password through the worker pool, within 8-128 characters', async () => {
      const u = await create({ password: 'the-old-password' });
      const res = await call('POST', `/api/v1/users/${u.id}/password-reset`, { new_password: 'the-new-password' });
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ data: { message: expect.any(String) } });
      const stored = await t.app.ctx.storage.users.get('default', u.id);
      expect(await t.app.ctx.passwords.verify(stored!.password_hash!, 'the-new-password')).toBe(true);
      expect(await t.app.ctx.passwords.verify(stored!.password_hash!, 'the-old-password')).toBe(false);

      const reset = (body: unknown) => call('POST', `/api/v1/users/${u.id}/password-reset`, body);
      expectValidation(await reset({ new_password: x(7) }), 'new_password');
      expectValidation(await reset({ new_password: x(129) }), 'new_password');
      expectValidation(await reset({}), 'new_password');
      expect((await reset({ new_password: x(8) })).status).toBe(200);
      expect((await reset({ new_password: x(128) })).status).toBe(200);
      expect((await call('POST', '/api/v1/users/unknown-id/password-reset', { new_password: 'long-enough' })).status).toBe(404);
    });

    it('resets MFA: disabled, methods and stored secrets cleared', async () => {
      const u = await create();
      await t.app.ctx.storage.users.update('default', u.id, {
        mfa_enabled: true, mfa_methods: ['totp'], mfa_secret_sealed: 'sealed-secret', mfa_recovery_sealed: 'sealed-codes',
      });
      const before = await call('GET', `/api/v1/users/${u.id}`);
      expect(before.json.data.mfa).toEqual({ enabled: true, methods: ['totp'] });
      expect(before.text).not.toContain('sealed');

      const res = await call('POST', `/api/v1/users/${u.id}/mfa/reset`);
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ data: { message: expect.any(String) } });
      expect((await call('GET', `/api/v1/users/${u.id}`)).json.data.mfa).toEqual({ enabled: false, methods: [] });
      const stored = await t.app.ctx.storage.users.get('default', u.id);
      expect(stored).toMatchObject({ mfa_secret_sealed: null, mfa_recovery_sealed: null });
      expect((await call('POST', '/api/v1/users/unknown-id/mfa/reset')).status).toBe(404);
    });
  });

  describe('activities and sessions', () => {
    it("lists the user's audit entries newest first, paginated", async () => {
      const u = await create();
      await call('PATCH', `/api/v1/users/${u.id}`, { nickname: 'n' });
      await call('POST', `/api/v1/users/${u.id}/lock`);
      await call('DELETE', `/api/v1/users/${u.id}/lock`);
      await call('POST', `/api/v1/users/${u.id}/password-reset`, { new_password: 'another-password' });
      await call('POST', `/api/v1/users/${u.id}/mfa/reset`);
      await create(); // someone else's activity must not show

      const res = await call('GET', `/api/v1/users/${u.id}/activities?include_count=true`);
      expect(res.status).toBe(200);
      const entries = res.json.data as Array<{ id: string; type: string; timestamp: string; details: Record<string, unknown> }>;
      // Entries of the same millisecond have no defined order, so compare the set and check the sort.
      expect(entries.map((e) => e.type).sort()).toEqual(['password_reset', 'user.created', 'user.locked', 'user.mfa_reset', 'user.unlocked', 'user.updated']);
      expect(entries.map((e) => e.timestamp)).toEqual(entries.map((e) => e.timestamp).sort().reverse());
      expect(res.json.pagination).toEqual({ has_more: false, next_cursor: null, total_count: 6 });
      for (const e of entries) {
        expect(e).toMatchObject({ user_id: u.id, client_id: 'bootstrap-admin', tenant_id: 'default', details: { user_id: u.id } });
      }
      expect(entries.find((e) => e.type === 'user.updated')!.details).toMatchObject({ fields: ['nickname'], method: 'PATCH' });

      const p1 = await call('GET', `/api/v1/users/${u.id}/activities?limit=4`);
      expect(p1.json.data).toHaveLength(4);
      expect(p1.json.pagination.has_more).toBe(true);
      const p2 = await call('GET', `/api/v1/users/${u.id}/activities?limit=4&after=${encodeURIComponent(p1.json.pagination.next_cursor)}`);
      expect([...p1.json.data, ...p2.json.data].map((e: { id: string }) => e.id)).toEqual(entries.map((e) => e.id));
      expect(p2.json.pagination.has_more).toBe(false);
      // A cursor is bound to its user's log.
      const other = await create();
      expectValidation(await call('GET', `/api/v1/users/${other.id}/activities?after=${encodeURIComponent(p1.json.pagination.next_cursor)}`), 'after');
      expect((await call('GET', '/api/v1/users/unknown-id/activities')).status).toBe(404);
    });

    it("lists the user's sessions as a flat array", async () => {
      const u = await create();
      const now = Math.floor(Date.now() / 1000);
      const exp = now + 3600;
      await t.app.ctx.storage.oidc.upsert('default', 'Session', `s-${u.id}`, {
        jti: `s-${u.id}`, kind: 'Session', uid: 'uid-1', accountId: u.id, iat: now - 10, exp, loginTs: now - 10,
        authorizations: { 'app-1': { sid: 'sid-1', grantId: 'g-1' } },
      }, exp);
      await t.app.ctx.storage.oidc.upsert('default', 'Session', 's-someone-else', { jti: 's-someone-else', kind: 'Session', accountId: 'someone-else', iat: now, exp }, exp);

      const res = await call('GET', `/api/v1/users/${u.id}/sessions`);
      expect(res.status).toBe(200);
      expect(Object.keys(res.json)).toEqual(['data']);
      expect(res.json.data).toEqual([
        expect.objectContaining({ jti: `s-${u.id}`, account_id: u.id, client_ids: ['app-1'], active: true, expires_at: new Date(exp * 1000).toISOString() }),
      ]);
      expect((await call('GET', `/api/v1/users/${(await create()).id}/sessions`)).json).toEqual({ data: [] });
      expect((await call('GET', '/api/v1/users/unknown-id/sessions')).status).toBe(404);
    });
  });

  describe('delete', () => {
    it('erases personal data and credentials, revokes sessions, blocks sign-in lookups, and the user is gone from the API', async () => {
      const u = await create({ email: 'Erase.Me@example.com', username: 'erase-me', given_name: 'Era', family_name: 'Se', name: 'Era Se', nickname: 'er', email_verified: true });
      await t.app.ctx.storage.users.update('default', u.id, { mfa_enabled: true, mfa_methods: ['totp'], mfa_secret_sealed: 's', mfa_recovery_sealed: 'r' });
      const now = Math.floor(Date.now() / 1000);
      await t.app.ctx.storage.oidc.upsert('default', 'Session', 'sess-erase', {
        jti: 'sess-erase', kind: 'Session', accountId: u.id, iat: now, exp: now + 600, authorizations: { app: { sid: 's', grantId: 'grant-erase' } },
      }, now + 600);
      await t.app.ctx.storage.oidc.upsert('default', 'Grant', 'grant-erase', { jti: 'grant-erase', kind: 'Grant', accountId: u.id, clientId: 'app', exp: now + 600 }, now + 600);
      await t.app.ctx.storage.oidc.upsert('default', 'RefreshToken', 'rt-erase', { jti: 'rt-erase', kind: 'RefreshToken', grantId: 'grant-erase', accountId: u.id }, now + 600);
      // An offline grant that outlived its session goes too.
      await t.app.ctx.storage.oidc.upsert('default', 'Grant', 'grant-offline', { jti: 'grant-offline', kind: 'Grant', accountId: u.id, clientId: 'app2' }, now + 600);
      await t.app.ctx.storage.oidc.upsert('default', 'RefreshToken', 'rt-offline', { jti: 'rt-offline', kind: 'RefreshToken', grantId: 'grant-offline', accountId: u.id }, now + 600);

      const del = await call('DELETE', `/api/v1/users/${u.id}`);
      expect(del.status).toBe(204);
      expect(del.text).toBe('');

      // Issue 18 item 3: gone from the API (the anonymised row stays in storage for the audit trail).
      const got = await call('GET', `/api/v1/users/${u.id}`);
      expect(got.status).toBe(404);
      expect(got.text).not.toMatch(/erase|Era/i);
      const stored = await t.app.ctx.storage.users.get('default', u.id);
      expect(stored).toMatchObject({ password_hash: null, mfa_secret_sealed: null, mfa_recovery_sealed: null, deleted_at: expect.any(String) });
      expect(await t.app.ctx.storage.users.findByEmail('default', 'erase.me@example.com')).toBeUndefined();
      for (const [model, id] of [['Session', 'sess-erase'], ['Grant', 'grant-erase'], ['RefreshToken', 'rt-erase'], ['Grant', 'grant-offline'], ['RefreshToken', 'rt-offline']] as const) {
        expect(await t.app.ctx.storage.oidc.find('default', model, id), `${model} ${id}`).toBeUndefined();
      }

      // The user's own sub-resources are gone too; the deletion stays in the tenant's audit log.
      expect((await call('GET', `/api/v1/users/${u.id}/activities`)).status).toBe(404);
      expect((await call('GET', `/api/v1/users/${u.id}/sessions`)).status).toBe(404);
      const auditor = await t.token('svc:audit:read svc:stats:read');
      const audit = await call('GET', '/api/v1/audit?type=user.deleted&limit=100', undefined, auditor);
      const logged = (audit.json.data as Array<{ type: string; details: { user_id?: string } }>).find((e) => e.details.user_id === u.id);
      expect(logged, audit.text).toMatchObject({ type: 'user.deleted', details: { user_id: u.id, sessions_revoked: 1 } });
      expect(audit.text).not.toContain('Erase.Me');

      // Not listed, not counted in stats; the address is free again; nothing can revive it.
      const listed = await call('GET', '/api/v1/users?limit=100&include_count=true');
      expect((listed.json.data as Array<{ id: string }>).map((x) => x.id)).not.toContain(u.id);
      const countBefore = listed.json.pagination.total_count as number;
      const statsBefore = (await call('GET', '/api/v1/stats', undefined, auditor)).json.data.users.total as number;
      expect(statsBefore).toBe(countBefore);
      await create({ email: 'erase.me@example.com' });
      expect((await call('GET', '/api/v1/users?limit=1&include_count=true')).json.pagination.total_count).toBe(countBefore + 1);
      expect((await call('GET', '/api/v1/stats', undefined, auditor)).json.data.users.total).toBe(statsBefore + 1);
      expect((await call('PATCH', `/api/v1/users/${u.id}`, { email: 'back@example.com' })).status).toBe(404);
      expect((await call('POST', `/api/v1/users/${u.id}/password-reset`, { new_password: 'revive-me-please' })).status).toBe(404);
      expect((await call('POST', `/api/v1/users/${u.id}/lock`)).status).toBe(404);
      expect((await call('DELETE', `/api/v1/users/${u.id}`)).status).toBe(404);
      expect((await call('DELETE', '/api/v1/users/unknown-id')).status).toBe(404);
    });

    it('concurrent deletes of one user: one 204 and one user.deleted entry, the rest 404', async () => {
      const u = await create();
      const auditor = await t.token('svc:audit:read');
      const statuses = (await Promise.all([1, 2, 3].map(() => call('DELETE', `/api/v1/users/${u.id}`)))).map((r) => r.status).sort();
      expect(statuses).toEqual([204, 404, 404]);
      const entries = await call('GET', `/api/v1/audit?type=user.deleted&limit=100`, undefined, auditor);
      expect(entries.json.data.filter((e: { details: { user_id?: string } }) => e.details.user_id === u.id)).toHaveLength(1);
    });
  });

  it('never returns a password, hash or secret in any response', () => {
    expect(userTexts.length).toBeGreaterThan(30);
    for (const text of userTexts) {
      expect(text).not.toMatch(/password/i);
      expect(text).not.toMatch(/hash/i);
      expect(text).not.toMatch(/secret|recovery/i);
    }
    for (const text of allTexts) {
      expect(text).not.toContain('$argon2');
      for (const p of passwordsUsed) expect(text).not.toContain(p);
    }
  });
});
