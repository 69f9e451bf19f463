/**
 * PreparedStatements' bookkeeping (which texts get a name, and which connections hold it). The
 * server side (PREPARE, EXECUTE, row-level security, fallbacks) is tested against PostgreSQL in
 * postgresql-statement.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { executeStatement, MAX_NAMED, PREPARE_AFTER_USES, PreparedStatements } from '../../src/storage/postgresql/prepared.js';

const SQL = 'SELECT id FROM users WHERE tenant_id = $1 AND id = $2';

/** Calls nameFor until it gives a name (or gives up after a few more than needed). */
function nameAfterUses(p: PreparedStatements, sql: string, params: number): { name: string | undefined; uses: number } {
  for (let uses = 1; uses <= PREPARE_AFTER_USES + 2; uses++) {
    const name = p.nameFor(sql, params);
    if (name !== undefined) return { name, uses };
  }
  return { name: undefined, uses: -1 };
}

describe('PreparedStatements', () => {
  it(`names a text at its ${PREPARE_AFTER_USES}th use and keeps the name`, () => {
    const p = new PreparedStatements();
    expect(nameAfterUses(p, SQL, 2)).toEqual({ name: 'svc_1', uses: PREPARE_AFTER_USES });
    expect(p.nameFor(SQL, 2)).toBe('svc_1');
    expect(nameAfterUses(p, 'SELECT 1 WHERE $1', 1).name).toBe('svc_2');
  });

  it('gives no name when the values do not match the placeholders, before or after naming', () => {
    const p = new PreparedStatements();
    expect(nameAfterUses(p, SQL, 3).name).toBeUndefined();
    expect(nameAfterUses(p, SQL, 2).name).toBe('svc_1');
    expect(p.nameFor(SQL, 1)).toBeUndefined();
    expect(p.nameFor(SQL, 2)).toBe('svc_1');
  });

  it('never names a refused text again, nor reuses its name', () => {
    const p = new PreparedStatements();
    expect(nameAfterUses(p, SQL, 2).name).toBe('svc_1');
    p.refuse(SQL);
    expect(nameAfterUses(p, SQL, 2).name).toBeUndefined();
    expect(nameAfterUses(p, 'SELECT $1::text', 1).name).toBe('svc_2');
  });

  it(`names at most ${MAX_NAMED} texts`, () => {
    const p = new PreparedStatements();
    for (let i = 0; i < MAX_NAMED; i++) expect(nameAfterUses(p, `SELECT ${i} WHERE $1`, 1).name).toBe(`svc_${i + 1}`);
    expect(nameAfterUses(p, 'SELECT -1 WHERE $1', 1).name).toBeUndefined();
    expect(p.nameFor('SELECT 0 WHERE $1', 1)).toBe('svc_1');
  });

  it('remembers per connection what is prepared on it, and forgets a connection as a whole', () => {
    const p = new PreparedStatements();
    const [a, b] = [{}, {}];
    p.prepared(a, 'svc_1');
    expect(p.isPrepared(a, 'svc_1')).toBe(true);
    expect(p.isPrepared(b, 'svc_1')).toBe(false);
    expect(p.isPrepared(a, 'svc_2')).toBe(false);
    p.forget(a);
    expect(p.isPrepared(a, 'svc_1')).toBe(false);
  });

  it('writes EXECUTE with and without arguments', () => {
    expect(executeStatement('svc_3', ["'a'", 'NULL'])).toBe("EXECUTE svc_3('a', NULL)");
    expect(executeStatement('svc_4', [])).toBe('EXECUTE svc_4');
  });
});
