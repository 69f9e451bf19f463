/**
 * Storage interfaces: the types every repository shares.
 * Imported through the index, ../types.ts, which also states the rules every repository follows.
 */
export type TenantId = string;

export interface PageRequest {
  limit: number;
  /** Decoded cursor: the last row of the previous page. */
  after?: { created_at: string; id: string };
  include_count: boolean;
}

export interface Page<T> {
  items: T[];
  has_more: boolean;
  total_count?: number;
}
