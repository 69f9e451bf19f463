/** The Edit button of a detail page: shows or hides the page's form (aria-expanded says which). */
import { t } from '../i18n';

export function EditToggle({ editing, onToggle }: { editing: boolean; onToggle(editing: boolean): void }) {
  return (
    <button type="button" onClick={() => onToggle(!editing)} aria-expanded={editing}>
      {t('edit')}
    </button>
  );
}
