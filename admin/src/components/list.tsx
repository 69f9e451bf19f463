/**
 * A loaded list: the loading status, the error banner, the section's own "no ... yet" text when it
 * is empty, else the section's table; PagedList adds the cursor pager (total, First page / Next
 * page links that keep every filter in the URL).
 */
import type { ComponentChildren } from 'preact';
import type { Page } from '../api';
import { t } from '../i18n';
import { href } from '../router';
import type { Async } from '../services';
import { Empty, Loader } from './loader';

export function ListLoader<P extends { data: unknown[] }>({ state, empty, children }: { state: Async<P>; empty: string; children: (rows: P['data'], page: P) => ComponentChildren }) {
  return <Loader state={state}>{(page) => (page.data.length === 0 ? <Empty>{empty}</Empty> : children(page.data, page))}</Loader>;
}

export function PagedList<T>({ state, empty, query, path, children }: { state: Async<Page<T>>; empty: string; query: URLSearchParams; path: string; children: (rows: T[]) => ComponentChildren }) {
  return (
    <ListLoader state={state} empty={empty}>
      {(rows, page) => (
        <>
          {children(rows)}
          <Pager page={page} query={query} path={path} />
        </>
      )}
    </ListLoader>
  );
}

/** Next page / first page links that keep every filter in the URL. */
export function Pager({ page, query, path }: { page: Page<unknown>; query: URLSearchParams; path: string }) {
  const base = Object.fromEntries([...query.entries()].filter(([k]) => k !== 'after'));
  return (
    <nav class="pager" aria-label={t('pagination')}>
      {page.pagination.total_count !== undefined ? <span>{t('total', { n: page.pagination.total_count })}</span> : null}
      {query.get('after') ? <a href={href(path, base)}>{t('first.page')}</a> : null}
      {page.pagination.has_more && page.pagination.next_cursor ? <a href={href(path, { ...base, after: page.pagination.next_cursor })}>{t('next.page')}</a> : null}
    </nav>
  );
}
