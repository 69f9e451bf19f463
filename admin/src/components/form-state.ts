/** The values of a form in one state object, and the props binding a text field to one of them. */
import { useState } from 'preact/hooks';

type TextKeys<F> = { [K in keyof F]: F[K] extends string ? K : never }[keyof F] & string;

export function useFormState<F extends object>(initial: F | (() => F)) {
  const [values, setValues] = useState<F>(initial);
  const set = <K extends keyof F>(k: K, v: F[K]) => setValues((s) => ({ ...s, [k]: v }));
  /** name, value, onInput and the 422 error of the text field for `k` (spread into <Field>). */
  const text = <K extends TextKeys<F>>(k: K, fieldError: (name: string) => string | undefined) => ({
    name: k,
    value: values[k] as string,
    onInput: (v: string) => set(k, v as F[K]),
    error: fieldError(k),
  });
  return { values, set, setValues, text };
}
