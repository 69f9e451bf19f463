/** Small helpers for building the repositories' statements. */
import pg from 'pg';
import { everyWordCondition } from '../search.js';

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
 * The `q` condition (storage/search.ts) with PostgreSQL's positional parameters. Statements use
 * `ILIKE ... ESCAPE '\'` on COLLATE "C" columns: ASCII-only case folding, as SQLite's LIKE.
 */
export function searchCondition(q: string, columns: readonly string[], p: Params): string {
  return everyWordCondition(q, columns, 'ILIKE', (pattern) => p.add(pattern));
}

/*
 * PostgreSQL text and jsonb cannot hold U+0000, and a parameter containing one is a database error.
 * Such input comes from outside (a client_id of %00 at the token endpoint, a `state` stored in an
 * interaction) and must not become a 500, so this backend stores U+0000 as U+FFFD: a lookup with it
 * finds nothing (nothing stored can contain U+0000) and a write keeps the rest of the value.
 */
const NUL = '\u0000';
const REPLACEMENT = '\uFFFD';

/** A parameter as PostgreSQL can take it (strings with U+0000 mapped; everything else as is). */
export function pgParam(value: unknown): unknown {
  return typeof value === 'string' && value.includes(NUL) ? value.replaceAll(NUL, REPLACEMENT) : value;
}

function scrubDeep(value: unknown): unknown {
  if (typeof value === 'string') return value.replaceAll(NUL, REPLACEMENT);
  if (Array.isArray(value)) return value.map(scrubDeep);
  if (value && typeof value === 'object') {
    const toJSON = (value as { toJSON?: () => unknown }).toJSON;
    if (typeof toJSON === 'function') return scrubDeep(toJSON.call(value));
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k.replaceAll(NUL, REPLACEMENT), scrubDeep(v)]));
  }
  return value;
}

/**
 * A jsonb parameter: JSON text (pg would turn a JS array into a PostgreSQL array literal), with
 * U+0000 in keys and strings mapped. The fast path costs one search of the text; "\u0000" in it
 * can also be an escaped backslash followed by "u0000", which merely takes the slow path.
 */
export function json(value: unknown): string {
  const text = JSON.stringify(value);
  return text.includes('\\u0000') ? JSON.stringify(scrubDeep(value)) : text;
}

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

const PLACEHOLDER = /\$(\d+)/g;

/**
 * Each parameter as a literal for the simple query protocol (TenantDb.statement: written into the
 * statement, inlineLiterals, or as the arguments of an EXECUTE), or undefined when one cannot be (a
 * Buffer). Each value becomes what node-postgres would have sent as a parameter: its text form
 * (pg.prepareValue: numbers, booleans, Dates, arrays, JSON) as an escaped literal of unknown type,
 * NULL for null, so the server infers its type from the context as it does for a parameter.
 * pg.escapeLiteral doubles quotes and, when there are backslashes, doubles them too and uses E''
 * syntax: safe whatever standard_conforming_strings is.
 */
export function paramLiterals(params: readonly unknown[]): string[] | undefined {
  const literals: string[] = [];
  for (const value of params) {
    const prepared = pg.utils.prepareValue(pgParam(value));
    if (prepared === null || prepared === undefined) literals.push('NULL');
    else if (typeof prepared === 'string') literals.push(pg.escapeLiteral(prepared));
    else return undefined; // a Buffer: binary, keep the extended protocol
  }
  return literals;
}

/**
 * The statement with each $n replaced by its literal; undefined for a placeholder without one.
 * Statements come from this code base and hold no `$n` inside string literals.
 */
export function inlineLiterals(sql: string, literals: readonly string[]): string | undefined {
  let unknownPlaceholder = false;
  const text = sql.replace(PLACEHOLDER, (_m, n: string) => {
    const literal = literals[Number(n) - 1];
    if (literal === undefined) unknownPlaceholder = true;
    return literal ?? '';
  });
  return unknownPlaceholder ? undefined : text;
}

/** The highest $n of a statement (the parameters PostgreSQL counts when preparing it), or 0. */
export function placeholderCount(sql: string): number {
  let max = 0;
  for (const m of sql.matchAll(PLACEHOLDER)) max = Math.max(max, Number(m[1]));
  return max;
}
