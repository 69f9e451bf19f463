/**
 * CSV of audit entries (RFC 4180) for spreadsheet users, with formula injection neutralised: a
 * cell that a spreadsheet would read as a formula (starting with `=`, `+`, `-`, `@`, or a tab or
 * carriage return that some programs strip first) gets a leading apostrophe, which spreadsheets
 * show as text and do not evaluate. Usernames, user agents and details are attacker-controlled.
 */
import type { AuditEntry } from '../storage/types.js';

export const AUDIT_CSV_COLUMNS = ['id', 'timestamp', 'type', 'status', 'username', 'user_id', 'client_id', 'ip_address', 'user_agent', 'tenant_id', 'details'] as const;

const FORMULA_START = /^[=+\-@\t\r]/;

/** One cell: neutralised, then quoted when it holds a quote, comma or line break. */
export function csvCell(value: string | null | undefined): string {
  if (value === null || value === undefined || value === '') return '';
  const safe = FORMULA_START.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export function auditCsvHeader(): string {
  return `${AUDIT_CSV_COLUMNS.join(',')}\r\n`;
}

export function auditCsvRow(e: AuditEntry): string {
  const cells: Array<string | null> = [e.id, e.timestamp, e.type, e.status, e.username, e.user_id, e.client_id, e.ip_address, e.user_agent, e.tenant_id, JSON.stringify(e.details ?? {})];
  return `${cells.map(csvCell).join(',')}\r\n`;
}
