/**
 * GET /api/v1/audit/export (issue 16): the list's filter as CSV, streamed, the same entries in the
 * same order as the API across page boundaries, formula cells neutralised, RFC 4180 quoting, the
 * list's scope and validation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csvCell } from '../../src/audit/csv.js';
import type { AuditEntry } from '../../src/storage/types.js';
import { api, startTestApp, type TestApp } from '../helpers/app.js';

/** A minimal RFC 4180 reader (quoted cells with doubled quotes and line breaks). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else cell += c;
  }
  if (cell || row.length) rows.push([...row, cell]);
  return rows;
}

describe('audit CSV export', () => {
  let t: TestApp;
  let token: string;
  const at = (s: number) => new Date(Date.UTC(2025, 4, 1, 0, 0, 0, s)).toISOString();

  beforeAll(async () => {
    t = await startTestApp();
    token = await t.token('svc:audit:read');
    const base = (i: number): AuditEntry => ({
      id: `x${String(i).padStart(4, '0')}`, type: i % 2 ? 'login' : 'logout', status: 'success', username: `user${i}`, user_id: null, client_id: 'web',
      ip_address: '192.0.2.1', user_agent: 'vitest', tenant_id: 'default', details: { n: i }, timestamp: at(i),
    });
    // More than one storage page (500) so the stream crosses page boundaries.
    for (let i = 0; i < 1203; i++) await t.app.ctx.storage.audit.insert('default', base(i));
    await t.app.ctx.storage.audit.insert('default', {
      ...base(5000), id: 'evil', type: 'login', username: '=HYPERLINK("http://evil.example","x")', user_agent: '+cmd|" /C calc"!A0',
      client_id: '-2+3', ip_address: '@SUM(1)', details: { note: 'a,b\r\nc "q"' }, timestamp: '2025-05-02T00:00:00.000Z',
    });
  });
  afterAll(async () => t?.close());

  it('neutralises formula cells and quotes RFC 4180 specials', () => {
    expect(csvCell('=1+1')).toBe("'=1+1");
    expect(csvCell('+1')).toBe("'+1");
    expect(csvCell('-1')).toBe("'-1");
    expect(csvCell('@x')).toBe("'@x");
    expect(csvCell('\tx')).toBe("'\tx");
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell(null)).toBe('');
    expect(csvCell('plain')).toBe('plain');
  });

  it('streams every entry of the filter, newest first, as the API lists them', async () => {
    const res = await fetch(`${t.url}/api/v1/audit/export?type=login&to=2025-06-01`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="audit-default-[0-9-]+\.csv"$/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const rows = parseCsv(await res.text());
    expect(rows[0]).toEqual(['id', 'timestamp', 'type', 'status', 'username', 'user_id', 'client_id', 'ip_address', 'user_agent', 'tenant_id', 'details']);

    const listed: string[] = [];
    let after: string | null = null;
    do {
      const page: { json: { data: Array<{ id: string }>; pagination: { next_cursor: string | null } } } = await api(t, 'GET', `/api/v1/audit?type=login&to=2025-06-01&limit=100${after ? `&after=${after}` : ''}`, { token });
      listed.push(...page.json.data.map((e) => e.id));
      after = page.json.pagination.next_cursor;
    } while (after);
    expect(listed.length).toBe(602); // 601 odd-numbered logins and the hostile one
    expect(rows.slice(1).map((r) => r[0])).toEqual(listed);

    const evil = rows.find((r) => r[0] === 'evil')!;
    expect(evil[4]).toBe('\'=HYPERLINK("http://evil.example","x")');
    expect(evil[6]).toBe("'-2+3");
    expect(evil[7]).toBe("'@SUM(1)");
    expect(evil[8]).toBe('\'+cmd|" /C calc"!A0');
    expect(JSON.parse(evil[10]!)).toEqual({ note: 'a,b\r\nc "q"' });
    for (const r of rows.slice(1)) for (const cell of r) expect(cell).not.toMatch(/^[=+\-@\t\r]/);
  });

  it('needs svc:audit:read and refuses a bad filter with 422, like the list', async () => {
    const other = await t.token('svc:stats:read');
    const denied = await api(t, 'GET', '/api/v1/audit/export', { token: other });
    expect(denied.status).toBe(403);
    expect(denied.headers.get('www-authenticate')).toContain('scope="svc:audit:read"');
    expect((await api(t, 'GET', '/api/v1/audit/export')).status).toBe(401);
    const bad = await api(t, 'GET', '/api/v1/audit/export?status=nope&from=yesterday', { token });
    expect(bad.status).toBe(422);
    expect(bad.json.errors.map((e: { field: string }) => e.field).sort()).toEqual(['from', 'status']);
    const reversed = await api(t, 'GET', '/api/v1/audit/export?from=2025-06-02&to=2025-06-01', { token });
    expect(reversed.status).toBe(422);
  });

  it('is described in the OpenAPI document as text/csv', async () => {
    const doc = (await (await fetch(`${t.url}/api/v1/openapi.json`)).json()) as { paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, unknown> }>; 'x-required-scope': string }>> };
    const op = doc.paths['/api/v1/audit/export']!.get!;
    expect(op['x-required-scope']).toBe('svc:audit:read');
    expect(Object.keys(op.responses['200']!.content!)).toEqual(['text/csv']);
  });
});
