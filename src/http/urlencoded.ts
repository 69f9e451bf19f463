/**
 * Bounded parsing of application/x-www-form-urlencoded text. A body within the size limit can still
 * hold tens of thousands of parameters; the count is taken in one pass over the text before
 * anything is built, so the work per request stays linear and small. No OAuth or OIDC request needs
 * more than a few dozen parameters; oidc-provider itself reads at most 1000 (node:querystring).
 */
export const MAX_FORM_PARAMETERS = 1000;

export class TooManyParameters extends Error {
  constructor(readonly limit: number) {
    super(`a form may hold at most ${limit} parameters`);
    this.name = 'TooManyParameters';
  }
}

/** Number of `&`-separated parts (empty parts included: an upper bound of the parameters). */
export function countParameters(text: string): number {
  if (!text) return 0;
  let n = 1;
  for (let i = text.indexOf('&'); i !== -1; i = text.indexOf('&', i + 1)) n++;
  return n;
}

/** Parses form text; throws TooManyParameters past `limit` before parsing. */
export function parseUrlEncoded(text: string, limit = MAX_FORM_PARAMETERS): URLSearchParams {
  if (countParameters(text) > limit) throw new TooManyParameters(limit);
  return new URLSearchParams(text);
}

/**
 * The first name present more than once among `form`'s parameters, other than those in `repeatable`;
 * one pass with a set (looking each name up with getAll() would be quadratic in the count).
 */
export function firstRepeated(form: URLSearchParams, repeatable: ReadonlySet<string> = new Set()): string | undefined {
  const seen = new Set<string>();
  for (const key of form.keys()) {
    if (repeatable.has(key)) continue;
    if (seen.has(key)) return key;
    seen.add(key);
  }
  return undefined;
}

/**
 * A request body's form, parsed once per body (issue 17): on the token and introspection endpoints
 * the OIDC throttle (which client is it?) and then the endpoint read the same body. Keyed by the
 * body's Buffer, so a request rebuilt with another body is parsed afresh. The form is shared:
 * callers read it and never modify it. Throws TooManyParameters like parseUrlEncoded, every time.
 */
const bodyForms = new WeakMap<Buffer, URLSearchParams | TooManyParameters>();
export function bodyForm(body: Buffer): URLSearchParams {
  let form = bodyForms.get(body);
  if (form === undefined) {
    try {
      form = parseUrlEncoded(body.toString('utf8'));
    } catch (err) {
      if (!(err instanceof TooManyParameters)) throw err;
      form = err;
    }
    bodyForms.set(body, form);
  }
  if (form instanceof TooManyParameters) throw form;
  return form;
}
