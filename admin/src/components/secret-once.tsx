/** A secret shown once, with a copy button. */
import { useState } from 'preact/hooks';
import { t } from '../i18n';
import { useId } from './use-id';

export function SecretOnce({ label, value }: { label: string; value: string }) {
  const [copied, setCopied] = useState(false);
  const id = useId();
  return (
    <div class="secret" role="region" aria-label={label}>
      <label for={id}>{label}</label>
      <div class="secret-row">
        <input id={id} readOnly value={value} class="mono" onFocus={(e) => e.currentTarget.select()} />
        <button
          type="button"
          onClick={async () => {
            try {
              await navigator.clipboard.writeText(value);
              setCopied(true);
            } catch {
              document.getElementById(id)?.focus();
            }
          }}
        >
          {copied ? t('copied') : t('copy')}
        </button>
      </div>
      <p class="hint">{t('secret.once')}</p>
    </div>
  );
}
