/** The sections' table: a caption for screen readers, column headers (scope col); the rows are the section's own. */
import type { ComponentChildren } from 'preact';

export function DataTable({ caption, head, children }: { caption: string; head: ComponentChildren[]; children: ComponentChildren }) {
  return (
    <table>
      <caption class="sr-only">{caption}</caption>
      <thead>
        <tr>
          {head.map((h, i) => (
            <th scope="col" key={i}>
              {h}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>{children}</tbody>
    </table>
  );
}
