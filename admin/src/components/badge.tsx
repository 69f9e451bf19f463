/** A coloured status word; the colour only repeats what the word says. */
import type { ComponentChildren } from 'preact';

export function Badge({ tone, children }: { tone: 'ok' | 'bad' | 'warn'; children: ComponentChildren }) {
  return <span class={`badge ${tone}`}>{children}</span>;
}
