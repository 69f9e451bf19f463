/**
 * One Management API action behind a button (lock, revoke, rotate, delete...): with a `question` it
 * asks first in the confirm dialog; the outcome goes to the status line, and `then` runs only on
 * success (reload the list, leave a deleted item's page).
 */
import { useAction } from '../services';
import { ConfirmButton } from './confirm-button';

export function ActionButton(p: { label: string; question?: string; danger?: boolean; run(): Promise<unknown>; done: string; then?(): void }) {
  const act = useAction();
  const go = async () => {
    if (await act(p.run, p.done)) p.then?.();
  };
  if (p.question) return <ConfirmButton danger={p.danger} label={p.label} question={p.question} onConfirm={go} />;
  return (
    <button type="button" onClick={go}>
      {p.label}
    </button>
  );
}
