import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ProblemError } from '../../src/http/problem.js';
import { Cursors } from '../../src/management/pagination.js';

const key = randomBytes(32);
const cursors = new Cursors(key);

function expectAfterProblem(fn: () => unknown): void {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(ProblemError);
  const p = caught as ProblemError;
  expect(p.status).toBe(422);
  expect(p.type).toBe('urn:svc:error:validation');
  expect(p.title).toBe('Validation Error');
  expect(p.extra.errors).toEqual([{ field: 'after', message: expect.any(String) }]);
}

describe('Cursors', () => {
  it('round-trips the sort key of the last row', () => {
    const c = cursors.encode('clients', '2026-01-02T03:04:05.678Z', 'client-1');
    expect(typeof c).toBe('string');
    expect(c).not.toContain('client-1'); // opaque, not the id in clear
    expect(cursors.decode('clients', c)).toEqual({ created_at: '2026-01-02T03:04:05.678Z', id: 'client-1' });
  });

  it('round-trips ids with any characters', () => {
    const id = 'a.b|c"d\'e\u00e9/%';
    expect(cursors.decode('audit', cursors.encode('audit', 't', id))).toEqual({ created_at: 't', id });
  });

  it('is URL-safe', () => {
    const c = cursors.encode('clients', new Date().toISOString(), randomBytes(20).toString('base64'));
    expect(encodeURIComponent(c)).toBe(c);
  });

  it('refuses a tampered body, signature or shape with 422 on after', () => {
    const c = cursors.encode('clients', '2026-01-01T00:00:00.000Z', 'x');
    const [body, sig] = c.split('.') as [string, string];
    const otherBody = Buffer.from(JSON.stringify(['2026-01-01T00:00:00.000Z', 'y'])).toString('base64url');
    expectAfterProblem(() => cursors.decode('clients', `${otherBody}.${sig}`));
    expectAfterProblem(() => cursors.decode('clients', `${body}.${sig.slice(0, -1)}${sig.endsWith('A') ? 'B' : 'A'}`));
    expectAfterProblem(() => cursors.decode('clients', `${body}.`));
    expectAfterProblem(() => cursors.decode('clients', body));
    expectAfterProblem(() => cursors.decode('clients', ''));
    expectAfterProblem(() => cursors.decode('clients', "' OR 1=1 --"));
    expectAfterProblem(() => cursors.decode('clients', `${c}x`));
  });

  it('binds a cursor to its list and its key', () => {
    const c = cursors.encode('clients', 't', 'x');
    expectAfterProblem(() => cursors.decode('audit', c));
    expectAfterProblem(() => new Cursors(randomBytes(32)).decode('clients', c));
  });

  it('refuses a correctly signed body of the wrong shape with 422, not a crash', () => {
    const sign = (body: string) => createHmac('sha256', key).update(`clients|${body}`).digest('base64url').slice(0, 22);
    for (const raw of ['not json', JSON.stringify({ a: 1 }), JSON.stringify([1, 2]), JSON.stringify(null)]) {
      const body = Buffer.from(raw).toString('base64url');
      expectAfterProblem(() => cursors.decode('clients', `${body}.${sign(body)}`));
    }
  });

  it('builds page requests with the spec defaults', () => {
    expect(cursors.request('clients', {})).toEqual({ limit: 25, after: undefined, include_count: false });
    const after = cursors.encode('clients', 't', 'id');
    expect(cursors.request('clients', { limit: 3, after, include_count: true })).toEqual({ limit: 3, after: { created_at: 't', id: 'id' }, include_count: true });
    expectAfterProblem(() => cursors.request('clients', { after: 'garbage' }));
  });

  it('builds the list envelope: next_cursor from the last item, total_count only when counted', () => {
    const items = [
      { id: 'a', at: '1' },
      { id: 'b', at: '2' },
    ];
    const key = (i: { id: string; at: string }): [string, string] => [i.at, i.id];
    const more = cursors.envelope('clients', { items, has_more: true }, key, (i) => i.id);
    expect(more.data).toEqual(['a', 'b']);
    expect(more.pagination.has_more).toBe(true);
    expect(cursors.decode('clients', more.pagination.next_cursor!)).toEqual({ created_at: '2', id: 'b' });
    expect('total_count' in more.pagination).toBe(false);

    const last = cursors.envelope('clients', { items, has_more: false, total_count: 2 }, key, (i) => i.id);
    expect(last.pagination).toEqual({ has_more: false, next_cursor: null, total_count: 2 });
  });
});
