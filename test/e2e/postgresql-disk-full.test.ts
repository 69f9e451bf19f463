/**
 * A PostgreSQL server out of disk (SQLSTATE 53100), memory (53200) or I/O (58030) refuses the
 * write, and the Management API answers 503 with Retry-After, not a 500 (storage/postgresql/
 * errors.ts); once the server can write again, the same request succeeds without a restart. A
 * trigger on the clients table raises the server's own error with that SQLSTATE: the product sees
 * exactly what a full tablespace gives (an ErrorResponse with the code), without filling a disk.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { captureLog, type CapturedLog } from '../helpers/log.js';

let t: TestApp;
let admin: string;
let captured: CapturedLog;
beforeAll(async () => {
  captured = captureLog('warn');
  t = await startTestApp({}, { log: captured.log });
  admin = await t.token('svc:clients:read svc:clients:write');
});
afterAll(async () => t?.close());

async function refuseClientWrites(errcode: string | undefined): Promise<void> {
  await t.sql('DROP TRIGGER IF EXISTS test_refuse_writes ON clients');
  if (!errcode) return;
  await t.sql(`CREATE OR REPLACE FUNCTION test_refuse_writes() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'could not extend file' USING ERRCODE = '${errcode}'; END $$`);
  await t.sql('CREATE TRIGGER test_refuse_writes BEFORE INSERT ON clients FOR EACH ROW EXECUTE FUNCTION test_refuse_writes()');
}

/** Creates a client; with `refusing`, while the server refuses client writes with that SQLSTATE. */
async function create(name: string, refusing?: string) {
  if (refusing) await refuseClientWrites(refusing);
  try {
    return await api(t, 'POST', '/api/v1/clients', { token: admin, body: { client_name: name, grant_types: ['client_credentials'] } });
  } finally {
    if (refusing) await refuseClientWrites(undefined);
  }
}

describe('PostgreSQL out of resources', () => {
  for (const [errcode, what] of [['53100', 'disk full'], ['53200', 'out of memory'], ['58030', 'I/O error']] as const) {
    it(`${what} (${errcode}): 503 with Retry-After, nothing stored; the same request works once the server can write`, async () => {
      const before = (await api(t, 'GET', '/api/v1/clients?limit=100', { token: admin })).json.data.length as number;
      await refuseClientWrites(errcode);
      try {
        const res = await create(`refused ${errcode}`);
        expect(res.status).toBe(503);
        expect(res.headers.get('retry-after')).toBe('1');
        expect(res.json).toMatchObject({ type: 'urn:svc:error:unavailable', status: 503 });
        expect(res.text).not.toContain('could not extend file');
      } finally {
        await refuseClientWrites(undefined);
      }
      expect((await api(t, 'GET', '/api/v1/clients?limit=100', { token: admin })).json.data.length).toBe(before);
      expect((await create(`after ${errcode}`)).status).toBe(201);
      // The operator hears of it once (a minute), with the code.
      expect((await create(`refused again ${errcode}`, errcode)).status).toBe(503);
      const reports = captured.lines.filter((l) => /^PostgreSQL is out of resources/.test(l.msg) && l.code === errcode);
      expect(reports).toHaveLength(1);
      expect(reports[0]).toMatchObject({ level: 50, reason: 'could not extend file' });
    });
  }

  it('a limit the statement itself exceeds (53400 configuration_limit_exceeded) is no outage: 500 with a request id', async () => {
    await refuseClientWrites('53400');
    try {
      const res = await create('over a limit');
      expect(res.status).toBe(500);
      expect(res.json).toMatchObject({ status: 500, request_id: expect.any(String) });
      expect(res.text).not.toContain('could not extend file');
    } finally {
      await refuseClientWrites(undefined);
    }
    expect(captured.lines.filter((l) => /^PostgreSQL is out of resources/.test(l.msg) && l.code === '53400')).toEqual([]);
  });
});
