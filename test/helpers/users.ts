import { api, type TestApp } from './app.js';

export interface TestUser {
  id: string;
  email: string;
  password: string;
}

let n = 0;

/** Creates a user through the Management API (POST /api/v1/users). */
export async function createUser(t: TestApp, fields: Record<string, unknown> = {}): Promise<TestUser> {
  n++;
  const email = (fields.email as string | undefined) ?? `user${n}-${Date.now()}@example.com`;
  const password = (fields.password as string | undefined) ?? `Correct-Horse-${n}-Battery`;
  const token = await t.token('svc:users:write');
  const res = await api(t, 'POST', '/api/v1/users', { token, body: { given_name: 'Ada', family_name: 'Lovelace', name: 'Ada Lovelace', username: `ada${n}`, ...fields, email, password } });
  if (res.status !== 201) throw new Error(`user creation failed: ${res.status} ${res.text}`);
  return { id: res.json.data.id, email, password };
}

/** Creates a client through the Management API and returns the created object (with client_secret). */
export async function createClient(t: TestApp, body: Record<string, unknown>): Promise<Record<string, any>> {
  const token = await t.token('svc:clients:write');
  const res = await api(t, 'POST', '/api/v1/clients', { token, body });
  if (res.status !== 201) throw new Error(`client creation failed: ${res.status} ${res.text}`);
  return res.json.data;
}
