/**
 * JSON from outside with a bounded nesting depth. V8's JSON.parse copes with any depth, but the
 * value is later walked recursively (JSON.stringify when stored, schema validation), which throws
 * RangeError past a few thousand levels: a 200,000-level `jwks` answered 500. The depth is counted
 * in one pass over the text, before parsing, so a deep document costs no more than its size.
 */
export const MAX_JSON_DEPTH = 64;

export class JsonTooDeep extends Error {
  /** The top-level member whose value nests too deep (undefined for a top-level array). */
  constructor(
    readonly limit: number,
    readonly member?: string,
  ) {
    super(`JSON nested deeper than ${limit} levels`);
    this.name = 'JsonTooDeep';
  }
}

interface DepthScan {
  /** The deepest nesting seen (stops counting once past `stopAbove`). */
  depth: number;
  /** The top-level member being read when the scan stopped, when the document is an object. */
  member: string | undefined;
}

/**
 * The one pass over JSON text: nesting depth, brackets inside strings ignored, stopping once past
 * `stopAbove`. It notes the top-level member names of an object document as it goes, so a
 * too-deep body can be refused naming its field without a second scan.
 */
function scanDepth(text: string, stopAbove: number): DepthScan {
  let depth = 0;
  let max = 0;
  let inString = false;
  let stringStart = -1;
  let member: string | undefined;
  let topLevelArray = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) {
        inString = false;
        // A string directly inside the top-level object and followed by ':' is a member name.
        if (depth === 1 && !topLevelArray) {
          let j = i + 1;
          while (j < text.length && /\s/.test(text[j]!)) j++;
          if (text[j] === ':') member = memberName(text.slice(stringStart, i + 1));
        }
      }
    } else if (c === 0x22) {
      inString = true;
      stringStart = i;
    } else if (c === 0x7b || c === 0x5b) {
      if (depth === 0) topLevelArray = c === 0x5b;
      if (++depth > max) {
        max = depth;
        if (max > stopAbove) break;
      }
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return { depth: max, member: topLevelArray ? undefined : member };
}

function memberName(literal: string): string | undefined {
  try {
    return JSON.parse(literal) as string;
  } catch {
    return undefined;
  }
}

/** The deepest nesting of objects and arrays in `text` (brackets inside strings do not count). */
export function jsonDepth(text: string, stopAbove = Infinity): number {
  return scanDepth(text, stopAbove).depth;
}

/** JSON.parse that throws JsonTooDeep past `maxDepth` and SyntaxError on malformed text. */
export function parseJson(text: string, maxDepth = MAX_JSON_DEPTH): unknown {
  const scan = scanDepth(text, maxDepth);
  if (scan.depth > maxDepth) throw new JsonTooDeep(maxDepth, scan.member);
  return JSON.parse(text) as unknown;
}
