/**
 * Read-only facts of one item: PropList as the detail pages' term/value list (`mono` for ids and
 * other machine values), StatCards as the figures of a dashboard or a client's statistics.
 */
import type { ComponentChildren } from 'preact';
import { Fragment } from 'preact';

export type Prop = [term: ComponentChildren, value: ComponentChildren, mono?: 'mono'];

export function PropList({ items }: { items: Prop[] }) {
  return (
    <dl class="props">
      {items.map(([term, value, mono], i) => (
        <Fragment key={i}>
          <dt>{term}</dt>
          <dd class={mono}>{value}</dd>
        </Fragment>
      ))}
    </dl>
  );
}

export function StatCards({ items }: { items: Array<[term: string, value: ComponentChildren]> }) {
  return (
    <dl class="cards">
      {items.map(([term, value], i) => (
        <div key={i}>
          <dt>{term}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}
