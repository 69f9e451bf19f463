/**
 * Form controls with their label, hint and error text. A control with an error is marked
 * aria-invalid and described by the error, so a screen reader reads the 422's words at the field.
 */
import { useId } from './use-id';

/** The error text under a control (`id` lets the control point at it). */
function FieldError({ id, error }: { id?: string; error?: string }) {
  return error ? (
    <small id={id} class="field-error">
      {error}
    </small>
  ) : null;
}

interface FieldProps {
  label: string;
  name: string;
  value: string;
  onInput(value: string): void;
  type?: string;
  error?: string;
  hint?: string;
  required?: boolean;
  autocomplete?: string;
  placeholder?: string;
  multiline?: boolean;
  readOnly?: boolean;
}

export function Field(p: FieldProps) {
  const id = useId();
  const described = [p.hint ? `${id}-hint` : '', p.error ? `${id}-err` : ''].filter(Boolean).join(' ') || undefined;
  const common = {
    id,
    name: p.name,
    value: p.value,
    required: p.required,
    readOnly: p.readOnly,
    placeholder: p.placeholder,
    'aria-invalid': p.error ? ('true' as const) : undefined,
    'aria-describedby': described,
    onInput: (e: Event) => p.onInput((e.currentTarget as HTMLInputElement | HTMLTextAreaElement).value),
  };
  return (
    <div class={`field${p.error ? ' invalid' : ''}`}>
      <label for={id}>
        {p.label}
        {p.required ? <span aria-hidden="true"> *</span> : null}
      </label>
      {p.multiline ? <textarea rows={3} {...common} /> : <input type={(p.type ?? 'text') as 'text'} autocomplete={p.autocomplete ?? 'off'} {...common} />}
      {p.hint ? (
        <small id={`${id}-hint`} class="hint">
          {p.hint}
        </small>
      ) : null}
      <FieldError id={`${id}-err`} error={p.error} />
    </div>
  );
}

export function Select(p: { label: string; name: string; value: string; options: Array<[string, string]>; onChange(v: string): void; error?: string }) {
  const id = useId();
  return (
    <div class={`field${p.error ? ' invalid' : ''}`}>
      <label for={id}>{p.label}</label>
      <select id={id} name={p.name} value={p.value} aria-invalid={p.error ? 'true' : undefined} aria-describedby={p.error ? `${id}-err` : undefined} onChange={(e) => p.onChange(e.currentTarget.value)}>
        {p.options.map(([v, l]) => (
          <option value={v} key={v}>
            {l}
          </option>
        ))}
      </select>
      <FieldError id={`${id}-err`} error={p.error} />
    </div>
  );
}

export function Checkbox(p: { label: string; name: string; checked: boolean; onChange(v: boolean): void; error?: string }) {
  const id = useId();
  return (
    <div class={`field check${p.error ? ' invalid' : ''}`}>
      <input type="checkbox" id={id} name={p.name} checked={p.checked} onChange={(e) => p.onChange(e.currentTarget.checked)} />
      <label for={id}>{p.label}</label>
      <FieldError error={p.error} />
    </div>
  );
}
