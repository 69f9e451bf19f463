/** A button that asks first, in a modal <dialog> (focus moves into it; Escape cancels). */
import { useRef, useState } from 'preact/hooks';
import { t } from '../i18n';
import { useId } from './use-id';

export interface ConfirmButtonProps {
  label: string;
  question: string;
  confirmLabel?: string;
  danger?: boolean;
  onConfirm(): Promise<void> | void;
  disabled?: boolean;
}

export function ConfirmButton(p: ConfirmButtonProps) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [busy, setBusy] = useState(false);
  const titleId = useId();
  return (
    <>
      <button type="button" class={p.danger ? 'danger' : ''} disabled={p.disabled || busy} onClick={() => dialog.current?.showModal()}>
        {p.label}
      </button>
      <dialog ref={dialog} aria-labelledby={titleId}>
        <h2 id={titleId}>{p.question}</h2>
        <div class="actions">
          <button type="button" onClick={() => dialog.current?.close()}>
            {t('cancel')}
          </button>
          <button
            type="button"
            class={p.danger ? 'danger' : 'primary'}
            disabled={busy}
            onClick={async () => {
              setBusy(true);
              try {
                await p.onConfirm();
              } finally {
                setBusy(false);
                dialog.current?.close();
              }
            }}
          >
            {p.confirmLabel ?? p.label}
          </button>
        </div>
      </dialog>
    </>
  );
}
