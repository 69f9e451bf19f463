/** Small helpers for building the repositories' statements. */

/** Collects positional parameters: `p.add(value)` returns its placeholder ($1, $2, ...). */
export class Params {
  readonly values: unknown[] = [];

  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }

  /** A copy holding the parameters added so far (the count query reuses the filter's). */
  snapshot(): unknown[] {
    return [...this.values];
  }
}

/**
 * Escapes LIKE wildcards so user search text matches literally (same as the SQLite backend).
 * Statements use `ILIKE ... ESCAPE '\'` on COLLATE "C" columns: ASCII-only case folding, as
 * SQLite's LIKE.
 */
export function likePattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** jsonb parameters go as JSON text: pg would turn a JS array into a PostgreSQL array literal. */
export const json = (value: unknown): string => JSON.stringify(value);

// Date.UTC would read years below 100 as 19xx.
const FIRST_YEAR = Date.parse('0001-01-01T00:00:00Z');
const LAST_YEAR_END = Date.parse('+010000-01-01T00:00:00Z');

/**
 * A caller-supplied instant as timestamptz input. ISO strings JavaScript accepts but PostgreSQL
 * does not (year 0000, six-digit years) become -infinity / infinity, which order the same way, so
 * a range filter at the edge of time is never a database error.
 */
export function instant(iso: string): string {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso; // let the database name the problem
  if (ms < FIRST_YEAR) return '-infinity';
  if (ms >= LAST_YEAR_END) return 'infinity';
  return iso;
}

/** A statement on one line and bounded, for log lines. */
export function statementSummary(sql: string): string {
  const line = sql.replace(/\s+/g, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 300)}...` : line;
}
