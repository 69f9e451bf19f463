/**
 * JSON from outside with a bounded nesting depth. V8's JSON.parse copes with any depth, but the
 * value is later walked recursively (JSON.stringify when stored, schema validation), which throws
 * RangeError past a few thousand levels: a 200,000-level `jwks` answered 500. The depth is counted
 * in one pass over the text, before parsing, so a deep document costs no more than its size.
 */
export const MAX_JSON_DEPTH = 64;

export class JsonTooDeep extends Error {
  constructor(readonly limit: number) {
    super(`JSON nested deeper than ${limit} levels`);
    this.name = 'JsonTooDeep';
  }
}

/** The deepest nesting of objects and arrays in `text` (brackets inside strings do not count). */
export function jsonDepth(text: string, stopAbove = Infinity): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) {
        max = depth;
        if (max > stopAbove) return max;
      }
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return max;
}

/**
 * The top-level member whose value nests deeper than `limit` in an object document, or undefined
 * (a top-level array, or no member too deep): so a too-deep body is refused naming its field.
 * One pass like jsonDepth; the member name is decoded from its JSON string literal.
 */
export function tooDeepMember(text: string, limit = MAX_JSON_DEPTH): string | undefined {
  let depth = 0;
  let inString = false;
  let stringStart = -1;
  let lastKey: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) {
        inString = false;
        // A string directly inside the top-level object followed by ':' is a member name.
        if (depth === 1) {
          let j = i + 1;
          while (j < text.length && /\s/.test(text[j]!)) j++;
          if (text[j] === ':') {
            try {
              lastKey = JSON.parse(text.slice(stringStart, i + 1)) as string;
            } catch {
              lastKey = undefined;
            }
          }
        }
      }
    } else if (c === 0x22) {
      inString = true;
      stringStart = i;
    } else if (c === 0x7b || c === 0x5b) {
      if (depth === 0 && c === 0x5b) return undefined;
      if (++depth > limit) return lastKey;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return undefined;
}

/** JSON.parse that throws JsonTooDeep past `maxDepth` and SyntaxError on malformed text. */
export function parseJson(text: string, maxDepth = MAX_JSON_DEPTH): unknown {
  if (jsonDepth(text, maxDepth) > maxDepth) throw new JsonTooDeep(maxDepth);
  return JSON.parse(text) as unknown;
}
