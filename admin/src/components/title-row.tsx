/** A page's heading with what stands beside it (a "New ..." link, a status badge, a button). */
import type { ComponentChildren } from 'preact';

export function TitleRow({ title, children }: { title: ComponentChildren; children?: ComponentChildren }) {
  return (
    <div class="title-row">
      <h1>{title}</h1>
      {children}
    </div>
  );
}
